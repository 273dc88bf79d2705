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
from attncli.cli.options import row
from attncli.errors import ConfigError
from attncli.pipeline.ranges import check_range


def model_value(value: str | list[str] | None) -> str | list[str] | None:
    """--model's callback: a value that is empty or looks like an option is the sign of an unset shell variable
    (`--model $SMOLLM2 --layer 1` with SMOLLM2 empty gives --model the word `--layer`), said before anything else
    reads the command line. A model whose path starts with - is written ./-name."""
    for one in value if isinstance(value, list) else [value]:
        if one is not None and (not one.strip() or one.startswith("-")):
            raise ConfigError(f"--model got {one!r}: is the variable you meant empty?")
    return value


ModelDir = Annotated[str | None, row("model", callback=model_value)]
ModelDirs = Annotated[list[str] | None, row("compare_model", callback=model_value)]
Chat = Annotated[bool, row("chat")]
System = Annotated[str | None, row("system")]
GgufFile = Annotated[str | None, row("gguf_file")]
Layer = Annotated[int | None, row("layer")]
Head = Annotated[int | None, row("head")]
Rollout = Annotated[bool, row("rollout")]
Contrib = Annotated[str, row("contrib")]
Scale = Annotated[str, row("scale")]
DropSink = Annotated[bool, row("drop_sink")]
Part = Annotated[str | None, row("part")]
Workers = Annotated[int | None, row("workers")]
Generate = Annotated[int | None, row("generate")]
SampleTopK = Annotated[int | None, row("sample_top_k")]
SampleTopP = Annotated[float | None, row("top_p")]
Target = Annotated[str | None, row("target")]
Contrast = Annotated[str | None, row("contrast")]
Corrupt = Annotated[str | None, row("corrupt")]  # required by attn patch (no default there), optional in attn view
Span = Annotated[str | None, row("span")]  # required by attn knockout (no default there), optional in attn view
RankBy = Annotated[str | None, row("rank_by")]
Mode = Annotated[str, row("mode")]
Lens = Annotated[bool, row("lens")]
Ablate = Annotated[bool, row("ablate")]


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
    check_range("workers", given)
    return given
