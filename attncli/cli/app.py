"""The `attn` command: parse options, call the pipeline, hand the result to a renderer.

The only module that prints or exits. Errors from the core (AttnError) become
one line `Error: ...` on stderr and the error's exit code, here in one place.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from functools import partial
from typing import Annotated

if not {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"} & set(os.environ):
    # Before NumPy loads: attn's matrices are small, and a --model pass on a sentence takes 60 ms on one BLAS
    # thread but 0.3-0.9 s with several on a busy machine. Set any of these variables to override.
    os.environ["OPENBLAS_NUM_THREADS"] = "1"

import typer
from typer.core import TyperGroup

from attncli import __version__
from attncli.cli.hints import limits_for
from attncli.cli.model import Head, Layer, ModelDir, ModelRequired, Rollout, Stat, check_options, load_model
from attncli.cli.options import (
    Color,
    Context,
    Da,
    Dim,
    Dk,
    Dtype,
    Dv,
    Errors,
    Features,
    File,
    Format,
    Heads,
    Lines,
    MaskOpt,
    MaxTokens,
    NoWeights,
    Output,
    Positional,
    Precision,
    Projection,
    Rank,
    RecordFormat,
    SaveHtml,
    SaveSvg,
    Seed,
    Temperature,
    Text,
    Tokenizer,
    Variant,
    _v,
)
from attncli.core.variants import VARIANTS
from attncli.errors import AttnError, ConfigError, DataError
from attncli.io import documents
from attncli.io.escape import escape_text
from attncli.io.inputs import decode_arg, iter_lines, open_lines, read_text
from attncli.io.output import emit, line_progress, resolve_format
from attncli.pipeline.config import RunConfig
from attncli.pipeline.limits import MAX_TOKENS, Limits
from attncli.pipeline.run import run


def fail(error: AttnError):
    """Print the one line `Error: ...` and exit with the error's code (ATTN_DEBUG=1 shows the traceback)."""
    if os.environ.get("ATTN_DEBUG") == "1":
        raise error
    typer.echo(f"Error: {escape_text(str(error))}", err=True)  # one line, and a path or token in it stays inert
    raise typer.Exit(error.exit_code)


# Click's exception base, whichever Click Typer runs on (recent Typer vendors its own copy as typer._click).
ClickException = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _escaped(error):
    """Click's own usage errors quote what the user typed ("No such option", "unexpected extra argument"):
    show it escaped like every other message (the usage line and the exit code stay Click's)."""
    message = error.format_message
    error.format_message = lambda: escape_text(message())  # type: ignore[method-assign]
    return error


