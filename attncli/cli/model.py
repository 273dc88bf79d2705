"""The `--model DIR` options of the `attn` commands, and which other options they may not meet.

Part of the command line (the commands in cli/commands/ import it; nothing else does). An option that has no
meaning for a real model (its tokenizer, width, heads, variant and weights are its own), or
--layer/--head/--rollout without --model, is a one-line ConfigError (exit 2) naming them.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from attncli.api.options import SAMPLING, Words, check_model
from attncli.cli.options import choice, row
from attncli.errors import ConfigError


def model_value(value: str | list[str] | None) -> str | list[str] | None:
    """--model's callback: a value that is empty or looks like an option is the sign of an unset shell variable
    (`--model $SMOLLM2 --layer 1` with SMOLLM2 empty gives --model the word `--layer`), said before anything else
    reads the command line. A model whose path starts with - is written ./-name."""
    for one in value if isinstance(value, list) else [value]:
        if one is not None and (not one.strip() or one.startswith("-")):
            raise ConfigError(f"--model got {one!r}: is the variable you meant empty?")
    return value


ModelDir = Annotated[str | None, row("model", callback=model_value)]
ModelDirs = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        help="A Hugging Face model folder, a GGUF file, or a model name found offline (the Hugging Face cache, "
        "Ollama NAME:TAG, LM Studio ORG/NAME): its layer (--layer, --head) as one more column. Given more than "
        "once: the models' own tokenizers side by side (with --tokenizers' when given): tokens, characters and "
        "bytes per token, unknown and byte pieces; -f json adds the ids.",
        show_default=False,
        callback=model_value,
    ),
]
Chat = Annotated[bool, row("chat")]
System = Annotated[str | None, row("system")]
GgufFile = Annotated[
    str | None,
    typer.Option(
        "--gguf-file",
        help="With --model: which GGUF file of a folder holding several (a Hugging Face cache repo, LM Studio's).",
        show_default=False,
    ),
]
Layer = Annotated[int | None, row("layer")]
Head = Annotated[int | None, row("head")]
Rollout = Annotated[
    bool,
    typer.Option(
        "--rollout",
        help="With --model: attention rollout (Abnar & Zuidema 2020), token to token through layers 0..--layer.",
    ),
]


def _measures():  # -> the measures of attncli.core.measures
    from attncli.core.measures import CONTRIBUTIONS  # late: start-up (only when a command taking --contrib is built)

    return CONTRIBUTIONS


Contrib = Annotated[
    str,
    choice(
        "--contrib",
        names=_measures,
        help="With --model: what the matrices measure: weights (the attention weights), norm (‖α f(x)‖, Kobayashi "
        "et al. 2020), alti (through the residual and the layer norm, with its rollout; Ferrando et al. 2022) or "
        'value-zeroing (Mohebbi et al. 2023); -f json adds them under "contributions".',
    ),
]


def _scales():  # -> the colour scales of attncli.render.style
    from attncli.render.style import SCALES  # late: start-up (only when a command taking --scale is built)

    return SCALES


Scale = Annotated[
    str,
    choice(
        "--scale",
        names=_scales,
        help="How the weights' colours are placed on the blue scale: sqrt (√w) or log (log10 w from 10⁻⁴: a "
        "decoder's small weights apart beside its attention sink); the numbers stay the weights. Table, svg and the "
        "page (attn view, which switches it).",
    ),
]


DropSink = Annotated[
    bool,
    typer.Option(
        "--drop-sink",
        help="Draw each head's weights without key 0 (the first token, a decoder's attention sink), each row "
        "renormalized over the keys left (table, svg and the page, which switches it; attn show -f json has the "
        "weights).",
    ),
]


Part = Annotated[str | None, row("part")]
Workers = Annotated[
    int | None,
    typer.Option(
        "--workers", help="With --lines: worker processes (default: the cores, at most 4).", show_default=False
    ),
]
Generate = Annotated[int | None, row("generate")]
SampleTopK = Annotated[
    int | None,
    typer.Option(
        "--top-k",
        help="With --generate: sample each token from the K most probable (with --temperature, --top-p, --seed; "
        "NumPy's random stream, so other tokens than torch's with the same seed).",
        show_default=False,
    ),
]
SampleTopP = Annotated[
    float | None,
    typer.Option(
        "--top-p",
        help="With --generate: sample each token from the most probable whose probabilities sum to P (nucleus).",
        show_default=False,
    ),
]
# attncli.models.interpret.ablate.MODES, written out so that building a command imports no model code
# (tests/cli/test_ablate.py checks that they agree).
MODES = ("zero", "mean")

Target = Annotated[
    str | None,
    typer.Option(
        "--target",
        help="The token watched: its text, with or without its leading space (' Paris', Paris), or as the "
        "vocabulary writes it (ĠParis); where it may be left out (ablate, view --ablate), the model's own next token.",
        show_default=False,
    ),
]
Contrast = Annotated[
    str | None,
    typer.Option(
        "--contrast",
        help="A second token, named as --target is: m = logit(target) − logit(contrast) (patch, dla; ablate reports "
        "it, and ranks by it unless --rank-by says otherwise).",
        show_default=False,
    ),
]
Corrupt = Annotated[  # required by attn patch (no default there), optional in attn view (with --patch)
    str | None,
    typer.Option(
        "--corrupt", help="The corrupt text of the patching: as many tokens as TEXT, the clean one.", show_default=False
    ),
]
Span = Annotated[  # required by attn knockout (no default there), optional in attn view (with --knockout)
    str | None,
    typer.Option(
        "--from",
        help="The keys the knockout blocks: token positions (2-4, or 0,5) or a part of the text (France: the tokens "
        "covering it).",
        show_default=False,
    ),
]
RANK_BY = ("logprob", "logit", "logit-diff")  # attncli.models.interpret.ablate's RANKINGS (a test checks they agree)
RankBy = Annotated[
    str | None,
    choice(
        "--rank-by",
        names=lambda: RANK_BY,
        help="What ranks the heads: the change in the target's log-probability (default), its logit, or the logit "
        "difference target − contrast (default with --contrast).",
    ),
]
Mode = Annotated[
    str,
    choice(
        "--mode",
        names=lambda: MODES,
        help="zero: the head's output set to zero; mean: to its mean over the text's positions.",
    ),
]


Lens = Annotated[
    bool,
    typer.Option(
        "--lens",
        help="With a decoder --model: add the logit lens view (attn lens: every layer's top next tokens at every "
        "position, 5 a cell), about (layers + 1) × vocabulary × width multiply-adds a token.",
    ),
]
Ablate = Annotated[
    bool,
    typer.Option(
        "--ablate",
        help="With a decoder --model: add the ablation view (attn ablate: every head switched off alone, how it "
        "moves the logit of the next token after TEXT; --target, --mode), about heads × layers / 2 passes.",
    ),
]


def given(ctx: typer.Context) -> list[Any]:
    """The parameters the user wrote on the command line (or in the environment), not the defaults.

    Compared by name: typer may carry its own copy of click, with its own ParameterSource enum.
    """
    return [
        p
        for p in ctx.command.params
        if p.name and getattr(ctx.get_parameter_source(p.name), "name", None) in ("COMMANDLINE", "ENVIRONMENT")
    ]


def check_options(ctx: typer.Context, model: str | None) -> None:
    """--model with an option it cannot use, or a model-only option without --model: ConfigError naming them as
    they were written (api/options.py's `check_model`, the one rule, which the API follows too)."""
    params = given(ctx)
    names = {p.name for p in params}
    if model is not None and "rollout" in names and "head" in names:
        raise ConfigError("--rollout averages every head of each layer: drop --head")
    if model is not None and "rollout" in names and "stats" in names:
        raise ConfigError("--stats describes single heads, not the rollout: drop --stats or --rollout")
    flags = {p.name: "/".join(p.opts) for p in params}
    words = Words(flags.__getitem__, "--model", "--model DIR", ", ")
    takes_generate = "generate" in {p.name for p in ctx.command.params}
    generate = ("generate" in names) if takes_generate else None
    command = ctx.command.name or ""
    check_model(command, model is not None, {p.name: ctx.params.get(p.name) for p in params}, words, generate)


def written(ctx: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
    """Those of `values` (an option's keyword -> its value) the command line was given: what the API is passed, so
    that it meets a model as the command line does (its defaults are the same)."""
    names = {p.name for p in given(ctx)}
    return {k: v for k, v in values.items() if k in names}


def run_given(ctx: typer.Context, run: dict[str, Any], generating: bool) -> dict[str, Any]:
    """The options of a text run the command line was given (`written`), as the API takes them: not --context (the
    command reads it), nor --temperature and --seed when they are the sampling's of --generate N."""
    skip = {"context", *(SAMPLING if generating else ())}
    return written(ctx, {k: v for k, v in run.items() if k not in skip})


def generation(ctx: typer.Context, generate: int | None, top_k=None, top_p=None, temperature=1.0, seed=0):
    """--generate N and how its tokens are chosen, as attncli.models.runs.generate's Generation (None without it):
    greedy, or sampled when --temperature, --top-k or --top-p is given (--seed seeds NumPy's stream)."""
    if generate is None:
        if top_k is not None or top_p is not None:
            raise ConfigError("--top-k and --top-p sample the tokens --generate writes: add --generate N")
        return None
    from attncli.models.runs.generate import Generation  # late: start-up (model code only with --model)

    names = {p.name for p in given(ctx)}
    how = Generation(generate, temperature if "temperature" in names else None, top_k, top_p, seed)
    if "seed" in names and not how.sampled:
        raise ConfigError(
            "--seed seeds the sampling: add --temperature, --top-k or --top-p (else --generate is greedy)"
        )
    return how


def load_model(path: str, gguf_file: str | None = None):
    """attncli.models.load_model, imported only when a command is given --model."""
    from attncli.models import load_model as load  # late: start-up (model code only with --model)

    return load(path, gguf_file)


def model_path(model: str | None, gguf_file: str | None) -> str | None:
    """--model as the API takes it: with --gguf-file, the path of the GGUF file it chooses in that folder (a
    Hugging Face cache repo, LM Studio's), so that every process of a run (heads --lines' workers) reads that one."""
    if model is None or gguf_file is None:
        return model
    from attncli.models.opening.hub import resolve_model  # late: start-up (only with --gguf-file)

    return str(resolve_model(model, gguf_file))


def worker_count(given: int | None) -> int:
    """--workers, checked; by default the cores this process may use, at most 4."""
    if given is None:
        return min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if not 1 <= given <= 64:
        raise ConfigError(f"--workers must be between 1 and 64, got {given}")
    return given
