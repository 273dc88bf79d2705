"""The `attn` command: parse options, call the pipeline, hand the result to a renderer.

The only module that prints or exits. Errors from the core (AttnError) become
one line `Error: ...` on stderr and the error's exit code, here in one place.
"""

from __future__ import annotations

import os
import signal
import sys
import warnings
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Annotated

if not {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"} & set(os.environ):
    # Before NumPy loads: attn's matrices are small, and a --model pass on a sentence takes 60 ms on one BLAS
    # thread but 0.3-0.9 s with several on a busy machine. Set any of these variables to override.
    os.environ["OPENBLAS_NUM_THREADS"] = "1"

import typer

from attncli import __version__
from attncli.cli.lazy import LazyGroup, LazyTyper
from attncli.cli.model import (
    CorpusLines,
    DaskAddress,
    Head,
    HeadsContext,
    Layer,
    MaxLines,
    ModelDir,
    ModelRequired,
    Part,
    Rollout,
    Stat,
    Workers,
    check_options,
    load_model,
)
from attncli.cli.options import (
    Da,
    Dtype,
    Errors,
    Features,
    File,
    InputPath,
    KPath,
    Lines,
    MaskOpt,
    MatrixOnly,
    MeanHeads,
    NoWeights,
    Out,
    ParamSeed,
    QPath,
    Query,
    QueryRow,
    Rank,
    RecordFormat,
    Run,
    Source,
    Stats,
    Temperature,
    Text,
    Tokenizer,
    Tokenizers,
    Variant,
    VariantNames,
    VPath,
    check_variant_options,
    options,
)
from attncli.errors import AttnError, ConfigError, DataError
from attncli.io.escape import escape_text
from attncli.io.inputs import decode_arg, iter_lines, open_lines, read_text

if TYPE_CHECKING:  # the output machinery (formats, documents, emit) loads in the commands that write one
    from attncli.io.documents import Document
    from attncli.pipeline.limits import OutputCost


def fail(error: AttnError):
    """Print the one line `Error: ...` and exit with the error's code (ATTN_DEBUG=1 shows the traceback)."""
    if os.environ.get("ATTN_DEBUG") == "1":
        raise error
    typer.echo(f"Error: {escape_text(str(error))}", err=True)  # one line, and a path or token in it stays inert
    raise typer.Exit(error.exit_code)


# Click's exception base, whichever Click Typer runs on (recent Typer vendors its own copy as typer._click).
ClickException: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _escaped(error):
    """Click's own usage errors quote what the user typed ("No such option", "unexpected extra argument"):
    show it escaped like every other message (the usage line and the exit code stay Click's)."""
    message = error.format_message
    error.format_message = lambda: escape_text(message())
    return error


class AttnGroup(LazyGroup):
    """Translates the core's errors, and unexpected ones, into one line and an exit code."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except ClickException as e:
            if type(e).__name__ == "NoArgsIsHelpError":  # bare `attn`: the help, as `attn --help` prints it
                typer.echo(e.ctx.get_help())  # type: ignore[attr-defined]
                raise typer.Exit(0) from None
            raise _escaped(e) from None

    def invoke(self, ctx):
        try:
            with warnings.catch_warnings():
                # NumPy's floating-point warnings print source lines; every value that goes non-finite is
                # caught by a check that names it (an overflow, a NaN weight) and said in one line instead
                warnings.simplefilter("ignore", RuntimeWarning)
                return super().invoke(ctx)
        except AttnError as e:
            fail(e)
        except ClickException as e:
            raise _escaped(e) from e
        except (typer.Exit, typer.Abort, BrokenPipeError):
            raise
        except OSError as e:
            from attncli.io.output import WRITE_ERRORS

            if e.errno not in WRITE_ERRORS:
                raise
            fail(DataError(f"cannot write the output: {e.strerror}"))  # stdout on a full disk, say
        except Exception as e:
            if type(e).__module__.startswith(("typer", "click")):  # usage errors keep Click's form
                raise
            fail(AttnError(f"internal error: {type(e).__name__}: {e} (run with ATTN_DEBUG=1 for the traceback)"))


app = LazyTyper(
    cls=AttnGroup,
    help="Inspect attention in the terminal: tokens, scores, weights and outputs, exact and reproducible.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"attn {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Inspect attention in the terminal: tokens, scores, weights and outputs, exact and reproducible."""
    from attncli.io.output import columns

    problem = columns(os.environ)[1]
    if problem:
        _say(problem)


def _say(message: str) -> None:
    """A warning on stderr, one line, escaped (it may quote a path)."""
    typer.echo(f"Warning: {escape_text(message)}", err=True)


def _warn(tokens) -> None:
    for warning in tokens.warnings:
        _say(warning)


def _text(source: Source) -> str:
    return read_text(source.text, source.file, source.errors, _say, source.keep_newline)


def _context(context: str | None, errors: str) -> str | None:
    """--context checked like TEXT: argv bytes that are not UTF-8 are an error, or U+FFFD with --errors replace."""
    return None if context is None else decode_arg(context, "--context", errors, _say)


def _emit(doc: Document, out: Out) -> None:
    from attncli.io.output import emit

    emit(
        doc,
        out.fmt,
        out.output,
        out.precision,
        out.color,
        save_svg=out.save_svg,
        save_html=out.save_html,
        width=out.width,
        theme=out.theme,
    )


def _workers(workers: int | None) -> int:
    """--workers, checked; by default the cores this process may use, at most 4."""
    if workers is None:
        return min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if not 1 <= workers <= 64:
        raise ConfigError(f"--workers must be between 1 and 64, got {workers}")
    return workers


def _table_only(out: Out, **chosen: bool) -> None:
    """Options that only change what the table draws: ConfigError when the output is data (-f json, csv ...)."""
    from attncli.io.formats import FORMATS
    from attncli.io.output import resolve_format

    fmt = resolve_format(out.fmt, out.output)
    given = [f"--{name.replace('_', '-')}" for name, on in chosen.items() if on]
    if given and not FORMATS[fmt].picture:
        raise ConfigError(f"{', '.join(given)} only change what the table draws; -f {fmt} has every number")


def _writing(kind: type[Document], out: Out) -> OutputCost | None:
    """What writing a document of this kind in the chosen format holds on top of its run."""
    from attncli.io.formats import FORMATS
    from attncli.io.output import resolve_format

    return FORMATS[resolve_format(out.fmt, out.output)].memory.get(kind)


# ---- commands ------------------------------------------------------------------------------------
# Each command imports the machinery of its run (NumPy, the pipeline, the output, the renderers; the models
# layer only with --model) in its body: `attn --help` loads none of it, and `attn variants` no NumPy.


@app.command()
@options(source=Source, run=Run, out=Out)
def show(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    stats: Stats = False,
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
    rollout: Rollout = False,
    lines: Lines = False,
    no_weights: NoWeights = False,
    dtype: Dtype = "float64",
    mean_heads: MeanHeads = False,
    query: QueryRow = None,
    matrix_only: MatrixOnly = False,
    workers: Workers = None,
    part: Part = None,
) -> None:
    """Show the attention matrix and the output vectors of TEXT.

    Every head side by side as the width allows, or --head H, or --mean-heads; --query shows one query's row as
    bars. With --model DIR, a real model's heads: layer --layer (default the last), every head or --head H,
    or with --rollout the attention rollout through layers 0..--layer. An encoder–decoder (BART, T5, Marian):
    TEXT is the target and --context the source; --part cross (default), decoder or encoder.
    """
    from attncli.cli.hints import HEAD_STATISTICS, limits_for
    from attncli.cli.view import page_of
    from attncli.io import documents
    from attncli.pipeline.result import one_head
    from attncli.pipeline.run import run as run_text
    from attncli.render.stats import show_view

    check_options(ctx, model, keep=("stats", "mean_heads", "query", "matrix_only", "context", "lines"), both=("head",))
    if stats and no_weights:
        raise ConfigError("--stats describes the weights, and --no-weights computes none: drop one of them")
    if head is not None and mean_heads:
        raise ConfigError("--head draws one head and --mean-heads their mean: drop one of them")
    if workers is not None and (not lines or model is not None):
        raise ConfigError("--workers goes with --lines of a text run (a --model runs its lines in one process)")
    if rollout and lines:
        raise ConfigError("--rollout draws one text's rollout: drop --lines or --rollout")
    _table_only(out, mean_heads=mean_heads, query=query is not None, matrix_only=matrix_only)
    table = partial(show_view, stats=stats, mean=mean_heads, query=query, matrix_only=matrix_only)
    context = _context(run.context, source.errors)
    if model is not None:
        from attncli.models import seq2seq
        from attncli.render.heads import rollout_view

        loaded = load_model(model)  # once, also for every line of --lines
        if rollout:
            ro = seq2seq.part_rollout(loaded, _text(source), layer, context, part)
            return _emit(documents.Rollout("attn show", partial(rollout_view, ro), rollout=ro), out)
        if lines:
            return _show_lines(
                source, out, table, stats, lambda line: seq2seq.part_result(loaded, line, layer, head, context, part), 1
            )
        result = seq2seq.part_result(loaded, _text(source), layer, head, context, part)
        return _show(result, out, table, stats, _model_page(lambda: result, "attn show", out, loaded, model))
    config = run.config(dtype=dtype, weights=not no_weights)
    limits = limits_for(source.max_tokens, "show --lines" if lines else "show", HEAD_STATISTICS if stats else None)
    narrow = (lambda r: r) if head is None else (lambda r: one_head(r, head))
    if lines:
        config = config.resolve()  # a bad option fails before the first line is read
        return _show_lines(
            source,
            out,
            table,
            stats,
            lambda line: narrow(run_text(line, config, context=context, limits=limits)),
            _workers(workers),
        )
    result = narrow(run_text(_text(source), config, context=context, limits=limits))
    _show(result, out, table, stats, None if no_weights else page_of(result, "attn show", out.precision))


def _show(result, out: Out, table, stats: bool, view) -> None:
    from attncli.io import documents
    from attncli.render.stats import stats_document

    _warn(result.tokens)
    extra = {"stats": stats_document(result, out.precision)} if stats else None
    _emit(documents.Result("attn show", partial(table, result), result=result, extra=extra, view=view), out)


def _model_page(result_of: Callable, command: str, out: Out, loaded, model: str):
    """`() -> View`, the interactive page of the model result `result_of()` returns (every layer and head; made
    only when a page is written), or None for an encoder–decoder, whose parts the page does not draw yet
    (-f html then pictures the table)."""
    from attncli.cli.view import page_of
    from attncli.models.encdec import is_seq2seq

    return None if is_seq2seq(loaded) else lambda: page_of(result_of(), command, out.precision, loaded, model)()


def _show_lines(source: Source, out: Out, table, stats: bool, run_one, workers: int) -> None:
    """`attn show --lines`: `run_one` each non-blank line as it is read (past the first few hundred, on `workers`
    processes); its number goes into the output, in the input's order."""
    from attncli.io import documents
    from attncli.io.output import line_progress
    from attncli.pipeline.lines import ordered_map
    from attncli.render.stats import stats_document

    stream, name = open_lines(source.text, source.file)
    with stream, line_progress(stream, name, out.color, out.output) as counted:

        def run_line(number: int, text: str):  # here, or in a worker process
            try:
                return run_one(text)
            except AttnError as e:
                raise type(e)(f"{name} line {number}: {e}") from None

        def done(work, processes: int):
            """work((i, (number, text))) -> (warnings, value) over the non-blank lines: the values, in order."""
            texts = ((n, line) for n, line in iter_lines(counted, name, source.errors, _say) if line.strip())
            found = False
            for outcome in ordered_map(work, enumerate(texts), processes):
                if isinstance(outcome, AttnError):
                    raise outcome
                found = True
                warnings, value = outcome
                for warning in warnings:
                    _say(warning)
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
        _emit(lines, out)


@app.command()
@options(source=Source, run=Run, out=Out)
def steps(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    query: Query = 0,
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
    part: Part = None,
) -> None:
    """Walk through every stage, tokens to outputs.

    Each stage of the pipeline is its own table, with its formula and shape in the title:
    tokens, X, Q, K, V per head, the scores, the mask, A = softmax(S) with its row sums,
    O per head and the merged O. -f json (or npz) gives every array, exactly.
    With --model DIR: the stages of one layer's attention in a real model (--layer, --head); an encoder–decoder's
    --part cross (default) takes Q from the decoder (TEXT, the target) and K, V from the encoder (--context).
    """
    from attncli.cli.hints import limits_for
    from attncli.cli.view import page_of
    from attncli.io import documents
    from attncli.pipeline.run import run as run_text
    from attncli.pipeline.steps import check_query
    from attncli.render.steps import show_steps

    check_options(ctx, model, keep=("query", "context"))
    text = _text(source)
    context = _context(run.context, source.errors)
    if model is not None:
        from attncli.models.seq2seq import part_result

        loaded = load_model(model)
        result = part_result(loaded, text, layer, head, context, part)
        view = _model_page(lambda: result, "attn steps", out, loaded, model)
    else:
        config = run.config()
        limits = limits_for(source.max_tokens, "steps", _writing(documents.Steps, out))
        result = run_text(text, config, context=context, trace=True, limits=limits)
        view = page_of(result, "attn steps", out.precision)
    check_query(result, query)
    _warn(result.tokens)
    table = partial(show_steps, result, query=query)
    _emit(documents.Steps("attn steps", table, result=result, view=view), out)


@app.command()
@options(source=Source, run=Run, out=Out, skip=("color", "save_svg", "save_html", "width", "theme"))
def view(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
) -> None:
    """Write an interactive page of TEXT: head, model, matrix and steps views, in one self-contained HTML file.

    -o FILE.html (or a redirect) writes the page: inline script and style, no request of any kind, so it opens
    offline from the file in any current browser. -f json writes its data (schema attncli.view/1), the same
    document the page embeds. With --model DIR: every layer and head of the model, opened at --layer, --head."""
    from attncli.cli.hints import limits_for
    from attncli.cli.view import page_of
    from attncli.io.formats import JSON_LISTS
    from attncli.pipeline.result import one_head
    from attncli.pipeline.run import run as run_text

    check_options(ctx, model, both=("head",))
    text = _text(source)
    if model is not None:
        from attncli.models.run import model_result

        loaded = load_model(model)
        result = model_result(loaded, text, layer, head)
        build = page_of(result, "attn view", out.precision, loaded, model)
    else:
        limits = limits_for(source.max_tokens, "steps", JSON_LISTS)
        result = run_text(text, run.config(), context=_context(run.context, source.errors), trace=True, limits=limits)
        if head is not None:
            one_head(result, head)  # checks that the run has it
        build = page_of(result, "attn view", out.precision, head=head)
    _warn(result.tokens)
    _emit(build(), out)


@app.command()
@options(source=Source, run=Run, out=Out, skip=("fmt", "output", "save_svg", "save_html", "width", "theme"))
def explore(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
    dtype: Dtype = "float64",
    mean_heads: MeanHeads = False,
    query: QueryRow = None,
) -> None:
    """Move through the attention of TEXT with the keyboard: a full-screen app (? lists the keys, q quits).

    The matrix of `attn show` with a cursor (arrow keys), the focused query's row as bars with the formula of
    its weights; [ ] head, { } layer (--model), v variant, m mask, p positional, t tokenizer, a mean over
    heads, h heads overview, e edit the text, s save SVG, j write JSON. The options are `attn show`'s.
    """
    from attncli.cli.hints import limits_for
    from attncli.render.bars import find_query
    from attncli.render.explore.state import Explorer

    check_options(ctx, model, keep=("mean_heads", "query"), both=("head",))
    context, limits = _context(run.context, source.errors), limits_for(source.max_tokens, "show")
    loaded = None if model is None else load_model(model)
    explorer = Explorer(_text(source), run.config(dtype=dtype), context, limits, loaded, layer, mean=mean_heads)
    explorer.compute()  # a bad option or text fails here, before the screen is taken
    explorer.pick(head, None if query is None else find_query(explorer.result.tokens.strings, query))
    _warn(explorer.result.tokens)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError(
            "attn explore is a full-screen app: it needs a terminal on stdin and stdout (attn show prints the tables)"
        )
    from attncli.render.explore.app import run_explorer  # Textual loads for this command only

    raise typer.Exit(run_explorer(explorer, out.precision, out.color))


@app.command()
@options(source=Source, out=Out)
def tokens(ctx: typer.Context, source: Source, out: Out, tokenizer: Tokenizer = "word", model: ModelDir = None) -> None:
    """List the tokens, ids and character offsets.

    Shows each token (escaped), its id, start and end, the text at those offsets, and
    whether the offsets give the input back; -f json|jsonl|csv for tools. --model DIR: the model's tokenizer.
    """
    from attncli.cli.hints import limits_for
    from attncli.io import documents
    from attncli.pipeline.compare import tokens_document
    from attncli.pipeline.tokenize import TooManyTokens, tokenize
    from attncli.render.steps import tokens_view

    check_options(ctx, model)
    text = _text(source)
    if not text:
        raise DataError("empty text: nothing to tokenize")
    limits_for(source.max_tokens, "tokens")  # checks --max-tokens itself
    try:
        if model is None:
            toks = tokenize(text, tokenizer, source.max_tokens)
        else:
            from attncli.models.run import model_tokens

            toks = model_tokens(load_model(model), text)
    except TooManyTokens as e:
        raise DataError(f"{e}: attn tokens lists every one; give a shorter text, or raise --max-tokens") from None
    _warn(toks)
    _emit(documents.Records("attn tokens", partial(tokens_view, text, toks), doc=tokens_document(text, toks)), out)


@app.command()
@options(source=Source, run=Run, out=Out, skip=("tokenizer", "variant", "context"))
def compare(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    tokenizers: Tokenizers = "char,word,bpe",
    variants: VariantNames = "scaled",
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
) -> None:
    """Compare tokenizers and variants side by side.

    One summary table (tokens, vocabulary, unknown or byte tokens, n², multiply-adds,
    weight bytes, row entropy, row maximum), then the heatmaps of head 0, side by side
    when the terminal is wide enough. -f json|jsonl|csv gives the summary rows.
    An approximation (linformer, performer) adds its error against exact scaled attention on the
    same inputs: the largest |ΔA| and the mean KL divergence per row.
    --model DIR adds a real model's layer (--layer, --head) as one more column.
    """
    from attncli.cli.hints import HEAD_STATISTICS, limits_for
    from attncli.io import documents
    from attncli.pipeline.compare import compare_document, compare_runs, split_names
    from attncli.render.compare import compare_view

    check_options(ctx, model, every=True)
    text = _text(source)
    names = split_names(variants, "variants")
    config = run.config(variants=names)
    limits = limits_for(source.max_tokens, "compare", HEAD_STATISTICS)
    results = compare_runs(text, split_names(tokenizers, "tokenizers"), names, config, limits)
    for r in results:
        _warn(r.tokens)
    if model is not None:
        from attncli.models.run import compare_with_model, model_result

        results.append(model_result(load_model(model), text, layer, head))
        doc = compare_with_model(text, results[:-1], results[-1])
    else:
        doc = compare_document(text, results)
    _emit(documents.Records("attn compare", partial(compare_view, doc["rows"], results), doc=doc), out)


@app.command()
@options(out=Out)
def compute(
    out: Out,
    input_path: InputPath = None,
    q: QPath = None,
    k: KPath = None,
    v: VPath = None,
    variant: Variant = "scaled",
    d_a: Da = None,
    mask: MaskOpt = None,
    rank: Rank = None,
    features: Features = None,
    no_weights: NoWeights = False,
    dtype: Dtype = "float64",
    seed: ParamSeed = 0,
    temperature: Temperature = 1.0,
    errors: Errors = "strict",
) -> None:
    """Attention on your own Q, K, V (one head, no projection): JSON on stdin or --input, or .npy files.

    --no-weights: the outputs only, in blocks, never an n × n matrix (JSON scores and weights null);
    --dtype float32: everything in float32 (a float32 .npy is taken exactly)."""
    from attncli.cli.hints import HEAD_STATISTICS, limits_for
    from attncli.core.masks import parse_masks
    from attncli.io import documents
    from attncli.io.formats import FORMATS
    from attncli.io.output import resolve_format
    from attncli.pipeline import given, matrices
    from attncli.pipeline.config import check_options as check_long
    from attncli.render.show import show as show_table

    check_variant_options([variant], rank, features)
    options = {"rank": rank, "features": features}
    check_long(variant, dtype, not no_weights, parse_masks(mask), temperature, options)  # before reading input
    picture = FORMATS[resolve_format(out.fmt, out.output)].picture
    limits = replace(
        limits_for(None, "compute", HEAD_STATISTICS if picture else None), weights=not no_weights, dtype=dtype
    )
    qkv = matrices.read_given(input_path, q, k, v, sys.stdin.buffer, errors, _say, limits)
    result = given.compute(
        qkv, variant, mask, temperature, seed, d_a, limits, dtype=dtype, weights=not no_weights, **options
    )
    _emit(documents.Result("attn compute", partial(show_table, result), result=result), out)


@app.command()
@options(out=Out, skip=("fmt", "precision"))
def variants(out: Out, fmt: RecordFormat = None) -> None:
    """List the attention variants: formula, parameters and their shapes, paper, notes."""
    from attncli.core.variants import VARIANTS
    from attncli.io import documents
    from attncli.render.variants import variants as variants_table

    rows = [v.record() for v in VARIANTS.values()]
    table = documents.Records(
        "attn variants",
        lambda digits, width: variants_table(rows, width),
        doc={"schema": "attncli.variants/1", "rows": rows},
    )
    _emit(table, replace(out, fmt=fmt))


@app.command()
@options(out=Out)
def heads(
    model: ModelRequired,
    out: Out,
    text: Text = None,
    file: File = None,
    stat: Stat = "entropy",
    lines: CorpusLines = False,
    max_lines: MaxLines = None,
    workers: Workers = None,
    dask: DaskAddress = None,
    part: Part = None,
    context: HeadsContext = None,
) -> None:
    """Every head of a real model at a glance, layers × heads.

    --stat in each cell, labels for clear patterns (previous-token, diagonal, first-token/sink, broad);
    -f json|jsonl|csv: every statistic of every head. --lines: over a corpus, one text per line."""
    if lines:
        if part is not None or context is not None:
            raise ConfigError("--lines runs a model's own attention over a corpus: drop --part and --context")
        return _corpus(model, out, text, file, max_lines, workers, dask)
    if max_lines is not None or workers is not None or dask is not None:
        raise ConfigError("--max-lines, --workers and --dask go with --lines (a corpus, one text per line)")
    from attncli.io import documents
    from attncli.models.run import model_result
    from attncli.models.seq2seq import part_heads_document
    from attncli.render.heads import heads_view

    loaded, words = load_model(model), read_text(text, file)
    doc = part_heads_document(loaded, words, context, part)
    if stat not in doc["stats"]:
        why = doc.get("undefined", {}).get(stat, "it is a statistic of cross-attention (--part cross) only")
        raise ConfigError(f"--stat {stat}: {why}; here choose one of {', '.join(doc['stats'])}")

    view = _model_page(lambda: model_result(loaded, words), "attn heads", out, loaded, model)  # at the last layer
    _emit(documents.Records("attn heads", lambda d, w: heads_view(doc, stat, d, w), doc=doc, view=view), out)


def _corpus(path: str, out: Out, text: str | None, file: str | None, max_lines, workers, dask) -> None:
    """`attn heads --lines`: the corpus streamed through the model on `workers` processes (or a Dask cluster);
    Ctrl-C, SIGTERM or SIGHUP print the statistics so far, marked partial, and exit 128 + the signal."""
    import itertools

    from attncli.io import documents
    from attncli.io.progress import lines_progress
    from attncli.models.corpus import Corpus, corpus_document, dask_stats, induction_stats, stream_stats
    from attncli.render.heads import corpus_view

    if max_lines is not None and max_lines < 1:
        raise ConfigError(f"--max-lines must be at least 1, got {max_lines}")
    workers = _workers(workers)
    if dask is not None and (file is None or max_lines is not None):
        raise ConfigError("--dask needs --file and no --max-lines: the cluster's workers read all of that file")
    model = load_model(path)
    stream, name = open_lines(text, file)
    stats, stopped = None, None
    with stream, lines_progress(stream, out.color, max_lines) as done:
        texts = (line for _, line in iter_lines(stream, name, "strict", _say))
        try:
            if dask is not None:
                stats = dask_stats(dask, path, name)
            else:
                for partial, read in stream_stats(path, itertools.islice(texts, max_lines), workers):
                    stats = partial  # what to report if a signal stops the rest
                    done(read)
        except (KeyboardInterrupt, Stopped) as e:
            stopped = e
    if stats is None or not stats.texts:
        if stopped is not None:
            raise stopped
        raise DataError(f"no text: every line of {name} is blank or too long for {model.name}")
    corpus = Corpus(name, stopped is not None, max_lines, 1 if dask else workers, dask)
    doc = corpus_document(model, stats, induction_stats(model), corpus)
    _emit(documents.Records("attn heads", lambda d, w: corpus_view(doc, d, w), doc=doc), out)
    if stopped is not None:
        raise typer.Exit(128 + (stopped.signum if isinstance(stopped, Stopped) else signal.SIGINT))


class Stopped(BaseException):
    """A signal that ends the run (SIGTERM, SIGHUP, SIGINT): raised where the program is, so that every
    `finally` runs (a half-written `-o` file is removed) before attn exits with 128 + the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame) -> None:
    raise Stopped(signum)


def main() -> None:
    """Console-script entry point: run the app; a closed pipe (`| head`) ends quietly; a signal ends it cleanly."""
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stop)
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a token (PYTHONIOENCODING=ascii)
        if hasattr(stream, "reconfigure"):  # shows it as \u0120 rather than failing on it
            stream.reconfigure(errors="backslashreplace")
    try:
        try:
            app()
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except Stopped as stop:
        signal.signal(stop.signum, signal.SIG_IGN)  # a second one while we leave changes nothing
        sys.exit(128 + stop.signum)
    except OSError as e:  # the last flush of stdout failed: a full disk behind a redirect
        from attncli.io.output import WRITE_ERRORS

        if e.errno not in WRITE_ERRORS:
            raise
        typer.echo(f"Error: cannot write the output: {e.strerror}", err=True)
        sys.exit(DataError.exit_code)
