"""`attn show`: the attention matrix and the output vectors of a text, a model's layer, or each line of a file."""

from __future__ import annotations

from dataclasses import asdict
from functools import partial

import typer

from attncli.cli.model import (
    SAMPLING,
    Generate,
    GgufFile,
    Head,
    Layer,
    ModelDir,
    Part,
    Rollout,
    SampleTopK,
    SampleTopP,
    Workers,
    check_options,
    generation,
    load_model,
    model_path,
    worker_count,
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
)
from attncli.cli.output import emit, table_only
from attncli.cli.text import context_of, say, stdin_prompt, text_of, warn
from attncli.errors import AttnError, ConfigError, DataError
from attncli.io.inputs import iter_lines, open_lines


@options(source=Source, run=Run, out=Out, writes=("Result", "Lines", "Rollout"))
def show(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    stats: Stats = False,
    model: ModelDir = None,
    gguf_file: GgufFile = None,
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
    from attncli.api.config import HEAD_STATISTICS, check_show
    from attncli.cli.hints import limits_for

    sampling = SAMPLING if generate is not None else ()
    keep = ("stats", "mean_heads", "query", "matrix_only", "raw_tokens", "context", "lines", *sampling)
    check_options(ctx, model, keep=keep, both=("head",))
    if generate is not None and (lines or rollout):
        raise ConfigError("--generate continues one text's attention: drop --lines and --rollout")
    how = generation(ctx, generate, top_k, top_p, run.temperature, run.seed)
    model = model_path(model, gguf_file)
    if workers is not None and (not lines or model is not None):
        raise ConfigError("--workers goes with --lines of a text run (a --model runs its lines in one process)")
    if rollout and lines:
        raise ConfigError("--rollout draws one text's rollout: drop --lines or --rollout")
    from attncli.io import documents  # late: start-up (not for --help)

    kind = documents.Lines if lines else documents.Result  # --lines writes JSONL unless -f or -o says otherwise
    table_only(
        out,
        kind.default_format,
        mean_heads=mean_heads,
        query=query is not None,
        matrix_only=matrix_only,
        raw_tokens=raw_tokens,
    )
    context = context_of(run.context, source.errors)
    chosen = {**asdict(run), "context": context, "layer": layer, "head": head, "part": part, "dtype": dtype}
    chosen |= {"no_weights": no_weights, "mean_heads": mean_heads, "query": query, "matrix_only": matrix_only}
    chosen |= {"raw_tokens": raw_tokens}
    if how is not None:  # --temperature and --seed are the sampling's here, not a text run's
        chosen |= {"temperature": 1.0, "seed": 0, "generate": how}
    limits = limits_for(source.max_tokens, "show --lines" if lines else "show", HEAD_STATISTICS if stats else None)
    if lines:
        from attncli.render.stats import show_view  # late: start-up (not for --help)

        check_show(stats, no_weights, head, mean_heads)  # a bad option fails before the first line is read
        if model is not None:
            chosen["model"] = load_model(model)  # once, for every line
        else:
            run.config(dtype=dtype, weights=not no_weights).resolve()
        table = partial(show_view, stats=stats, mean=mean_heads, query=query, matrix_only=matrix_only)

        def one(line: str):  # --stats: each line's, in _show_lines
            return api.show(line, **chosen, precision=out.precision, limits=limits).result

        return _show_lines(source, out, table, stats, one, worker_count(workers))
    text = text_of(source)
    if rollout:
        assert model is not None  # check_options: --rollout needs --model
        rolled = api.rollout(text, model=model, layer=layer, context=context, part=part, precision=out.precision)
        return emit(rolled.document, out)
    shown = api.show(text, **chosen, model=model, stats=stats, precision=out.precision, limits=limits)
    warn(shown)
    emit(shown.document, out)


def _show_lines(source: Source, out: Out, table, stats: bool, run_one, workers: int) -> None:
    """`attn show --lines`: `run_one` each non-blank line as it is read (past the first few hundred, on `workers`
    processes); its number goes into the output, in the input's order."""
    from attncli.io import documents  # late: start-up (not for --help)
    from attncli.io.progress import line_progress
    from attncli.pipeline.heads import stats_document
    from attncli.pipeline.lines import ordered_map

    stdin_prompt(source.text, "the lines")
    stream, name = open_lines(source.text, source.file)
    with stream, line_progress(stream, name, out.color, out.output) as counted:

        def run_line(number: int, text: str):  # here, or in a worker process
            try:
                return run_one(text)
            except AttnError as e:
                raise type(e)(f"{name} line {number}: {e}") from None

        def done(work, processes: int):
            """work((i, (number, text))) -> (warnings, value) over the non-blank lines: the values, in order."""
            texts = ((n, line) for n, line in iter_lines(counted, name, source.errors, say) if line.strip())
            found = False
            for outcome in ordered_map(work, enumerate(texts), processes):
                if isinstance(outcome, AttnError):
                    raise outcome
                found = True
                warnings, value = outcome
                for warning in warnings:
                    say(warning)
                yield value
            if not found:
                raise DataError(f"no text: every line of {name} is blank")

        def result(item):
            _, (number, text) = item
            r = run_line(number, text)
            return r.tokens.warnings, (number, r)

        def written(write):  # write(i, number, result) -> bytes, done with the run where the line runs
            def work(item):
                i, (number, text) = item
                r = run_line(number, text)
                return r.tokens.warnings, write(i, number, r)

            return done(work, workers)

        extra = (lambda r: {"stats": stats_document(r, out.precision)}) if stats else None
        lines = documents.Lines("attn show", results=done(result, 1), line_table=table, extra=extra, each=written)
        emit(lines, out)