class AttnGroup(TyperGroup):
    """Translates the core's errors, and unexpected ones, into one line and an exit code."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except ClickException as e:
            raise _escaped(e) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except AttnError as e:
            fail(e)
        except ClickException as e:
            raise _escaped(e) from e
        except (typer.Exit, typer.Abort, BrokenPipeError):
            raise
        except Exception as e:
            if type(e).__module__.startswith(("typer", "click")):  # usage errors keep Click's form
                raise
            fail(AttnError(f"internal error: {type(e).__name__}: {e} (run with ATTN_DEBUG=1 for the traceback)"))


app = typer.Typer(
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


def _say(message: str) -> None:
    """A warning on stderr, one line, escaped (it may quote a path)."""
    typer.echo(f"Warning: {escape_text(message)}", err=True)


def _limits(max_tokens: int | None, command: str, render: str = "none") -> Limits:
    """--max-tokens and ATTN_MAX_MEMORY, what the result will be rendered to, and the hints (attncli.cli.hints)."""
    return limits_for(max_tokens, command, render)


def _context(context: str | None, errors) -> str | None:
    """--context checked like TEXT: argv bytes that are not UTF-8 are an error, or U+FFFD with --errors replace."""
    return None if context is None else decode_arg(context, "--context", _v(errors), _say)


# ---- commands ------------------------------------------------------------------------------------


@app.command()
def show(
    ctx: typer.Context,
    text: Text = None,
    file: File = None,
    tokenizer: Tokenizer = "word",
    variant: Variant = "scaled",
    heads: Heads = 1,
    dim: Dim = 16,
    dk: Dk = None,
    dv: Dv = None,
    d_a: Da = None,
    mask: MaskOpt = None,
    positional: Positional = "none",
    projection: Projection = "random",
    context: Context = None,
    seed: Seed = 0,
    temperature: Temperature = 1.0,
    fmt: Format = None,
    output: Output = None,
    precision: Precision = None,
    color: Color = "auto",
    stats: Annotated[
        bool,
        typer.Option(
            "--stats",
            help='Head statistics under the matrix (always for up to 12 tokens); with -f json they go under "stats".',
        ),
    ] = False,
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
    rollout: Rollout = False,
    lines: Lines = False,
    save_svg: SaveSvg = None,
    save_html: SaveHtml = None,
    rank: Rank = None,
    features: Features = None,
    no_weights: NoWeights = False,
    dtype: Dtype = "float64",
    errors: Errors = "strict",
    max_tokens: MaxTokens = MAX_TOKENS,
) -> None:
    """Show the attention matrix and the output vectors of TEXT.

    With --model DIR, a real model's heads: layer --layer (default the last), every head or --head H,
    or with --rollout the attention rollout through layers 0..--layer.
    """
    from attncli.models import run as model_run
    from attncli.render import heads as render_model
    from attncli.render import show as render
    from attncli.render import stats as render_stats
    from attncli.render.stats import stats_document

    check_options(ctx, model, keep=("stats",))
    pictures = {"save_svg": save_svg, "save_html": save_html}

    if stats and no_weights:
        raise ConfigError("--stats describes the weights, and --no-weights computes none: drop one of them")

    def table(r, d, w):
        short = (
            r.weights is not None
            and max(r.weights.shape[1:]) <= render_stats.SHORT
            and (model is None or r.config.heads == 1)
        )
        return render.show(r, d, w, below=render_stats.stats_view(r, d, w) if stats or short else None)

    if model is not None:
        source = read_text(text, file, _v(errors), _say)
        if rollout:
            ro = model_run.model_rollout(load_model(model), source, layer)
            table = partial(render_model.rollout_view, ro)
            return emit(
                documents.Rollout("attn show", table, rollout=ro), _v(fmt), output, precision, _v(color), **pictures
            )
        result = model_run.model_result(load_model(model), source, layer, head)
    else:
        _variant_options([_v(variant)], rank, features)
        config = _run_config(
            tokenizer,
            variant,
            heads,
            dim,
            dk,
            dv,
            d_a,
            mask,
            positional,
            projection,
            seed,
            temperature,
            rank=rank,
            features=features,
            dtype=_v(dtype),
            weights=not no_weights,
        )
        context = _context(context, errors)
        limits = _limits(max_tokens, "show --lines" if lines else "show", "table" if stats else "none")
        if lines:
            return show_lines(
                text,
                file,
                config,
                context,
                _v(fmt),
                output,
                precision,
                _v(color),
                table,
                pictures,
                stats,
                _v(errors),
                limits,
            )
        result = run(read_text(text, file, _v(errors), _say), config, context=context, limits=limits)
    _warn(result.tokens)
    extra = {"stats": stats_document(result, precision)} if stats else None
    emit(
        documents.Result("attn show", partial(table, result), result=result, extra=extra),
        _v(fmt),
        output,
        precision,
        _v(color),
        **pictures,
    )


def show_lines(
    text, file, config, context, fmt, output, precision, color, table, pictures, stats, errors="strict", limits=None
) -> None:
    """`attn show --lines`: run each non-blank line as it is read; its number goes into the output."""
    from attncli.render.stats import stats_document

    config.resolve()  # a bad option fails before the first line is read
    stream, name = open_lines(text, file)
    with stream, line_progress(stream, name, color, output) as counted:

        def results():
            found = False
            for number, line in iter_lines(counted, name, errors, _say):
                if line.strip():
                    found = True
                    try:
                        result = run(line, config, context=context, limits=limits)
                    except AttnError as e:
                        raise type(e)(f"{name} line {number}: {e}") from None
                    _warn(result.tokens)
                    yield number, result
            if not found:
                raise DataError(f"no text: every line of {name} is blank")

        extra = (lambda r: {"stats": stats_document(r, precision)}) if stats else None
        doc = documents.Lines("attn show", results=results(), line_table=table, extra=extra)
        emit(doc, fmt, output, precision, color, **pictures)


def _run_config(
    tokenizer, variant, heads, dim, dk, dv, d_a, mask, positional, projection, seed, temperature, **long
) -> RunConfig:
    """`long`: RunConfig's fields for the approximations (rank, features) and long inputs (dtype, weights)."""
    return RunConfig(
        tokenizer=tokenizer,
        variant=_v(variant),
        heads=heads,
        dim=dim,
        d_k=dk,
        d_v=dv,
        d_a=d_a,
        mask=tuple(mask.split(",")) if mask else (),
        positional=_v(positional),
        projection=_v(projection),
        seed=seed,
        temperature=temperature,
        **long,
    )


