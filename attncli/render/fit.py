"""Tables of words and numbers that fit any width without breaking a word or a number.

Rich shrinks a table that is too wide by narrowing its widest columns, whatever
they hold, so a number folds onto two lines (`0.3` over `1`) and a header breaks
mid-word (`vocabula` over `ry size`). `Fitted` lays a table out itself when it is
drawn: each column gets at least its longest word (a number is one word), then
the rest of the width in proportion to what each column could still use; then
the same with one space between columns. When even that does not fit, the table is drawn as one
paragraph per row instead, each cell after its column's header
(`tokens n — char 54 · word 11 · bpe 11`), wrapped between words.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from attncli.render.units import Units


def _measure(console: Console, options: ConsoleOptions, table: Table, index: int) -> Measurement:
    """The narrowest (its longest word) and widest (its longest line) content of one column, header included."""
    column = table.columns[index]
    if column.width is not None:
        return Measurement(column.width, column.width)
    cells = [*([column.header] if table.show_header else []), *column.cells]
    sizes = [Measurement.get(console, options, cell) for cell in cells] or [Measurement(1, 1)]
    low, high = max(s.minimum for s in sizes), max(s.maximum for s in sizes)
    return Measurement(high, high) if column.no_wrap else Measurement(low, high)


def widths(console: Console, options: ConsoleOptions, table: Table) -> list[int] | None:
    """Content widths of the columns that fit `options.max_width` with no word broken; None if none do."""
    sizes = [_measure(console, options, table, i) for i in range(len(table.columns))]
    # the table's own overhead: borders, and padding around each column (Rich's accounting)
    room = options.max_width - table._extra_width - sum(table._get_padding_width(i) for i in range(len(sizes)))
    low, high = sum(s.minimum for s in sizes), sum(s.maximum for s in sizes)
    if high <= room:
        return [s.maximum for s in sizes]
    if low > room:
        return None
    spare, wants = room - low, high - low
    out = [s.minimum + (s.maximum - s.minimum) * spare // wants for s in sizes]
    for i in sorted(range(len(sizes)), key=lambda i: sizes[i].minimum - sizes[i].maximum)[: room - sum(out)]:
        out[i] += 1  # what the rounding left, to the columns that want most
    return out


def _text(console: Console, cell) -> Text | None:
    if isinstance(cell, Text):
        return cell
    return console.render_str(cell) if isinstance(cell, str) else None


class Fitted:
    """A Rich renderable: `table` with no word or number broken at any width (see the module docstring)."""

    def __init__(self, table: Table):
        self.table = table
        for column in table.columns:  # a cell wraps between units: a label stays with its number
            column._cells = [
                Units.of(Text.from_markup(c, emoji=False) if isinstance(c, str) else c)
                if isinstance(c, (str, Text))
                else c
                for c in column._cells
            ]

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self.table
        fixed, padding = [c.width for c in table.columns], table.padding
        try:
            for pad in (padding, (0, 0, 0, 0)):  # its own padding, then one space between columns
                table.padding = pad
                found = widths(console, options, table)
                if found is not None:
                    for column, width in zip(table.columns, found):
                        column.width = width
                    yield from console.render(table, options)
                    return
        finally:
            table.padding = padding
            for column, was in zip(table.columns, fixed):
                column.width = was
        yield from self._paragraphs(console, options)

    def _paragraphs(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self.table
        if table.title is not None:
            yield from console.render(_text(console, table.title) or Text(""), options)
        columns = [list(c.cells) for c in table.columns]
        heads = [_text(console, c.header) if table.show_header else None for c in table.columns]
        for r in range(table.row_count):
            line = Text()
            first = _text(console, columns[0][r])
            if heads[0] is not None and heads[0].plain.strip():
                line.append(heads[0].plain + " ")
            line.append_text(first.copy() if first is not None else Text(""))
            line.stylize("bold")
            parts = []
            for head, cells in zip(heads[1:], columns[1:]):
                cell = _text(console, cells[r])
                if cell is None or not cell.plain.strip():
                    continue
                part = Text()
                if head is not None and head.plain.strip():
                    part.append(head.plain.replace("\n", " ") + " ", style="dim")
                part.append_text(Text(cell.plain.replace("\n", " "), style=cell.style, spans=cell.spans))
                parts.append(part)
            if parts:
                line.append(" — " if line.plain.strip() else "")
                line.append_text(Text(" · ").join(parts))
            yield from console.render(Units.of(line), options)
