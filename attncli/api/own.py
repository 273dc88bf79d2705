"""Each command's own options, declared once as the table's rows are (api/options.py's `Option`): the sibling of
`OPTIONS` for what one command or a few take (show's --stats, view's --lens, ablate's --rank-by, ...). A row's
`functions` are the API functions that take it by the same keyword (its type check, api/keywords.py's `KEYWORDS`, is
made from the row; each names it in its own signature with the row's default or as required, which
tests/api/test_options.py holds them to), its `commands` the `attn` commands whose Typer option is made from it
(cli/options.py's `row`). Where a keyword means another thing in another command, it is another row with its own
`key`: steps' --query (a per-pair term's slice) is not show's (one query's bars), compute's --seed seeds only the
learned variants' parameters, compare's --model may be given several times, and --generate's sampling --top-k is
not lens's, and heads', lens's and ablate's required --model each say what model they take. `EVERY` is the whole
table, its rows' ids (`Option.id`) one each.

    >>> [o.id for o in OWN if o.name in ("query", "seed", "top_k")]
    ['query', 'steps_query', 'compute_seed', 'sample_top_k', 'top_k']
"""

from __future__ import annotations

from collections.abc import Iterable

from attncli.api.kinds import ARRAY, BOOL, INT, INT_OR_STR, MODEL, MODELS, NUMBER, PAIRS, PATH, PATHS, STR
from attncli.api.options import MODEL_CONTEXT, OPTIONS, Option
from attncli.core.statistics import CORPUS_STATISTICS, DETECTORS, STAT_CHOICES  # plain data, no NumPy

MODES = ("zero", "mean")  # attncli.models.interpret.ablate's MODES (tests/cli/test_ablate.py checks they agree)
RANK_BY = ("logprob", "logit", "logit-diff")  # attncli.models.interpret.ablate's RANKINGS (likewise)
WHATS = ("resid", "heads", "attn-out", "mlp-out")  # attncli.models.interpret.patch's WHAT (likewise)


def _dtypes() -> Iterable[str]:
    from attncli.pipeline.config import DTYPES  # late: start-up (a registry loads only when its option is built)

    return DTYPES


def _measures() -> Iterable[str]:
    from attncli.core.measures import CONTRIBUTIONS  # late: start-up (only when a command taking --contrib is built)

    return CONTRIBUTIONS


def _scales() -> Iterable[str]:
    from attncli.render.style import SCALES  # late: start-up (only when a command taking --scale is built)

    return SCALES


def _modes() -> Iterable[str]:
    return MODES


def _rankings() -> Iterable[str]:
    return RANK_BY


def _whats() -> Iterable[str]:
    return WHATS


def _stats() -> Iterable[str]:
    return STAT_CHOICES