def _variant_options(variants: list[str], rank: int | None, features: int | None) -> None:
    """--rank and --features belong to linformer and performer: a ConfigError when no chosen variant takes them."""
    for name, value in (("rank", rank), ("features", features)):
        takers = [v for v, spec in VARIANTS.items() if name in spec.options]
        if value is not None and not any(v in takers for v in variants):
            raise ConfigError(f"--{name} is an option of -v {', '.join(takers)}, not of {', '.join(variants)}")


def _warn(tokens) -> None:
    for warning in tokens.warnings:
        typer.echo(f"Warning: {escape_text(warning)}", err=True)


@app.command()
def steps(
    ctx: typer.Context,
    text: Text = None,
    file: File = None,
    tokenizer: Tokenizer = "word",
    variant: Variant = "scaled",
    heads: Heads = 1,
    dim: Dim = 16,
    dk: Dk = None,
    dv: Dv = None,
    d_a: Da = None,
    mask: MaskOpt = None,
    positional: Positional = "none",
    projection: Projection = "random",
    context: Context = None,
    seed: Seed = 0,
    temperature: Temperature = 1.0,
    query: Annotated[
        int,
        typer.Option(
            "--query", help="Which query's slice to show of a per-pair term such as additive's tanh(W₁q + W₂k + b)."
        ),
    ] = 0,
    fmt: Format = None,
    output: Output = None,
    precision: Precision = None,
    color: Color = "auto",
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
    save_svg: SaveSvg = None,
    save_html: SaveHtml = None,
    rank: Rank = None,
    features: Features = None,
    errors: Errors = "strict",
    max_tokens: MaxTokens = MAX_TOKENS,
) -> None:
    """Walk through every stage, tokens to outputs.

    Each stage of the pipeline is its own table, with its formula and shape in the title:
    tokens, X, Q, K, V per head, the scores, the mask, A = softmax(S) with its row sums,
    O per head and the merged O. -f json (or npz) gives every array, exactly.
    With --model DIR: the stages of one layer's attention in a real model (--layer, --head).
    """
    from attncli.models.run import model_result
    from attncli.pipeline import steps as stages
    from attncli.render import steps as render_steps

    check_options(ctx, model, keep=("query",))
    source = read_text(text, file, _v(errors), _say)
    if model is not None:
        result = model_result(load_model(model), source, layer, head)
    else:
        _variant_options([_v(variant)], rank, features)
        config = _run_config(
            tokenizer,
            variant,
            heads,
            dim,
            dk,
            dv,
            d_a,
            mask,
            positional,
            projection,
            seed,
            temperature,
            rank=rank,
            features=features,
        )
        context = _context(context, errors)
        shown = resolve_format(_v(fmt), output)
        render = {"table": "steps-table", "json": "steps-json", "jsonl": "steps-json"}.get(shown, "none")
        result = run(source, config, context=context, trace=True, limits=_limits(max_tokens, "steps", render))
    stages.check_query(result, query)
    _warn(result.tokens)
    doc = documents.Steps("attn steps", lambda d, w: render_steps.show_steps(result, d, w, query), result=result)
    emit(doc, _v(fmt), output, precision, _v(color), save_svg=save_svg, save_html=save_html)


