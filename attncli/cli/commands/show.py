"""`attn show`: the attention matrix and the output vectors of a text, a model's layer, or each line of a file."""

from __future__ import annotations

from typing import Any

import typer

from attncli.cli.model import (
    Chat,
    Contrib,
    DropSink,
    Generate,
    GgufFile,
    Head,
    Layer,
    ModelDir,
    Part,
    Rollout,
    SampleTopK,
    SampleTopP,
    Scale,
    System,
    Workers,
    check_options,
    generation,
    given,
    model_path,
    run_given,
    worker_count,
    written,
)
from attncli.cli.options import (
    Dtype,
    Lines,
    MatrixOnly,
    MeanHeads,
    NoWeights,
    Out,
    QueryRow,
    RawTokens,
    Run,
    Source,
    Stats,
    options,
    run_config,
)
from attncli.cli.output import contrib_format, emit, table_only
from attncli.cli.text import context_of, given_lines, say, text_of, warn
from attncli.errors import ConfigError
from attncli.io.inputs import iter_lines


@options(source=Source, run=Run, out=Out, writes=("Result", "Lines", "Rollout"))
def show(
    ctx: typer.Context,
    source: Source,
    run: dict[str, Any],
    out: Out,
    stats: Stats = False,
    model: ModelDir = None,
    gguf_file: GgufFile = None,
    chat: Chat = False,
    system: System = None,
    layer: Layer = None,
    head: Head = None,
    rollout: Rollout = False,
    lines: Lines = False,
    no_weights: NoWeights = False,
    dtype: Dtype = "float64",
    mean_heads: MeanHeads = False,
    query: QueryRow = None,
    matrix_only: MatrixOnly = False,
    raw_tokens: RawTokens = False,
    workers: Workers = None,
    part: Part = None,
    generate: Generate = None,
    top_k: SampleTopK = None,
    top_p: SampleTopP = None,
    contrib: Contrib = "weights",
    scale: Scale = "sqrt",
    drop_sink: DropSink = False,
) -> None:
    """Show the attention matrix and the output vectors of TEXT.

    Every head side by side as the width allows, or --head H, or --mean-heads; --query shows one query's row as
    bars. With --model DIR, a real model's heads: layer --layer (default the last), every head or --head H,
    or with --rollout the attention rollout through layers 0..--layer; --generate N: of TEXT and the N tokens
    the model writes after it. An encoder–decoder (BART, mBART, T5, Marian):
    TEXT is the target and --context the source; --part cross (default), decoder or encoder; --generate N: of
    the target it writes from the source after TEXT (the target's beginning, or '').
    """
    from attncli import api  # late: start-up (not for --help)
    from attncli.api.config import HEAD_STATISTICS
    from attncli.api.options import computed  # late: start-up (the registry of measures: only with a run)
    from attncli.cli.hints import limits_for
    from attncli.io.progress import line_progress

    check_options(ctx, model)
    if generate is not None and (lines or rollout):
        raise ConfigError("--generate continues one text's attention: drop --lines and --rollout")
    how = generation(ctx, generate, top_k, top_p, run["temperature"], run["seed"])
    model = model_path(model, gguf_file)
    if workers is not None and (not lines or model is not None):
        raise ConfigError("--workers goes with --lines of a text run (a --model runs its lines in one process)")
    if rollout and (chat or system is not None):
        raise ConfigError("--rollout reads the text as it is: drop --chat and --system")
    if rollout and lines:
        raise ConfigError("--rollout draws one text's rollout: drop --lines or --rollout")
    if computed(contrib) and (lines or rollout):
        both = " and ".join(name for name, on in (("--lines", lines), ("--rollout", rollout)) if on)
        raise ConfigError(f"--contrib {contrib} maps one text's layer: drop {both}")
    from attncli.io import documents  # late: start-up (not for --help)

    if computed(contrib):
        contrib_format(contrib, out, documents.Result)

    kind = documents.Lines if lines else documents.Result  # --lines writes JSONL unless -f or -o says otherwise
    shades = any(p.name == "scale" for p in given(ctx))  # --scale, even sqrt, is for a table
    table_only(
        out,
        kind.default_format,
        mean_heads=mean_heads,
        query=query is not None,
        matrix_only=matrix_only,
        scale=shades,
        drop_sink=drop_sink,
        raw_tokens=raw_tokens,
    )
    context = context_of(run["context"], source.errors)
    chosen = {**run_given(ctx, run, how is not None), "context": context, "layer": layer, "head": head, "part": part}
    chosen |= written(ctx, {"dtype": dtype})
    chosen |= {"chat": chat, "system": system}
    chosen |= {"no_weights": no_weights, "mean_heads": mean_heads, "query": query, "matrix_only": matrix_only}
    chosen |= {"raw_tokens": raw_tokens}
    if how is not None:  # --temperature and --seed are the sampling's here, not a text run's (run_given)
        chosen |= {"generate": how}
    limits = limits_for(source.max_tokens, "show --lines" if lines else "show", HEAD_STATISTICS if stats else None)
    chosen |= {"scale": scale, "drop_sink": drop_sink}
    if lines:
        if model is not None:
            chosen["model"] = model
        else:
            run_config(run, dtype=dtype, weights=not no_weights).resolve()  # a bad option fails before a line is read
        stream, name = given_lines(source.text, source.file)
        with stream, line_progress(stream, name, out.color, out.output) as counted:
            read = iter_lines(counted, name, source.errors, say)
            every = api.show_lines(
                read, name=name, workers=worker_count(workers), stats=stats, on_warning=say, **chosen,
                precision=out.precision, limits=limits,
            )  # fmt: skip
            emit(every.document, out)
        return None
    text = text_of(source)
    if rollout:
        assert model is not None  # check_options: --rollout needs --model
        rolled = api.rollout(text, model=model, layer=layer, context=context, part=part, precision=out.precision)
        return emit(rolled.document, out)
    shown = api.show(text, **chosen, contrib=contrib, model=model, stats=stats, precision=out.precision, limits=limits)
    warn(shown)
    emit(shown.document, out)
