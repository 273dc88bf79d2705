"""The options the `attn` commands share, each defined once: Typer's Annotated aliases, gathered in
small dataclasses (`Source`, `Out`) that `@options` hands to a command as one object each, and the options of a
text run (`Run`), made from their declarations in the API's table (api/options.py), handed over as a dict.

Choices come from the registries (VARIANTS, POSITIONAL, FORMATS, ...), so a new
variant or format is offered on the command line without a change here.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._types import TyperChoice

from attncli.api.options import OPTIONS, RUN, Option
from attncli.errors import meant
from attncli.pipeline.read import ERRORS, MAX_TOKENS

if TYPE_CHECKING:  # the registries load when a command that offers their names is built (see Choice)
    from attncli.pipeline.config import RunConfig

Text = Annotated[str | None, typer.Argument(help="The text; - reads stdin.", show_default=False)]
File = Annotated[str | None, typer.Option("--file", help="Read the text from this file.")]


class Choice(TyperChoice):
    """One of a registry's names, read from the registry when the command that offers it is built (a choice
    of variants loads the variants for `attn show`, not for `attn --help`). The command receives the name."""

    def __init__(self, names: Callable[[], Iterable[str]]):
        self.names = names
        self.case_sensitive = True

    @functools.cached_property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(self.names())

    def get_invalid_choice_message(self, value: Any, ctx: Any) -> str:
        """Click's message, and the name a typo was likely meant to be (-v scaeld: scaled)."""
        close = meant(str(value), self.choices)
        return super().get_invalid_choice_message(value, ctx).rstrip(".") + (
            f": did you mean {close!r}?" if close else ""
        )


def choice(*flags: str, names: Callable[[], Iterable[str]], help: str, **kwargs: Any) -> Any:
    """A `typer.Option` whose value is one of `names()` (a registry's keys), offered as choices in --help."""
    return typer.Option(*flags, click_type=Choice(names), help=help, **kwargs)


def row(name: str, **more: Any) -> Any:
    """The `typer.Option` of the table's option `name` (api/options.py's OPTIONS): its flags, help and choices;
    `more`: what only the command line has (--model's callback)."""
    (o,) = (o for o in OPTIONS if o.name == name)
    if o.choices is not None:
        return choice(*o.flags, names=o.choices, help=o.help, show_default=o.show_default, **more)
    return typer.Option(*o.flags, help=o.help, show_default=o.show_default, **more)


def typed(o: Option) -> Any:
    """The table's option `o` as Typer reads a parameter: its type (None allowed where the default is None) and
    its `row`."""
    return Annotated[o.type | None if o.default is None else o.type, row(o.name)]


def _formats(*kinds: str) -> Callable[[], Iterable[str]]:
    def names() -> Iterable[str]:
        from attncli.io import documents  # late: start-up (a registry loads only when its option is built)
        from attncli.io.formats import FORMATS, formats_for

        written = {name for kind in kinds for name in formats_for(getattr(documents, kind))}
        return [name for name in FORMATS if name in written or not kinds]

    return names


def format_option(kinds: tuple[str, ...]) -> Any:
    """-f/--format offering exactly what a command writes: the formats of its kinds of document (io/documents.py),
    in FORMATS' order. The first kind is the command's own; the help says what each other kind (written with an
    option: --lines, --rollout) takes when that is less."""
    from attncli.io import documents  # late: start-up (a registry loads only when its option is built)
    from attncli.io.formats import formats_for

    first, *more = (getattr(documents, kind) for kind in kinds)
    notes = [
        f"with {kind.option}: {', '.join(formats_for(kind))} (default {kind.default_format})"
        for kind in more
        if set(formats_for(kind)) < set(formats_for(first)) or kind.default_format != first.default_format
    ]
    help = f"Output format (default {first.default_format}, or from the -o extension)"
    return Annotated[str | None, choice("-f", "--format", names=_formats(*kinds), help="; ".join([help, *notes]) + ".")]