@app.command()
def tokens(
    ctx: typer.Context,
    text: Text = None,
    file: File = None,
    tokenizer: Tokenizer = "word",
    fmt: Format = None,
    output: Output = None,
    precision: Precision = None,
    color: Color = "auto",
    model: ModelDir = None,
    save_svg: SaveSvg = None,
    save_html: SaveHtml = None,
    errors: Errors = "strict",
    max_tokens: MaxTokens = MAX_TOKENS,
) -> None:
    """List the tokens, ids and character offsets.

    Shows each token (escaped), its id, start and end, the text at those offsets, and
    whether the offsets give the input back; -f json|jsonl|csv for tools. --model DIR: the model's tokenizer.
    """
    from attncli.models.run import model_tokens
    from attncli.pipeline.compare import tokens_document
    from attncli.pipeline.tokenize import TooManyTokens, tokenize
    from attncli.render import steps as render_steps

    check_options(ctx, model)
    source = read_text(text, file, _v(errors), _say)
    if not source:
        raise DataError("empty text: nothing to tokenize")
    _limits(max_tokens, "tokens")  # checks --max-tokens itself
    try:
        toks = tokenize(source, tokenizer, max_tokens) if model is None else model_tokens(load_model(model), source)
    except TooManyTokens as e:
        raise DataError(f"{e}: attn tokens lists every one; give a shorter text, or raise --max-tokens") from None
    _warn(toks)
    doc = documents.Records(
        "attn tokens", partial(render_steps.tokens_view, source, toks), doc=tokens_document(source, toks)
    )
    emit(doc, _v(fmt), output, precision, _v(color), save_svg=save_svg, save_html=save_html)


@app.command()
def compare(
    ctx: typer.Context,
    text: Text = None,
    file: File = None,
    tokenizers: Annotated[
        str, typer.Option("--tokenizers", help="Comma-separated: char, word, bpe or paths to tokenizer.json files.")
    ] = "char,word,bpe",
    variants: Annotated[
        str, typer.Option("--variants", help="Comma-separated variant names (see attn variants).")
    ] = "scaled",
    heads: Heads = 1,
    dim: Dim = 16,
    dk: Dk = None,
    dv: Dv = None,
    d_a: Da = None,
    mask: MaskOpt = None,
    positional: Positional = "none",
    projection: Projection = "random",
    seed: Seed = 0,
    temperature: Temperature = 1.0,
    fmt: Format = None,
    output: Output = None,
    precision: Precision = None,
    color: Color = "auto",
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
    save_svg: SaveSvg = None,
    save_html: SaveHtml = None,
    rank: Rank = None,
    features: Features = None,
    errors: Errors = "strict",
    max_tokens: MaxTokens = MAX_TOKENS,
) -> None:
    """Compare tokenizers and variants side by side.

    One summary table (tokens, vocabulary, unknown or byte tokens, n², multiply-adds,
    weight bytes, row entropy, row maximum), then the heatmaps of head 0, side by side
    when the terminal is wide enough. -f json|jsonl|csv gives the summary rows.
    An approximation (linformer, performer) adds its error against exact scaled attention on the
    same inputs: the largest |ΔA| and the mean KL divergence per row.
    --model DIR adds a real model's layer (--layer, --head) as one more column.
    """
    from attncli.models.run import compare_with_model, model_result
    from attncli.pipeline.compare import compare_document, compare_runs, split_names
    from attncli.render import compare as render_compare

    check_options(ctx, model, every=True)
    config = _run_config(
        "word",
        "scaled",
        heads,
        dim,
        dk,
        dv,
        d_a,
        mask,
        positional,
        projection,
        seed,
        temperature,
        rank=rank,
        features=features,
    )
    source = read_text(text, file, _v(errors), _say)
    names = split_names(variants, "variants")
    _variant_options(names, rank, features)
    results = compare_runs(
        source, split_names(tokenizers, "tokenizers"), names, config, _limits(max_tokens, "compare", "table")
    )
    for r in results:
        _warn(r.tokens)
    if model is not None:
        results.append(model_result(load_model(model), source, layer, head))
        doc = compare_with_model(source, results[:-1], results[-1])
    else:
        doc = compare_document(source, results)
    table = partial(render_compare.compare_view, doc["rows"], results)
    emit(
        documents.Records("attn compare", table, doc=doc),
        _v(fmt),
        output,
        precision,
        _v(color),
        save_svg=save_svg,
        save_html=save_html,
    )


