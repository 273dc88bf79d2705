"""The options of a text run and of a model's run, each declared once, and the one rule of which options a real
model may meet.

`RUN` and `MODEL` are one table (`OPTIONS`): an `Option` per row holds the option's keyword, what it takes (its
`Kind`), its default, how the command line writes it and its help, the registry whose names it offers, and which
API functions and which `attn` commands take it. From it come the keywords' type checks (api/keywords.py's
`KEYWORDS`) and the commands' Typer options (cli/options.py's `Run` and `row`). A text run's options are handed
to a function as one bundle: `checked` puts the rows of `RUN` in place of its `**run`, so that `help(attncli.show)`
and `inspect.signature` list each with its default; a model's options, which a body reads one by one, stay in the
function's own signature, with the row's default (tests/api/test_options.py holds them to it). A new option is one
row here (and, for a text run's, its use in pipeline/config.py's `RunConfig`). Its range, if it has one, is an
entry of pipeline/ranges.py's `RANGES` under the row's name (`Option.range`), written once and checked by the one
`check_range` where the value is used: the pipeline guards a config whoever builds it, for the command line and the
API alike, and the table stays light enough for `attn show -h` (ranges.py is plain data, no NumPy).

    >>> [o.name for o in RUN if o.default is None]
    ['dk', 'dv', 'd_a', 'mask', 'context', 'rank', 'features']

`check_model` is the rule a model's options follow, on the command line (cli/model.py's `check_options`, which
names the options as they were written) and in the API (`checked`, which names the keywords): an option given
that a model has its own of (its tokenizer, widths, weights) is refused, and so is an option that only a model
has a use for given without one. Given means written on the command line, or passed as a keyword that is not
None or False: `heads=1` with `model=` is refused as `--heads 1 --model M` is.

    >>> check_model("show", True, {"heads": 1, "precision": 3}, API)
    Traceback (most recent call last):
    attncli.errors.ConfigError: model= uses the model's own tokenizer, embeddings and weights: drop heads=
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from attncli.api.kinds import BOOL, GENERATE, INT, MASK, NUMBER, PATH, STR, Kind
from attncli.api.kinds import MODEL as MODEL_KIND
from attncli.errors import ConfigError
from attncli.pipeline.ranges import RANGES, Range
from attncli.pipeline.read import ERRORS, MAX_TOKENS


@dataclass(frozen=True)
class Option:
    """One option: `name` is its keyword, `flags` how the command line writes it, `type` the value the command line
    reads (None allowed where the default is None), `annotation` the API's when it takes more (a list of masks);
    `choices` the names it is one of (a registry's keys, read only when a command offering it is built);
    `functions` the API functions and `commands` the `attn` commands that take it (space-separated; GROUP: every
    command that takes its group, cli/options.py's Source or Out); `key` names the row where another row has the
    same keyword with another meaning (compute's --seed, steps' --query; default `name`)."""

    name: str
    kind: Kind
    default: Any
    flags: tuple[str, ...]
    help: str
    functions: str
    commands: str
    type: Any = str
    choices: Callable[[], Iterable[str]] | None = None
    show_default: bool = True
    annotation: str | None = None
    key: str = ""

    @property
    def id(self) -> str:
        """The row's name in the table: its keyword, or its `key` where two rows share a keyword."""
        return self.key or self.name

    @property
    def range(self) -> Range | None:
        """The values it takes, when it is a number with bounds (pipeline/ranges.py)."""
        return RANGES.get(self.id)

    def signature(self) -> inspect.Parameter:
        """The option as a keyword-only parameter of an API function, with its default."""
        named = self.annotation or self.type.__name__ + (" | None" if self.default is None else "")
        return inspect.Parameter(self.name, inspect.Parameter.KEYWORD_ONLY, default=self.default, annotation=named)


def _variants() -> Iterable[str]:
    from attncli.core.variants import VARIANTS  # late: start-up (a registry loads only when its option is built)

    return VARIANTS


def _positional() -> Iterable[str]:
    from attncli.pipeline.embed import POSITIONAL  # late: start-up (a registry loads only when its option is built)

    return POSITIONAL


def _projections() -> Iterable[str]:
    from attncli.pipeline.config import PROJECTIONS  # late: start-up (a registry loads only when its option is built)

    return PROJECTIONS


MODEL_CONTEXT = (  # a model's --context (heads' own row too, api/own.py)
    "With an encoder --model: the second text of a sentence pair ([CLS] TEXT [SEP] CONTEXT [SEP]); with an "
    "encoder–decoder --model: the source (see --part)."
)
RUNS = "show steps view compare"  # the API functions of a text run
COMMANDS = RUNS + " explore"  # and the commands (explore runs show's)
RUN: tuple[Option, ...] = (
    Option("tokenizer", STR, "word", ("-t", "--tokenizer"), "char, word, bpe, or a path to a tokenizer.json.",
           "show steps view tokens", "show steps view explore tokens"),
    Option("variant", STR, "scaled", ("-v", "--variant"), "Score function (see `attn variants`).",
           "show steps view compute", "show steps view explore compute", choices=_variants),
    Option("heads", INT, 1, ("--heads",), "Number of heads.", RUNS, COMMANDS, int),
    Option("dim", INT, 16, ("-d", "--dim"), "Embedding width d_model.", RUNS, COMMANDS, int),
    Option("dk", INT, None, ("--dk",), "Per-head query/key width (default dim/heads).", RUNS, COMMANDS, int),
    Option("dv", INT, None, ("--dv",), "Per-head value width (default dim/heads).", RUNS, COMMANDS, int),
    Option("d_a", INT, None, ("--d-a",), "Hidden width of the additive variant (default d_k).", RUNS + " compute",
           COMMANDS + " compute", int),
    Option("mask", MASK, None, ("--mask",), "causal, window:W, topk:K, comma-separated.", RUNS,
           COMMANDS + " compute", annotation="str | Sequence[str] | None"),  # compute's takes one string: its own
    Option("positional", STR, "none", ("--positional",), "Positional encoding added to the embeddings.", RUNS,
           COMMANDS, choices=_positional),
    Option("projection", STR, "random", ("--projection",),
           "random W_Q, W_K, W_V, W_O (seeded), or identity: Q = K = V = X.", RUNS, COMMANDS, choices=_projections),
    Option("context", STR, None, ("--context",),
           "Cross-attention: keys and values from this text. " + MODEL_CONTEXT,
           "show steps view", "show steps view explore"),
    Option("seed", INT, 0, ("--seed",), "Seed of embeddings and weights.", RUNS + " compute", COMMANDS, int),
    Option("temperature", NUMBER, 1.0, ("--temperature",), "Scores are divided by T.", RUNS + " compute",
           COMMANDS + " compute", float),
    Option("rank", INT, None, ("--rank",), "-v linformer: the number of key groups R (default 8).",
           RUNS + " compute", COMMANDS + " compute", int, show_default=False),
    Option("features", INT, None, ("--features",), "-v performer: the number of random features F (default 64).",
           RUNS + " compute", COMMANDS + " compute", int, show_default=False),
)  # fmt: skip
DEFAULTS: dict[str, Any] = {o.name: o.default for o in RUN}


def _parts() -> Iterable[str]:
    from attncli.core.parts import PARTS  # late: start-up (only when a command taking --part is built)

    return PARTS


# The options of a model's run: each function names them in its own signature, with the row's default (a test
# checks that they agree), because its body reads them one by one; their checks and the commands' options are
# made from the rows. (heads, lens, ablate ... take a `model` they cannot run without, and their own --model.)
MODEL: tuple[Option, ...] = (
    Option("model", MODEL_KIND, None, ("--model",),
           "A Hugging Face model folder (config.json, model.safetensors, tokenizer.json), a GGUF file, or a model "
           "name found offline: in the local Hugging Face cache, an Ollama NAME:TAG, an LM Studio ORG/NAME "
           "(BERT, DistilBERT, RoBERTa, XLM-R, ELECTRA, ALBERT, GPT-2, Llama, Mistral, Qwen, "
           "Gemma, Pythia; BART, mBART, T5, Marian): "
           "its own tokens and real, trained attention heads.",
           "show steps view tokens", "show steps view explore tokens", show_default=False),
    Option("chat", BOOL, False, ("--chat",),
           "With --model: TEXT as the user's message of a chat in the model's own chat template (GGUF "
           "tokenizer.chat_template, tokenizer_config.json or chat_template.jinja), ending where the assistant "
           "answers (--generate continues as the assistant); its tokens marked system, user, assistant or template.",
           "show steps view tokens heads lens ablate", "show steps view tokens heads lens ablate", bool),
    Option("system", STR, None, ("--system",),
           "With --chat: the system message before TEXT (default: none, or the template's own when it writes "
           "one, as SmolLM2's does).",
           "show steps view tokens heads lens ablate", "show steps view tokens heads lens ablate",
           show_default=False),
    Option("layer", INT, None, ("--layer",),
           "With --model: the layer (default the last; negative counts from the end).",
           "show steps view compare rollout", "show steps view explore compare", int, show_default=False),
    Option("head", INT, None, ("--head",),
           "One head (default every head, side by side as the width allows); with --model the model's head number; "
           "negative counts from the end.", RUNS, COMMANDS, int, show_default=False),
    Option("part", STR, None, ("--part",),
           "With an encoder–decoder --model (BART, mBART, T5, Marian): cross (default; TEXT is the target, "
           "--context the source; an alignment of target rows over source columns), decoder (its causal "
           "self-attention) or encoder (the source's self-attention: --context, or TEXT without it).",
           "show steps view heads rollout", "show steps view explore heads", choices=_parts, show_default=False),
    Option("generate", GENERATE, None, ("--generate",),
           "With a decoder --model: the model writes N tokens after TEXT (greedy, the most probable each time, "
           "with a key/value cache; it stops early only at its end-of-sequence token), and the attention shown is "
           "of the whole sequence, TEXT and what it wrote (marked ›); -f json adds generated: its ids and text. "
           "With an encoder–decoder and --context SOURCE: it writes the target from the source, after TEXT (the "
           "target's beginning; '' to start from the decoder start token alone).",
           "show steps view heads", "show steps view explore heads", int, show_default=False),
)  # fmt: skip


def _errors() -> Iterable[str]:
    return ERRORS


def _colors() -> Iterable[str]:
    return ("auto", "always", "never")


def _themes() -> Iterable[str]:
    from attncli.io.formats import THEMES  # late: start-up (a registry loads only when its option is built)

    return THEMES


GROUP = "*"  # a row of Source or Out: every command that takes the group has it
TABLES = "show show_lines steps view compute heads lens ablate rollout corpus patch dla knockout"  # --precision's
# Where the text comes from (cli/options.py's Source; the text itself is an argument) and where the result goes (Out).
SOURCE: tuple[Option, ...] = (
    Option("file", PATH, None, ("--file",),
           "Read the text from this file.",
           "", GROUP),
    Option("errors", STR, "strict", ("--errors",),
           "Input that is not UTF-8: strict (an error naming the byte offset) or replace (read as U+FFFD, with a "
           "warning).",
           "", GROUP, choices=_errors),
    Option("max_tokens", INT, MAX_TOKENS, ("--max-tokens",),
           "Refuse a text (or context) of more tokens than this, before its n² matrices are made; the memory "
           "estimate of the run is limited too (ATTN_MAX_MEMORY, default 2G).",
           RUNS + " tokens", GROUP, int),
    Option("keep_newline", BOOL, False, ("--keep-newline",),
           "Keep the newline that ends stdin or --file as part of the text (a token).",
           "", GROUP, bool),
)  # fmt: skip
OUT: tuple[Option, ...] = (
    Option("fmt", STR, None, ("-f", "--format"),
           "Output format (default table, or from the -o extension).",
           "", GROUP),
    Option("output", PATH, None, ("-o", "--output"),
           "Write to this file (atomically).",
           "view", GROUP),
    Option("precision", INT, None, ("--precision",),
           "Digits: tables default 2; formats exact unless given.",
           TABLES, GROUP, int),
    Option("color", STR, "auto", ("--color",),
           "Colour in tables: auto (none in a pipe, or with NO_COLOR), always, never.",
           "", GROUP, choices=_colors),
    Option("save_svg", PATH, None, ("--save-svg",),
           "Also save the table as it was shown, as SVG.",
           "", GROUP),
    Option("save_html", PATH, None, ("--save-html",),
           "Also save the table as it was shown, as HTML.",
           "", GROUP),
    Option("width", INT, None, ("--width",),
           "Columns of the table and of --save-svg/--save-html (default: the terminal's width, 80 in a pipe).",
           "", GROUP, int, show_default=False),
    Option("theme", STR, "light", ("--theme",),
           "Pictures (svg, html): light (for slides and paper) or dark.",
           "", GROUP, choices=_themes),
)  # fmt: skip
OPTIONS = RUN + MODEL + SOURCE + OUT  # every option a text run, a model's run, its text and its output take


def signature(function: Callable[..., Any], name: str) -> inspect.Signature:
    """`function`'s signature with its `**run` replaced by the options of `RUN` that `name` takes, in the table's
    order after the positional parameters (a function without `**run` keeps its own)."""
    own = inspect.signature(function)
    run = [p for p in own.parameters.values() if p.kind is p.VAR_KEYWORD and p.name == "run"]
    if not run:
        return own
    rows = [o.signature() for o in RUN if name in o.functions.split()]
    kept = [p for p in own.parameters.values() if p is not run[0]]
    first = [p for p in kept if p.kind is not p.KEYWORD_ONLY]
    return own.replace(parameters=[*first, *rows, *(p for p in kept if p.kind is p.KEYWORD_ONLY)])


# ---- the options a real model may meet ---------------------------------------------------------------------

MODEL_ONLY = (
    "gguf_file",
    "layer",
    "head",
    "rollout",
    "part",
    "generate",
    "top_k",
    "top_p",
    "lens",
    "ablate",
    "chat",
    "system",
    "patch",
    "dla",
    "knockout",
)  # meaningless without a model (but a text run's `show --head` takes its own: BOTH)
WITH_MODEL = (
    "text",
    "file",
    "fmt",
    "output",
    "precision",
    "color",
    "model",
    *MODEL_ONLY,  # always fine with it
    "save_svg",
    "save_html",
    "width",
    "theme",
    "keep_newline",
    "limits",
)
SAMPLING = ("temperature", "seed")  # text-run options that, with --model --generate, mean the sampling's
DRAWN = ("contrib", "scale", "drop_sink")  # how show's table draws the weights
CAUSAL = ("patch", "corrupt", "contrast", "what", "noising", "dla", "knockout", "span", "to", "window")
KEEP: dict[str, tuple[str, ...] | None] = {  # a command's own options that still apply with a model (None: all)
    "show": ("stats", "mean_heads", "query", "matrix_only", "raw_tokens", "context", "lines", *DRAWN),
    "steps": ("query", "context", "contrib"),
    "view": ("context", "target", "mode", *CAUSAL, *DRAWN),
    "explore": ("mean_heads", "query", "context", *DRAWN),
    "tokens": (),
    "compare": None,  # the other options shape the runs the model is compared with
}
BOTH = {"show": ("head",), "view": ("head",), "explore": ("head",)}  # model options a text run takes too


@dataclass(frozen=True)
class Words:
    """How a surface writes an option (`name`), the model (`model`, and `needed` where one is missing) and a list
    of options missing their model (`joined`)."""

    name: Callable[[str], str]
    model: str
    needed: str
    joined: str


API = Words(lambda name: f"{name}=", "model=", "model=", " and ")


def check_model(command: str, model: bool, given: dict[str, Any], words: Words, generate: bool | None = None) -> None:
    """With a `model`, no option of `given` (name -> value, in the order given) that the model has its own of;
    without one, none that only a model has a use for: ConfigError naming them in `words`. `generate`: whether
    --generate N was given, where --temperature and --seed would then be its sampling's (None: they never are).
    The default variant, given, is what the models do (scaled dot product): not refused."""
    if not model:
        lonely = [n for n in given if n in MODEL_ONLY and n not in BOTH.get(command, ())]
        if lonely:
            listed = words.joined.join(map(words.name, lonely))
            raise ConfigError(f"{listed} {'needs' if len(lonely) == 1 else 'need'} {words.needed}")
        return
    keep = KEEP[command]
    if keep is None:
        return
    fine = WITH_MODEL + keep + (SAMPLING if generate else ())
    clash = [n for n in given if n not in fine and not (n == "variant" and given[n] == DEFAULTS["variant"])]
    if clash:
        sampling = [n for n in clash if n in SAMPLING] if generate is False else []
        note = f" ({', '.join(map(words.name, sampling))} {'is' if len(sampling) == 1 else 'are'} for sampling with "
        raise ConfigError(
            f"{words.model} uses the model's own tokenizer, embeddings and weights: drop "
            + ", ".join(map(words.name, clash))
            + (note + "--generate N)") * bool(sampling)
        )


def computed(contrib: str) -> bool:
    """Whether `--contrib contrib` asks for maps beyond the weights, as the registry of measures says
    (core/measures.py's `computed`): what a command checks its other options against before it runs."""
    from attncli.core.measures import computed as beyond_weights  # late: start-up (the measures: only with a run)

    return beyond_weights(contrib)
