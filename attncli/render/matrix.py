"""The layout engine of every matrix of numbers attn draws: it never cuts a number or a label.

A `Matrix` is laid out when Rich renders it, for the width it is given (the
terminal, `--width`, or its share of a row of heads). It takes the first of these
forms that fits, in this fixed order:

1. every number at full precision, tokens as column headers;
2. the same with index numbers as headers (the rows say which token each index is);
3. index numbers on both axes, with a key of the tokens underneath;
4. to 6. the same three with compact cells: weights as whole percentages
   (28 = 0.28), other numbers with their leading zero dropped (.08 = 0.08),
   said under the table;
7. weights: a heatmap with a legend (`attncli.render.heatmap`); other numbers:
   compact cells with the middle columns elided behind a `…` column and a line
   that says how many and which, and how to see them all.

Rows beyond `max_rows` are elided the same way, behind a `⋮` row and a line.
The largest number of each row of weights or scores carries ▸ (and is bold), so
the row maximum reads without colour: in a pipe, with NO_COLOR, on paper.

>>> fmt(-0.001, 2), fmt(-math.inf, 2), compact(0.283, True), compact(-0.531, False)
('0.00', '−∞', '28', '-.53')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from attncli.io.escape import escape_token
from attncli.pipeline.tokenize import SECOND_MARK
from attncli.render.heatmap import Heatmap
from attncli.render.style import SCALES, shade, system_of
from attncli.render.units import Units

MARK = "▸"  # before the row maximum
ELIDED = "…"  # the header and cells of an elided column
ELIDED_ROW = "⋮"
HEATMAP_ABOVE = 48  # weights with more queries than this are drawn as a heatmap, whatever the width


def fmt(x: float, precision: int) -> str:
    """A number at full precision; −∞ for a masked score; never "-0.00"."""
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    text = f"{x:.{precision}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def compact(x: float, percent: bool) -> str:
    """Two digits: a weight as a whole percentage, another number without its leading zero."""
    if math.isinf(x):
        return fmt(x, 0)
    if percent:
        return str(round(x * 100))
    text = fmt(x, 2)
    return text.replace("0.", ".", 1) if text.lstrip("-").startswith("0.") else text


@dataclass(frozen=True)
class Form:
    """One way to lay a matrix out: compact cells or not; how the axes are labelled; columns kept."""

    compact: bool
    labels: str  # "tokens": tokens on both axes; "indexed": index headers, "i token" rows; "numbers": indices
    cols: tuple[int | None, ...] = ()  # the columns shown (None: the elision column); () = all


LABELS = ("tokens", "indexed", "numbers")


def columns_shown(n: int, keep: int) -> list[int | None]:
    """Indices 0..n-1 with the middle ones replaced by one None when only `keep` fit.

    >>> columns_shown(5, 10)
    [0, 1, 2, 3, 4]
    >>> columns_shown(10, 5)
    [0, 1, None, 8, 9]
    """
    if n <= keep:
        return list(range(n))
    head = (keep - 1) // 2 + (keep - 1) % 2
    tail = keep - 1 - head
    return [*range(head), None, *range(n - tail, n)]


def _span(hidden: list[int]) -> str:
    return f"{hidden[0]}–{hidden[-1]}" if len(hidden) > 1 else f"{hidden[0]}"


class Matrix:
    """A Rich renderable: `array` [rows, cols] with labelled axes, laid out to fit when it is drawn.

    `kind` is "weights" (shaded, ▸ on the row maximum, a heatmap when no table fits), "scores" (▸ on the
    row maximum) or "values". `cols` None numbers the columns (dimensions). `masked` [rows, cols] cells
    show ·; `row_sum` adds a Σ column.
    """

    def __init__(
        self,
        array: np.ndarray,
        rows: Sequence[str],
        cols: Sequence[str] | None,
        title: str | None = None,
        precision: int = 2,
        kind: str = "values",
        masked: np.ndarray | None = None,
        row_sum: bool = False,
        max_rows: int = 24,
        names: tuple[str, str] = ("queries", "keys"),
        divider: int | None = None,
        scale: str = "sqrt",
    ):
        self.array = array  # [rows, cols]
        self.scale = scale  # how a weight's shade is placed on the blue scale: a key of style.SCALES
        self.rows = [escape_token(t) for t in rows]
        self.cols = None if cols is None else [escape_token(t) for t in cols]
        self.title, self.precision, self.kind = title, precision, kind
        self.masked = masked
        self.row_sum = row_sum
        self.names = names if cols is not None else (names[0], "dims")
        self.shown_rows = columns_shown(len(self.rows), max(3, max_rows))
        self.quiet = False  # True: the notes under the table are left to the caller (a row of matrices)
        self.divider = divider  # a sentence pair's second segment starts at this row and column: ‖ before its index
        self._marks = self._row_maxima() if kind != "values" and cols is not None else None
        self._column_widths: dict[tuple[int, bool, str], int] = {}  # (column, compact, labels) -> its width

    # ---- what each cell says ------------------------------------------------------------------------

    def _row_maxima(self) -> np.ndarray:  # -> [rows, cols] bool
        a = np.where(np.isfinite(self.array), self.array, -np.inf)
        if self.masked is not None:
            a = np.where(self.masked, -np.inf, a)
        top = a.max(axis=1, keepdims=True)
        return (a == top) & np.isfinite(top) & ((top > 0) if self.kind == "weights" else True)

    def _cell(self, i: int, j: int, short: bool) -> str:
        if self.masked is not None and self.masked[i, j] and self.kind == "weights":
            return "·"
        v = float(self.array[i, j])
        number = compact(v, self.kind == "weights") if short else fmt(v, self.precision)
        if self._marks is None:
            return number
        return (MARK if self._marks[i, j] else " ") + number

    def _sum(self, i: int, short: bool) -> str:
        row = self.array[i]
        total = float(row[np.isfinite(row)].sum())
        return compact(total, self.kind == "weights") if short else fmt(total, self.precision)

    def _header(self, j: int | None, labels: str) -> str:
        if j is None:
            return ELIDED
        return self.cols[j] if self.cols is not None and labels == "tokens" else self._index(j)

    def _index(self, i: int) -> str:  # an index header or label; ‖ before the pair's second segment
        return (SECOND_MARK if i == self.divider else "") + str(i)

    def _row_label(self, i: int, labels: str) -> str:
        if labels == "tokens" or (self.cols is None and labels == "indexed"):
            return self.rows[i]
        width = len(str(len(self.rows) - 1)) + (self.divider is not None)
        return f"{self._index(i):>{width}}" + ("" if labels == "numbers" else f" {self.rows[i]}")

    # ---- widths ---------------------------------------------------------------------------------------

    def _widths(self, form: Form) -> list[int]:
        """The width of each column of `form`: the row labels, the data columns, the Σ column."""
        rows = [i for i in self.shown_rows if i is not None]
        label = max([cell_len(self._row_label(i, form.labels)) for i in rows] + [1])
        out = [label]
        for j in form.cols or range(self.array.shape[1]):
            out.append(1 if j is None else self._column_width(j, form.compact, form.labels, rows))
        if self.row_sum:
            out.append(max(cell_len(self._sum(i, form.compact)) for i in rows))
        return out

    def _column_width(self, j: int, short: bool, labels: str, rows: list[int]) -> int:
        """The width of data column `j` (its cells and its header), measured once: `choose` asks again and again."""
        key = (j, short, labels)
        if key not in self._column_widths:
            cells = [cell_len(self._cell(i, j, short)) for i in rows]
            self._column_widths[key] = max([*cells, cell_len(self._header(j, labels))])
        return self._column_widths[key]

    def width(self, form: Form) -> int:
        """Terminal columns `form` takes: its columns and one space between each two."""
        widths = self._widths(form)
        return sum(widths) + len(widths) - 1

    def forms(self) -> list[Form]:
        """The forms without elision, in the order they are tried (duplicates dropped)."""
        labels = LABELS if self.cols is not None else ("tokens", "numbers")
        return [Form(short, lab) for short in (False, True) for lab in labels]

    def choose(self, width: int) -> Form | None:
        """The first form that fits `width`; None: weights go to a heatmap."""
        if self.kind == "weights" and len(self.rows) > HEATMAP_ABOVE:
            return None
        for form in self.forms():
            if self.width(form) <= width:
                return form
        if self.kind == "weights":
            return None
        n = self.array.shape[1]
        for labels in ("tokens", "numbers"):  # tokens on the rows if they fit at all: then the most columns
            full, short = self._most_columns(n, labels, width, False), self._most_columns(n, labels, width, True)
            if full or short:  # the most columns; full precision when it shows as many
                return Form(full < short, labels, tuple(columns_shown(n, max(full, short))))
        return Form(True, "numbers", tuple(columns_shown(n, 2)))  # the narrowest there is

    def _most_columns(self, n: int, labels: str, width: int, short: bool) -> int:
        """The most of the n columns (2..n-1, the middle ones elided) whose form fits `width`, found by bisection
        (a form with more columns is never narrower); 0 if not even 2 fit."""

        def fits(keep: int) -> bool:
            return self.width(Form(short, labels, tuple(columns_shown(n, keep)))) <= width

        if n < 3 or not fits(2):
            return 0
        low, high = 2, n - 1  # fits(low); the answer is in low..high
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if fits(mid) else (low, mid - 1)
        return low

    def narrowest(self) -> int:
        """The width of the densest form with every column (what a row of heads packs by)."""
        return min(self.width(f) for f in self.forms())

    # ---- drawing --------------------------------------------------------------------------------------

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = self.width(self.forms()[0])
        title = cell_len(self.title) if self.title else 0
        return Measurement(min(widest, options.max_width), min(max(widest, title), options.max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        form = self.choose(options.max_width)
        if form is None:
            tokens = (self.rows, self.cols or [])
            yield Heatmap(self.array, self.title or "attention weights", tokens=tokens, scale=self.scale)
            return
        if self.title:
            yield Units(self.title, style="bold")
        yield self.table(form, system_of(console))
        notes = [] if self.quiet else self.notes(form)
        if notes:
            yield Units(" · ".join(notes), style="dim")

    def table(self, form: Form, system: str | None) -> Table:
        widths = self._widths(form)
        cols = list(form.cols or range(self.array.shape[1]))
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=0, collapse_padding=True)
        table.add_column(Text(""), no_wrap=True, width=widths[0])
        for j, w in zip(cols, widths[1:]):
            head = self._header(j, form.labels)
            table.add_column(Text(head, style="bold" if j is not None else "dim"), justify="right", width=w)
        if self.row_sum:
            table.add_column(Text("Σ", style="dim"), justify="right", width=widths[-1])
        for i in self.shown_rows:
            if i is None:
                table.add_row(*(Text(ELIDED_ROW, style="dim") for _ in widths))
                continue
            cells = [Text(self._row_label(i, form.labels))]
            for j in cols:
                cells.append(self._styled(i, j, form, system))
            if self.row_sum:
                cells.append(Text(self._sum(i, form.compact), style="dim"))
            table.add_row(*cells)
        return table

    def _styled(self, i: int, j: int | None, form: Form, system: str | None) -> Text:
        if j is None:
            return Text(ELIDED, style="dim")
        text = self._cell(i, j, form.compact)
        top = self._marks is not None and bool(self._marks[i, j])
        v = float(self.array[i, j])
        if text == "·" or not math.isfinite(v):
            return Text(text, style="dim")
        if self.kind == "weights":
            return Text(text, style=shade(v, system, bold=top, scale=self.scale))
        return Text(text, style="bold" if top else "")

    def notes(self, form: Form) -> list[str]:
        """What the reader needs to read this form: compact cells, the key of indices, what is hidden."""
        out = []
        if form.compact and (self.kind == "weights" or (np.abs(self.array[np.isfinite(self.array)]) < 1).any()):
            out.append("weights in % (28 = 0.28)" if self.kind == "weights" else "leading 0 dropped (.08 = 0.08)")
        if self.kind == "weights" and SCALES[self.scale].note:
            out.append(SCALES[self.scale].note)
        rows_elided = None in self.shown_rows
        same = self.cols == self.rows  # self-attention: one key serves both axes
        if form.labels == "numbers":
            name = "tokens" if same or self.cols is None else self.names[0]
            out.append(f"{name}: " + " · ".join(f"{i} {t}" for i, t in enumerate(self.rows)))
        if (
            self.cols is not None
            and form.labels != "tokens"
            and not (same and (form.labels == "numbers" or not rows_elided))
        ):
            out.append(f"{self.names[1]}: " + " · ".join(f"{j} {t}" for j, t in enumerate(self.cols)))
        if None in form.cols:
            hidden = [j for j in range(self.array.shape[1]) if j not in form.cols]
            out.append(
                f"{ELIDED} {len(hidden)} {self.names[1]} ({_span(hidden)}) hidden: "
                f"--width {self.width(Form(False, 'tokens'))} or -f json"
            )
        if rows_elided:
            hidden = [i for i in range(len(self.rows)) if i not in self.shown_rows]
            out.append(f"{ELIDED_ROW} {len(hidden)} {self.names[0]} ({_span(hidden)}) hidden: -f json has all")
        return out