def _themes() -> Iterable[str]:
    from attncli.io.formats import THEMES  # late: start-up (a registry loads only when its option is built)

    return THEMES


def _config(name: str) -> Callable[[], Iterable[str]]:
    def names() -> Iterable[str]:
        from attncli.pipeline import config  # late: start-up (a registry loads only when its option is built)

        return getattr(config, name)

    return names


Tokenizer = Annotated[str, row("tokenizer")]
Variant = Annotated[str, row("variant")]
Da = Annotated[int | None, row("d_a")]
MaskOpt = Annotated[str | None, row("mask")]
Temperature = Annotated[float, row("temperature")]
Rank = Annotated[int | None, row("rank")]
Features = Annotated[int | None, row("features")]
Format = Annotated[
    str | None,
    choice("-f", "--format", names=_formats(), help="Output format (default table, or from the -o extension)."),
]
Output = Annotated[str | None, typer.Option("-o", "--output", help="Write to this file (atomically).")]
Precision = Annotated[
    int | None, typer.Option("--precision", help="Digits: tables default 2; formats exact unless given.")
]
Color = Annotated[
    str,
    choice(
        "--color",
        names=lambda: ("auto", "always", "never"),
        help="Colour in tables: auto (none in a pipe, or with NO_COLOR), always, never.",
    ),
]
Width = Annotated[
    int | None,
    typer.Option(
        "--width",
        help="Columns of the table and of --save-svg/--save-html (default: the terminal's width, 80 in a pipe).",
        show_default=False,
    ),
]
Theme = Annotated[
    str, choice("--theme", names=_themes, help="Pictures (svg, html): light (for slides and paper) or dark.")
]
KeepNewline = Annotated[
    bool,
    typer.Option("--keep-newline", help="Keep the newline that ends stdin or --file as part of the text (a token)."),
]
MeanHeads = Annotated[bool, typer.Option("--mean-heads", help="Draw the mean of the heads' weights (table only).")]
QueryRow = Annotated[
    str | None,
    typer.Option(
        "--query",
        help="One query's weights as bars with their numbers: its index or its token (table only).",
        show_default=False,
    ),
]
RawTokens = Annotated[
    bool,
    typer.Option(
        "--raw-tokens",
        help="Label the tokens as the vocabulary writes them (ĠParis, ▁Paris, ##s), not as their text (␣Paris).",
    ),
]
MatrixOnly = Annotated[
    bool, typer.Option("--matrix-only", help="Only the attention matrix: a picture for a slide or a paper.")
]
SaveSvg = Annotated[str | None, typer.Option("--save-svg", help="Also save the table as it was shown, as SVG.")]
SaveHtml = Annotated[str | None, typer.Option("--save-html", help="Also save the table as it was shown, as HTML.")]
Errors = Annotated[
    str,
    choice(
        "--errors",
        names=lambda: ERRORS,
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
    str,
    choice(
        "--dtype",
        names=_config("DTYPES"),
        help="float64 (exact, the default) or float32 (Q, K, V, scores, weights, outputs: half the memory).",
    ),
]
Stats = Annotated[
    bool,
    typer.Option(
        "--stats",
        help='Head statistics under the matrix (always for up to 12 tokens); with -f json they go under "stats".',
    ),
]
Query = Annotated[
    str,
    typer.Option(
        "--query",
        help="Which query's slice to show of a per-pair term such as additive's tanh(W₁q + W₂k + b): its index or "
        "its token (as text, with or without its space, or as the vocabulary writes it).",
    ),
]
Tokenizers = Annotated[
    str | None,
    typer.Option(
        "--tokenizers",
        help="Comma-separated: char, word, bpe or paths to tokenizer.json files (default char,word,bpe; with "
        "several --model, none unless given).",
        show_default=False,
    ),
]
VariantNames = Annotated[str, typer.Option("--variants", help="Comma-separated variant names (see attn variants).")]
InputPath = Annotated[
    str | None,
    typer.Option(
        "-i",
        "--input",
        help='JSON file {"q": [[...]], "k": [[...]], "v": [[...]], "params": {...}}; '
        "k, v, params optional; - or nothing reads stdin.",
    ),
]
QPath = Annotated[str | None, typer.Option("--q", help="Queries [m, d_q] as a .npy file.")]
KPath = Annotated[str | None, typer.Option("--k", help="Keys [n, d_k] as a .npy file (default: q).")]
VPath = Annotated[str | None, typer.Option("--v", help="Values [n, d_v] as a .npy file (default: k).")]
ParamSeed = Annotated[
    int, typer.Option("--seed", help="Seed of the learned variants' parameters, unless the JSON gives params.")
]


# ---- option groups -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where the text comes from, and how much of it a run may take."""

    text: Text = None
    file: File = None
    errors: Errors = "strict"
    max_tokens: MaxTokens = MAX_TOKENS
    keep_newline: KeepNewline = False


@dataclass(frozen=True)
class Rows:
    """A group of options declared in the API's table (api/options.py): each row a command that takes it offers
    (its `commands`), and the command receives a dict of their values by keyword."""

    rows: tuple[Option, ...]

    def offered(self, command: str, skip: tuple[str, ...]) -> list[inspect.Parameter]:
        """The rows `command` takes (but `skip`) as its parameters, each annotated with its Typer option."""
        return [
            inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=typed(o))
            for o in self.rows
            if command in o.commands.split() and o.name not in skip
        ]


