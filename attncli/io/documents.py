"""What a command hands to `emit`: a document, its table, and what it holds for the data formats.

A document knows nothing of formats: the entries of `attncli.io.formats.FORMATS` say which
document kinds they write and how. Each kind is a small frozen dataclass:

- `Result`: one AttentionResult (`attn show`, `attn compute`), with optional extra keys (`--stats`);
- `Lines`: AttentionResults one per input line, written as they come (`attn show --lines`);
- `Steps`: every stage of one run (`attn steps`);
- `Records`: a small document whose rows are flat dicts (`attn tokens`, `compare`, `variants`, `heads`);
- `Rollout`: a model's attention rollout (`attn show --model DIR --rollout`);
- `View`: the interactive page's data (`attn view`); a document that can be drawn as that page says how in
  its `view` (`--save-html`, `-f html`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: documents are built before any writer loads
    from rich.console import RenderableType

    from attncli.models.runs.run import Rollout as ModelRollout
    from attncli.pipeline.result import AttentionResult

Table = Callable[[int, int], "RenderableType"]  # (precision, width) -> what the terminal shows


@dataclass(frozen=True)
class Document:
    """`command` names it in messages and on the SVG's window bar."""

    command: str
    view: Callable[[], View] | None = field(default=None, kw_only=True)  # its interactive page, if it has one
    default_format = "table"
    pictured = True  # the picture formats (table, svg, html) draw it; a page's data is written, never drawn
    option = ""  # the option that makes a command write this kind rather than its own (--lines), if any

    def renderables(self, precision: int, width: int) -> Iterator[RenderableType]:
        """What a terminal, an SVG or an HTML page shows, in order."""
        raise NotImplementedError

    @classmethod
    def not_available(cls, command: str, fmt: str, choices: list[str]) -> str:
        """The message when -f `fmt` cannot write this kind of document of `command`; `choices` are the data
        formats that can."""
        return f"-f {fmt} is not available for {command}: use {_either(choices)}"

    def no_pictures(self, fmt: str) -> str:
        return f"--save-svg and --save-html picture the table: drop -f {fmt}, or run twice"


@dataclass(frozen=True)
class Tabled(Document):
    """A document the terminal shows as one renderable: `table(precision, width)`."""

    table: Table

    def renderables(self, precision: int, width: int) -> Iterator[RenderableType]:
        yield self.table(precision, width)


@dataclass(frozen=True)
class Result(Tabled):
    """One text's attention (`attn show`): its result, and the keys written after the JSON's own."""

    result: AttentionResult = field(kw_only=True)
    extra: dict[str, Any] | None = field(default=None, kw_only=True)  # more keys after the JSON's own


@dataclass(frozen=True)
class Lines(Document):
    """`(line number, result)` pairs, each written as soon as it is computed; `line_table` draws one result."""

    results: Iterable[tuple[int, AttentionResult]] = field(kw_only=True)
    line_table: Callable[[AttentionResult, int, int], RenderableType] = field(kw_only=True)
    extra: Callable[[AttentionResult], dict[str, Any]] | None = field(default=None, kw_only=True)
    # each(write) does write(i, number, result) -> bytes for every line where its run is done (several processes):
    # instead of `results`, when the output is data
    each: Callable[[Callable[[int, int, AttentionResult], bytes]], Iterable[bytes]] | None = field(
        default=None, kw_only=True
    )
    default_format = "jsonl"
    option = "--lines"

    def written(self, write: Callable[[int, int, AttentionResult], bytes]) -> Iterable[bytes]:
        """write(i, line number, result) for the i-th result, in order: through `each` if given."""
        if self.each is not None:
            return self.each(write)
        return (write(i, number, result) for i, (number, result) in enumerate(self.results))

    def renderables(self, precision: int, width: int) -> Iterator[RenderableType]:
        from rich.rule import Rule  # late: start-up (Rich loads only when a table is drawn)
        from rich.text import Text

        from attncli.io.escape import escape_token

        for number, result in self.results:
            yield Rule(Text(f"line {number}: ", style="bold") + Text(escape_token(result.text or "")), align="left")
            yield self.line_table(result, precision, width)

    @classmethod
    def not_available(cls, command: str, fmt: str, choices: list[str]) -> str:
        return f"--lines streams one result per line: use -f jsonl (the default), csv or table, not {fmt}"

    def no_pictures(self, fmt: str) -> str:
        return f"--save-svg and --save-html picture the tables: add -f table (not {fmt})"


@dataclass(frozen=True)
class Steps(Tabled):
    """Every stage of one text's run, tokens to outputs (`attn steps`)."""

    result: AttentionResult = field(kw_only=True)
    extra: dict[str, Any] | None = field(default=None, kw_only=True)  # more keys after the JSON's own (--contrib)


@dataclass(frozen=True)
class Records(Tabled):
    """A table of records (`doc`: a schema, its keys, and rows of flat dicts), as JSON, JSONL or CSV."""

    doc: dict[str, Any] = field(kw_only=True)  # {"schema": ..., ..., "rows": [flat dicts]}


@dataclass(frozen=True)
class Rollout(Tabled):
    """A model's attention rollout through its layers (`attn show --rollout`)."""

    rollout: ModelRollout = field(kw_only=True)
    option = "--rollout"

    @classmethod
    def not_available(cls, command: str, fmt: str, choices: list[str]) -> str:
        return f"-f {fmt} is not available for --rollout: use {', '.join(choices)}"


@dataclass(frozen=True)
class View(Tabled):
    """The page's data (`doc`, schema attncli.view/4, from attncli.io.view) and `page(doc)`, the renderer that
    builds the self-contained HTML around it."""

    doc: dict[str, Any] = field(kw_only=True)
    page: Callable[[dict[str, Any]], str] = field(kw_only=True)
    default_format = "html"
    pictured = False

    @classmethod
    def not_available(cls, command: str, fmt: str, choices: list[str]) -> str:
        return f"{command} writes an HTML page (-o FILE.html) or its data (-f json), not {fmt}"


def _either(names: list[str]) -> str:
    """'json, jsonl or csv'"""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
