"""The `attn` command: parse options, call the pipeline, hand the result to a renderer.

The only module that prints or exits. Errors from the core (AttnError) become
one line `Error: ...` on stderr and the error's exit code, here in one place.
"""

from __future__ import annotations

import enum
import os
import sys
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from attncli import __version__
from attncli.attention import VARIANTS
from attncli.embed import POSITIONAL
from attncli.errors import AttnError, ConfigError, DataError  # noqa: F401  (commands raise them)
from attncli.formats import FORMATS
from attncli.inputs import iter_lines, open_lines, read_text
from attncli.output import (  # noqa: F401  (the emit path every command uses)
    console, emit, emit_lines, emit_records, emit_result, line_progress, resolve_format, write_output,
)
from attncli.pipeline import PROJECTIONS, RunConfig, run


def fail(error: AttnError):
    """Print the one line `Error: ...` and exit with the error's code (ATTN_DEBUG=1 shows the traceback)."""
    if os.environ.get("ATTN_DEBUG") == "1":
        raise error
    typer.echo(f"Error: {error}", err=True)
    raise typer.Exit(error.exit_code)


class AttnGroup(TyperGroup):
    """Translates the core's errors, and unexpected ones, into one line and an exit code."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except AttnError as e:
            fail(e)
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
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """Inspect attention in the terminal: tokens, scores, weights and outputs, exact and reproducible."""


# ---- options shared by the commands (one definition each) ------------------------------------------

Text = Annotated[Optional[str], typer.Argument(help="The text; - reads stdin.", show_default=False)]
File = Annotated[Optional[str], typer.Option("--file", help="Read the text from this file.")]
Tokenizer = Annotated[str, typer.Option("-t", "--tokenizer", help="char, word, bpe, or a path to a tokenizer.json.")]
def choice(name: str, names) -> type[enum.Enum]:
    """An Enum of registry names, so Typer offers them as choices; `.value` is the name."""
    return enum.Enum(name, {n: n for n in names}, type=str)


VariantName = choice("VariantName", VARIANTS)
PositionalName = choice("PositionalName", POSITIONAL)
ProjectionName = choice("ProjectionName", PROJECTIONS)
FormatName = choice("FormatName", ["table", *FORMATS])
ColorName = choice("ColorName", ["auto", "always", "never"])

Variant = Annotated[VariantName, typer.Option("-v", "--variant",
                                      help="Score function (see `attn variants`).")]
Heads = Annotated[int, typer.Option("--heads", help="Number of heads.")]
Dim = Annotated[int, typer.Option("-d", "--dim", help="Embedding width d_model.")]
Dk = Annotated[Optional[int], typer.Option("--dk", help="Per-head query/key width (default dim/heads).")]
Dv = Annotated[Optional[int], typer.Option("--dv", help="Per-head value width (default dim/heads).")]
Da = Annotated[Optional[int], typer.Option("--d-a", help="Hidden width of the additive variant (default d_k).")]
MaskOpt = Annotated[Optional[str], typer.Option("--mask", help="causal, window:W, topk:K, comma-separated.")]
Positional = Annotated[PositionalName, typer.Option("--positional",
                                         help="Positional encoding added to the embeddings.")]
Projection = Annotated[ProjectionName, typer.Option("--projection",
                                         help="random W_Q, W_K, W_V, W_O (seeded), or identity: Q = K = V = X.")]
Context = Annotated[Optional[str], typer.Option("--context", help="Cross-attention: keys and values from this text.")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of embeddings and weights.")]
Temperature = Annotated[float, typer.Option("--temperature", help="Scores are divided by T.")]
Format = Annotated[Optional[FormatName], typer.Option("-f", "--format",
                                               help="Output format (default table, or from the -o extension).")]
Output = Annotated[Optional[str], typer.Option("-o", "--output", help="Write to this file (atomically).")]
Precision = Annotated[Optional[int], typer.Option("--precision", help="Digits: tables default 2; formats exact unless given.")]
Color = Annotated[ColorName, typer.Option("--color",
                                    help="Colour in tables: auto (none in a pipe, or with NO_COLOR), always, never.")]
SaveSvg = Annotated[Optional[str], typer.Option("--save-svg", help="Also save the table as it was shown, as SVG.")]
SaveHtml = Annotated[Optional[str], typer.Option("--save-html", help="Also save the table as it was shown, as HTML.")]
Lines = Annotated[bool, typer.Option("--lines", help="Each line is its own text: JSONL (or -f csv|table), one "
                                     "result per line, in order, as it goes; blank lines are skipped.")]


def _v(choice_value):
    """The plain string of an Enum choice (or None)."""
    return getattr(choice_value, "value", choice_value)


# ---- commands ------------------------------------------------------------------------------------


@app.command()
def show(
    text: Text = None, file: File = None, tokenizer: Tokenizer = "word", variant: Variant = "scaled",
    heads: Heads = 1, dim: Dim = 16, dk: Dk = None, dv: Dv = None, d_a: Da = None, mask: MaskOpt = None,
    positional: Positional = "none", projection: Projection = "random", context: Context = None,
    seed: Seed = 0, temperature: Temperature = 1.0, fmt: Format = None, output: Output = None,
    precision: Precision = None, color: Color = "auto", lines: Lines = False, save_svg: SaveSvg = None,
    save_html: SaveHtml = None,
) -> None:
    """Show the attention matrix and the output vectors of TEXT."""
    from attncli import render

    config = RunConfig(tokenizer=tokenizer, variant=_v(variant), heads=heads, dim=dim, d_k=dk, d_v=dv, d_a=d_a,
                       mask=tuple(mask.split(",")) if mask else (), positional=_v(positional),
                       projection=_v(projection), seed=seed, temperature=temperature)
    pictures = {"save_svg": save_svg, "save_html": save_html, "title": "attn show"}
    if lines:
        return show_lines(text, file, config, context, _v(fmt), output, precision, _v(color), render.show, pictures)
    result = run(read_text(text, file), config, context=context)
    emit_result(result, _v(fmt), output, precision, _v(color), render.show, **pictures)


def show_lines(text, file, config, context, fmt, output, precision, color, render, pictures) -> None:
    """`attn show --lines`: run each non-blank line as it is read; its number goes into the output."""
    config.resolve()  # a bad option fails before the first line is read
    stream, name = open_lines(text, file)
    with stream, line_progress(stream, name, color, output) as counted:
        def results():
            found = False
            for number, line in iter_lines(counted, name):
                if line.strip():
                    found = True
                    try:
                        yield number, run(line, config, context=context)
                    except AttnError as e:
                        raise type(e)(f"{name} line {number}: {e}") from None
            if not found:
                raise DataError(f"no text: every line of {name} is blank")

        emit_lines(results(), fmt, output, precision, color, render, **pictures)


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
