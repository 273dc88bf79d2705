"""The options the `attn` commands share, each defined once (typer's Annotated aliases).

Choices come from the registries (VARIANTS, POSITIONAL, FORMATS, ...), so a new
variant or format is offered on the command line without a change here.
"""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from attncli.core.variants import VARIANTS
from attncli.io.formats import FORMATS
from attncli.pipeline.config import DTYPES, PROJECTIONS
from attncli.pipeline.embed import POSITIONAL
from attncli.pipeline.read import ERRORS

Text = Annotated[str | None, typer.Argument(help="The text; - reads stdin.", show_default=False)]
File = Annotated[str | None, typer.Option("--file", help="Read the text from this file.")]
Tokenizer = Annotated[str, typer.Option("-t", "--tokenizer", help="char, word, bpe, or a path to a tokenizer.json.")]


def choice(name: str, names) -> type[enum.Enum]:
    """An Enum of registry names, so Typer offers them as choices; `.value` is the name."""
    return enum.Enum(name, {n: n for n in names}, type=str)


VariantName = choice("VariantName", VARIANTS)
PositionalName = choice("PositionalName", POSITIONAL)
ProjectionName = choice("ProjectionName", PROJECTIONS)
FormatName = choice("FormatName", ["table", *FORMATS])
DtypeName = choice("DtypeName", DTYPES)
ColorName = choice("ColorName", ["auto", "always", "never"])
ErrorsName = choice("ErrorsName", ERRORS)

Variant = Annotated[VariantName, typer.Option("-v", "--variant", help="Score function (see `attn variants`).")]
Heads = Annotated[int, typer.Option("--heads", help="Number of heads.")]
Dim = Annotated[int, typer.Option("-d", "--dim", help="Embedding width d_model.")]
Dk = Annotated[int | None, typer.Option("--dk", help="Per-head query/key width (default dim/heads).")]
Dv = Annotated[int | None, typer.Option("--dv", help="Per-head value width (default dim/heads).")]
Da = Annotated[int | None, typer.Option("--d-a", help="Hidden width of the additive variant (default d_k).")]
MaskOpt = Annotated[str | None, typer.Option("--mask", help="causal, window:W, topk:K, comma-separated.")]
Positional = Annotated[
    PositionalName, typer.Option("--positional", help="Positional encoding added to the embeddings.")
]
Projection = Annotated[
    ProjectionName, typer.Option("--projection", help="random W_Q, W_K, W_V, W_O (seeded), or identity: Q = K = V = X.")
]
Context = Annotated[str | None, typer.Option("--context", help="Cross-attention: keys and values from this text.")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of embeddings and weights.")]
Temperature = Annotated[float, typer.Option("--temperature", help="Scores are divided by T.")]
Format = Annotated[
    FormatName | None,
    typer.Option("-f", "--format", help="Output format (default table, or from the -o extension)."),
]
Output = Annotated[str | None, typer.Option("-o", "--output", help="Write to this file (atomically).")]
Precision = Annotated[
    int | None, typer.Option("--precision", help="Digits: tables default 2; formats exact unless given.")
]
Color = Annotated[
    ColorName, typer.Option("--color", help="Colour in tables: auto (none in a pipe, or with NO_COLOR), always, never.")
]
SaveSvg = Annotated[str | None, typer.Option("--save-svg", help="Also save the table as it was shown, as SVG.")]
SaveHtml = Annotated[str | None, typer.Option("--save-html", help="Also save the table as it was shown, as HTML.")]
Errors = Annotated[
    ErrorsName,
    typer.Option(
        "--errors",
        help="Input that is not UTF-8: strict (an error naming "
        "the byte offset) or replace (read as U+FFFD, with a warning).",
    ),
]
MaxTokens = Annotated[
    int,
    typer.Option(
        "--max-tokens",
        help="Refuse a text (or context) of more tokens than "
        "this, before its n² matrices are made; the memory estimate of the run is "
        "limited too (ATTN_MAX_MEMORY, default 2G).",
    ),
]
Lines = Annotated[
    bool,
    typer.Option(
        "--lines",
        help="Each line is its own text: JSONL (or -f csv|table), one "
        "result per line, in order, as it goes; blank lines are skipped.",
    ),
]
# Long inputs and the approximations (attncli.core.efficient, attncli.core.approx):
NoWeights = Annotated[
    bool,
    typer.Option(
        "--no-weights",
        help="Outputs only, never the n × n weights (long inputs): "
        "-v scaled, dot, cosine, multiplicative (--mask causal at most), linformer "
        "or performer (no mask); JSON has null scores and weights.",
    ),
]
Dtype = Annotated[
    DtypeName,
    typer.Option(
        "--dtype", help="float64 (exact, the default) or float32 (Q, K, V, scores, weights, outputs: half the memory)."
    ),
]
Rank = Annotated[
    int | None,
    typer.Option("--rank", help="-v linformer: the number of key groups R (default 8).", show_default=False),
]
Features = Annotated[
    int | None,
    typer.Option("--features", help="-v performer: the number of random features F (default 64).", show_default=False),
]
RecordFormatName = choice("RecordFormatName", ["table", "json", "jsonl", "csv"])
RecordFormat = Annotated[
    RecordFormatName | None, typer.Option("-f", "--format", help="Output format (default table, or from -o).")
]


def _v(choice_value):
    """The plain string of an Enum choice (or None)."""
    return getattr(choice_value, "value", choice_value)