@app.command()
def compute(
    input_path: Annotated[
        str | None,
        typer.Option(
            "-i",
            "--input",
            help='JSON file {"q": [[...]], "k": [[...]], "v": [[...]], "params": {...}}; '
            "k, v, params optional; - or nothing reads stdin.",
        ),
    ] = None,
    q: Annotated[str | None, typer.Option("--q", help="Queries [m, d_q] as a .npy file.")] = None,
    k: Annotated[str | None, typer.Option("--k", help="Keys [n, d_k] as a .npy file (default: q).")] = None,
    v: Annotated[str | None, typer.Option("--v", help="Values [n, d_v] as a .npy file (default: k).")] = None,
    variant: Variant = "scaled",
    d_a: Da = None,
    mask: MaskOpt = None,
    rank: Rank = None,
    features: Features = None,
    no_weights: NoWeights = False,
    dtype: Dtype = "float64",
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the learned variants' parameters, unless the JSON gives params.")
    ] = 0,
    temperature: Temperature = 1.0,
    fmt: Format = None,
    output: Output = None,
    precision: Precision = None,
    color: Color = "auto",
    errors: Errors = "strict",
) -> None:
    """Attention on your own Q, K, V (one head, no projection): JSON on stdin or --input, or .npy files.

    --no-weights: the outputs only, in blocks, never an n × n matrix (JSON scores and weights null);
    --dtype float32: everything in float32 (a float32 .npy is taken exactly)."""
    from attncli.core.masks import parse_masks
    from attncli.pipeline import given as core
    from attncli.pipeline.config import check_options as check_long
    from attncli.render import show as render

    _variant_options([_v(variant)], rank, features)
    check_long(
        _v(variant),
        _v(dtype),
        not no_weights,
        parse_masks(mask),
        temperature,  # before reading input
        {"rank": rank, "features": features},
    )

    limits = replace(
        _limits(None, "compute", "table" if resolve_format(_v(fmt), output) == "table" else "none"),
        weights=not no_weights,
        dtype=_v(dtype),
    )
    given = core.read_given(input_path, q, k, v, sys.stdin.buffer, _v(errors), _say, limits)
    result = core.compute(
        given,
        _v(variant),
        mask,
        temperature,
        seed,
        d_a,
        limits,
        rank=rank,
        features=features,
        dtype=_v(dtype),
        weights=not no_weights,
    )
    emit(
        documents.Result("attn compute", partial(render.show, result), result=result),
        _v(fmt),
        output,
        precision,
        _v(color),
    )


@app.command()
def variants(fmt: RecordFormat = None, output: Output = None, color: Color = "auto") -> None:
    """List the attention variants: formula, parameters and their shapes, paper, notes."""
    from attncli.render import show as render

    doc = {"schema": "attncli.variants/1", "rows": [v.record() for v in VARIANTS.values()]}
    table = lambda digits, width: render.variants(doc["rows"], width)  # noqa: E731
    emit(documents.Records("attn variants", table, doc=doc), _v(fmt), output, None, _v(color))


@app.command()
def heads(
    model: ModelRequired,
    text: Text = None,
    file: File = None,
    stat: Stat = "entropy",
    fmt: Format = None,
    output: Output = None,
    precision: Precision = None,
    color: Color = "auto",
    save_svg: SaveSvg = None,
    save_html: SaveHtml = None,
) -> None:
    """Every head of a real model at a glance, layers × heads.

    --stat in each cell, labels for clear patterns (previous-token, diagonal, first-token/sink, broad);
    -f json|jsonl|csv: every statistic of every head."""
    from attncli.models.run import heads_document
    from attncli.render import heads as render_model

    doc = heads_document(load_model(model), read_text(text, file))
    table = lambda d, w: render_model.heads_view(doc, _v(stat), d, w)  # noqa: E731
    emit(
        documents.Records("attn heads", table, doc=doc),
        _v(fmt),
        output,
        precision,
        _v(color),
        save_svg=save_svg,
        save_html=save_html,
    )


def main() -> None:
    """Console-script entry point: run the app; a closed pipe (`| head`) ends quietly."""
    try:
        try:
            app()
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