Run = Rows(RUN)  # the choices of a text run (show, steps, view, explore; compare takes all but -t, -v, --context)


def run_config(run: dict[str, Any], variants: list[str] | None = None, **more: Any) -> RunConfig:
    """The RunConfig of a command's `Run` values (`more`: dtype, weights); --rank and --features must belong to
    one of the `variants` run (default: -v)."""
    from attncli.api.config import run_config as config  # late: start-up (not for --help)

    return config(**{k: v for k, v in run.items() if k != "context"}, variants=variants, **more)


@dataclass(frozen=True)
class Out:
    """Where the result goes and how it looks."""

    fmt: Format = None
    output: Output = None
    precision: Precision = None
    color: Color = "auto"
    save_svg: SaveSvg = None
    save_html: SaveHtml = None
    width: Width = None
    theme: Theme = "light"


def options(
    *, skip: tuple[str, ...] = (), writes: tuple[str, ...] = (), **groups: type | Rows
) -> Callable[[Callable], Callable]:
    """Give a command its option groups: each dataclass's fields become the command's own parameters
    (Typer reads the signature), and the command receives one instance per group, by the group's name.
    Fields named in `skip` are not offered (they keep their defaults). Choices arrive as plain strings.
    `writes` names the kinds of document the command writes (io/documents.py): its -f offers their formats.
    """

    def decorate(command: Callable) -> Callable:
        hints = typing.get_type_hints(command, include_extras=True)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation), kind=inspect.Parameter.KEYWORD_ONLY)
            for name, p in inspect.signature(command).parameters.items()
            if name not in groups
        ]
        context = [p for p in own if p.annotation is typer.Context]
        flat = []
        for group in groups.values():
            if isinstance(group, Rows):
                flat += group.offered(command.__name__, skip)
                continue
            group_hints = typing.get_type_hints(group, include_extras=True)
            flat += [
                inspect.Parameter(
                    f.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=f.default,
                    annotation=format_option(writes) if f.name == "fmt" and writes else group_hints[f.name],
                )
                for f in fields(group)
                if f.name not in skip
            ]

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            built = {
                name: {p.name: kwargs.pop(p.name) for p in group.offered(command.__name__, skip)}
                if isinstance(group, Rows)
                else group(
                    **{f.name: kwargs.pop(f.name) for f in fields(group) if f.name in kwargs and f.name not in skip}
                )
                for name, group in groups.items()
            }
            return command(**kwargs, **built)

        params = [*context, *flat, *(p for p in own if p not in context)]  # in --help: the groups, then its own
        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return decorate