OWN: tuple[Option, ...] = (
    Option("lines", BOOL, False, ("--lines",),
           "Each line is its own text: JSONL (or -f csv|table), one result per line, in order, as it goes; blank "
           "lines are skipped.",
           "", "show", bool),
    Option("stats", BOOL, False, ("--stats",),
           'Head statistics under the matrix (always for up to 12 tokens); with -f json they go under "stats".',
           "show show_lines", "show", bool),
    Option("no_weights", BOOL, False, ("--no-weights",),
           "Outputs only, never the n × n weights (long inputs): -v scaled, dot, cosine, multiplicative (--mask "
           "causal at most), linformer or performer (no mask); JSON has null scores and weights.",
           "show compute", "show compute", bool),
    Option("dtype", STR, "float64", ("--dtype",),
           "float64 (exact, the default) or float32 (Q, K, V, scores, weights, outputs: half the memory).",
           "show compute", "show explore compute", choices=_dtypes),
    Option("mean_heads", BOOL, False, ("--mean-heads",),
           "Draw the mean of the heads' weights (table only).",
           "show", "show explore", bool),
    Option("query", INT_OR_STR, None, ("--query",),
           "One query's weights as bars with their numbers: its index or its token (table only).",
           "show", "show explore", show_default=False),
    Option("query", INT_OR_STR, "0", ("--query",),
           "Which query's slice to show of a per-pair term such as additive's tanh(W₁q + W₂k + b): its index or "
           "its token (as text, with or without its space, or as the vocabulary writes it).",
           "steps", "steps", key="steps_query"),
    Option("matrix_only", BOOL, False, ("--matrix-only",),
           "Only the attention matrix: a picture for a slide or a paper.",
           "show", "show", bool),
    Option("raw_tokens", BOOL, False, ("--raw-tokens",),
           "Label the tokens as the vocabulary writes them (ĠParis, ▁Paris, ##s), not as their text (␣Paris).",
           "show", "show", bool),
    Option("tokenizers", STR, None, ("--tokenizers",),
           "Comma-separated: char, word, bpe or paths to tokenizer.json files (default char,word,bpe; with several"
           " --model, none unless given).",
           "compare", "compare", show_default=False),
    Option("variants", STR, "scaled", ("--variants",),
           "Comma-separated variant names (see attn variants).",
           "compare", "compare"),
    Option("model", MODELS, None, ("--model",),
           "A Hugging Face model folder, a GGUF file, or a model name found offline (the Hugging Face cache, "
           "Ollama NAME:TAG, LM Studio ORG/NAME): its layer (--layer, --head) as one more column. Given more than "
           "once: the models' own tokenizers side by side (with --tokenizers' when given): tokens, characters and "
           "bytes per token, unknown and byte pieces; -f json adds the ids.",
           "compare", "compare", list[str], show_default=False, key="compare_model"),
    Option("input_path", PATH, None, ("-i", "--input"),
           'JSON file {"q": [[...]], "k": [[...]], "v": [[...]], "params": {...}}; k, v, params optional; - or '
           "nothing reads stdin.",
           "", "compute"),
    Option("q", ARRAY, None, ("--q",),
           "Queries [m, d_q] as a .npy file.",
           "compute", "compute"),  # the API's q=, k=, v= take the arrays themselves
    Option("k", ARRAY, None, ("--k",),
           "Keys [n, d_k] as a .npy file (default: q).",
           "compute", "compute"),
    Option("v", ARRAY, None, ("--v",),
           "Values [n, d_v] as a .npy file (default: k).",
           "compute", "compute"),
    Option("seed", INT, 0, ("--seed",),
           "Seed of the learned variants' parameters, unless the JSON gives params.",
           "", "compute", int, key="compute_seed"),
    Option("gguf_file", STR, None, ("--gguf-file",),
           "With --model: which GGUF file of a folder holding several (a Hugging Face cache repo, LM Studio's).",
           "", "show steps view explore tokens compare heads", show_default=False),
    Option("rollout", BOOL, False, ("--rollout",),
           "With --model: attention rollout (Abnar & Zuidema 2020), token to token through layers 0..--layer.",
           "", "show", bool),
    Option("contrib", STR, "weights", ("--contrib",),
           "With --model: what the matrices measure: weights (the attention weights), norm (‖α f(x)‖, Kobayashi et"
           " al. 2020), alti (through the residual and the layer norm, with its rollout; Ferrando et al. 2022) or "
           'value-zeroing (Mohebbi et al. 2023); -f json adds them under "contributions".',
           "show steps view heads", "show steps view explore heads", choices=_measures),
    Option("scale", STR, "sqrt", ("--scale",),
           "How the weights' colours are placed on the blue scale: sqrt (√w) or log (log10 w from 10⁻⁴: a "
           "decoder's small weights apart beside its attention sink); the numbers stay the weights. Table, svg and"
           " the page (attn view, which switches it).",
           "show view", "show view explore", choices=_scales),
    Option("drop_sink", BOOL, False, ("--drop-sink",),
           "Draw each head's weights without key 0 (the first token, a decoder's attention sink), each row "
           "renormalized over the keys left (table, svg and the page, which switches it; attn show -f json has the"
           " weights).",
           "show view", "show view explore", bool),
    Option("workers", INT, None, ("--workers",),
           "With --lines: worker processes (default: the cores, at most 4).",
           "corpus show_lines", "show heads", int, show_default=False),
    Option("top_k", INT, None, ("--top-k",),
           "With --generate: sample each token from the K most probable (with --temperature, --top-p, --seed; "
           "NumPy's random stream, so other tokens than torch's with the same seed).",
           "", "show steps view explore", int, show_default=False, key="sample_top_k"),
    Option("top_p", NUMBER, None, ("--top-p",),
           "With --generate: sample each token from the most probable whose probabilities sum to P (nucleus).",
           "", "show steps view explore", float, show_default=False),
    Option("target", STR, None, ("--target",),
           "The token watched: its text, with or without its leading space (' Paris', Paris), or as the vocabulary"
           " writes it (ĠParis); where it may be left out (ablate, view --ablate), the model's own next token.",
           "view ablate patch dla", "view ablate patch dla", show_default=False),
    Option("contrast", STR, None, ("--contrast",),
           "A second token, named as --target is: m = logit(target) − logit(contrast) (patch, dla; ablate reports "
           "it, and ranks by it unless --rank-by says otherwise).",
           "patch dla ablate view", "view ablate patch dla", show_default=False),
    Option("corrupt", STR, None, ("--corrupt",),
           "The corrupt text of the patching: as many tokens as TEXT, the clean one.",
           "patch view", "view patch", show_default=False),
    Option("span", STR, None, ("--from",),
           "The keys the knockout blocks: token positions (2-4, or 0,5) or a part of the text (France: the tokens "
           "covering it).",
           "knockout view", "view knockout", show_default=False),
    Option("rank_by", STR, None, ("--rank-by",),
           "What ranks the heads: the change in the target's log-probability (default), its logit, or the logit "
           "difference target − contrast (default with --contrast).",
           "ablate", "ablate", choices=_rankings),
    Option("mode", STR, "zero", ("--mode",),
           "zero: the head's output set to zero; mean: to its mean over the text's positions.",
           "view ablate", "view ablate", choices=_modes),
    Option("lens", BOOL, False, ("--lens",),
           "With a decoder --model: add the logit lens view (attn lens: every layer's top next tokens at every "
           "position, 5 a cell), about (layers + 1) × vocabulary × width multiply-adds a token.",
           "view", "view", bool),
    Option("ablate", BOOL, False, ("--ablate",),
           "With a decoder --model: add the ablation view (attn ablate: every head switched off alone, how it "
           "moves the logit of the next token after TEXT; --target, --mode), about heads × layers / 2 passes.",
           "view", "view", bool),
    Option("model", MODEL, None, ("--model",),
           "A Hugging Face decoder folder or cached model name.",
           "ablate patch dla knockout", "ablate patch dla knockout", show_default=False, key="decoder_model"),
    Option("heads", PAIRS, None, ("--heads",),
           "The heads to switch off, each alone, as LAYER.HEAD separated by commas (0.3,5.1); default every head.",
           "ablate", "ablate", show_default=False, key="ablate_heads"),
    Option("model", MODEL, None, ("--model",),
           "A Hugging Face model folder, a GGUF file, or a model name found offline (the Hugging Face cache, "
           "Ollama NAME:TAG, LM Studio ORG/NAME).",
           "heads rollout corpus", "heads", show_default=False, key="heads_model"),
    Option("context", STR, None, ("--context",),
           MODEL_CONTEXT,
           "heads rollout", "heads", key="model_context"),
    Option("stat", STR, "entropy", ("--stat",),
           "The number in each cell: entropy (bits), max, diagonal, previous (or previous-token), first-token or "
           "broadness; with --part cross (target rows over source columns, where diagonal and previous mean "
           "nothing): entropy, max, diagonality (weight near the proportional diagonal), monotonic (share of "
           "target tokens whose strongest source token does not move left), first-token, last-token or broadness.",
           "heads", "heads", choices=_stats),
    Option("lines", BOOL, False, ("--lines",),
           "Each line of TEXT, - (stdin) or --file is one text of a corpus: the mean and spread over all of them "
           "of each head's statistics and detector scores, streamed in padded batches of texts of similar length "
           "on --workers processes, a progress bar on stderr. Each detector is a mean weight in [0, 1]: "
           + "; ".join(f"{name}: {text}" for name, text in DETECTORS.items())
           + ". Statistics: "
           + "; ".join(f"{name}: {text}" for name, text in CORPUS_STATISTICS.items())
           + ".",
           "", "heads", bool, key="corpus_lines"),
    Option("max_lines", INT, None, ("--max-lines",),
           "With --lines: the first N lines only.",
           "corpus", "heads", int, show_default=False),
    Option("dask", STR, None, ("--dask",),
           "With --lines --file: run on the Dask cluster at this address (pip install 'attncli[dask]'); its "
           "workers read the same file and model paths.",
           "corpus", "heads", show_default=False),
    Option("to", INT, None, ("--to",),
           "The query position whose edges are blocked (default the last; negative counts from the end).",
           "knockout view", "view knockout", int, show_default=False),
    Option("window", INT, None, ("--window",),
           "Consecutive layers blocked at a time (default about a fifth of the layers).",
           "knockout view", "view knockout", int, show_default=False),
    Option("model", MODEL, None, ("--model",),
           "A Hugging Face decoder (or encoder–decoder, with --context) folder or cached model name.",
           "lens", "lens", show_default=False, key="lens_model"),
    Option("context", STR, None, ("--context",),
           "With an encoder–decoder --model: the source; the lens is its decoder's over TEXT, the target (teacher "
           "forcing).",
           "lens", "lens", key="lens_context"),
    Option("top_k", INT, 5, ("--top-k",),
           "How many of the most probable next tokens each row of -f json lists (1-100).",
           "lens", "lens", int),
    Option("path", PATHS, None, ("--path",),
           "Also list the models in DIR (a model folder, GGUF files, model folders one level below); repeatable.",
           "catalog", "models", list[str]),
    Option("what", STR, "resid", ("--what",),
           "resid: the residual stream entering each layer, per position; heads: each head's output; attn-out, "
           "mlp-out: each layer's attention or MLP output, per position.",
           "patch view", "view patch", choices=_whats),
    Option("noising", BOOL, False, ("--noising",),
           "Patch the corrupt run's activation into the clean run (default: the reverse).",
           "patch view", "view patch", bool),
    Option("patch", BOOL, False, ("--patch",),
           "With a decoder --model: add the patching view (attn patch: TEXT clean, --corrupt, --target, "
           "--contrast, --what, --noising), a grid of every activation's normalized score.",
           "view", "view", bool),
    Option("dla", BOOL, False, ("--dla",),
           "With a decoder --model: add the direct logit attribution view (attn dla: --target, --contrast), every "
           "head's, MLP's and the embeddings' share of m, ranked.",
           "view", "view", bool),
    Option("knockout", BOOL, False, ("--knockout",),
           "With a decoder --model: add the knockout view (attn knockout: --from, --to, --window), the change of "
           "the top next token's probability per window of layers.",
           "view", "view", bool),
)  # fmt: skip
EVERY = OPTIONS + OWN
