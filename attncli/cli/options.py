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

from attncli.api.options import RUN, Option
from attncli.api.own import EVERY
from attncli.errors import meant
from attncli.pipeline.read import MAX_TOKENS

if TYPE_CHECKING:  # the registries load when a command that offers their names is built (see Choice)
    from attncli.pipeline.config import RunConfig

Text = Annotated[str | None, typer.Argument(help="The text; - reads stdin.", show_default=False)]


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
    """The `typer.Option` of the table's option whose id is `name` (api/own.py's EVERY: api/options.py's OPTIONS
    and each command's own): its flags, help and choices; `more`: what only the command line has (--model's
    callback, a metavar, -f's choices of a command's documents)."""
    (o,) = (o for o in EVERY if o.id == name)
    kwargs: dict[str, Any] = {"help": o.help, "show_default": o.show_default} | more
    if o.choices is not None:
        return choice(*o.flags, names=o.choices, **kwargs)
    return typer.Option(*o.flags, **kwargs)


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
    return Annotated[str | None, row("fmt", click_type=Choice(_formats(*kinds)), help="; ".join([help, *notes]) + ".")]


Tokenizer = Annotated[str, row("tokenizer")]
Variant = Annotated[str, row("variant")]
Da = Annotated[int | None, row("d_a")]
MaskOpt = Annotated[str | None, row("mask")]
Temperature = Annotated[float, row("temperature")]
Rank = Annotated[int | None, row("rank")]
Features = Annotated[int | None, row("features")]
File = Annotated[str | None, row("file")]
Format = Annotated[str | None, row("fmt", click_type=Choice(_formats()))]
Output = Annotated[str | None, row("output")]
Precision = Annotated[int | None, row("precision")]
Color = Annotated[str, row("color")]
Width = Annotated[int | None, row("width")]
Theme = Annotated[str, row("theme")]
KeepNewline = Annotated[bool, row("keep_newline")]
MeanHeads = Annotated[bool, row("mean_heads")]
QueryRow = Annotated[str | None, row("query")]
RawTokens = Annotated[bool, row("raw_tokens")]
MatrixOnly = Annotated[bool, row("matrix_only")]
SaveSvg = Annotated[str | None, row("save_svg")]
SaveHtml = Annotated[str | None, row("save_html")]
Errors = Annotated[str, row("errors")]
MaxTokens = Annotated[int, row("max_tokens")]
Lines = Annotated[bool, row("lines")]
NoWeights = Annotated[bool, row("no_weights")]  # long inputs and the approximations (core/efficient.py, core/approx.py)
Dtype = Annotated[str, row("dtype")]
Stats = Annotated[bool, row("stats")]
Query = Annotated[str, row("steps_query")]
Tokenizers = Annotated[str | None, row("tokenizers")]
VariantNames = Annotated[str, row("variants")]
InputPath = Annotated[str | None, row("input_path")]
QPath = Annotated[str | None, row("q")]
KPath = Annotated[str | None, row("k")]
VPath = Annotated[str | None, row("v")]
ParamSeed = Annotated[int, row("compute_seed")]


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
