"""Fitted: a table at any width keeps every word and number whole, and its columns as long as they fit."""

import io

import pytest
from rich import box
from rich.console import Console
from rich.table import Table

from attncli.render.fit import Fitted

NUMBERS = ["3.02/3.46", "0.3125", "12,345"]


def _table() -> Table:
    table = Table(title="Head statistics", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("head", "mean entropy (bits)", "largest weight", "vocabulary size"):
        table.add_column(name, justify="right")
    table.add_row("0", *NUMBERS)
    table.add_row("1", "2.00/3.46", "0.5", "open (code points)")
    return table


def _print(renderable, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()


@pytest.mark.parametrize("width", [20, 30, 40, 50, 60, 80])
def test_no_word_or_number_is_broken_at_any_width(width):
    out = _print(Fitted(_table()), width)
    words = set(out.split())
    for word in [*NUMBERS, "entropy", "vocabulary", "largest", "(code", "points)"]:
        assert word in words, (width, word, out)
    assert all(len(line) <= width for line in out.splitlines())


def test_rich_alone_breaks_them_and_the_forms_go_from_table_to_paragraphs():
    assert "0.3125" not in _print(_table(), 30).split()  # what Fitted is for
    wide, narrow = _print(Fitted(_table()), 80), _print(Fitted(_table()), 30)
    assert "─" in wide and "head 0 — " not in wide
    flowed = " ".join(narrow.split())
    assert "─" not in narrow and "head 0 — mean entropy (bits) 3.02/3.46 · largest weight 0.3125" in flowed


def test_the_table_is_left_as_it_was():
    table = _table()
    _print(Fitted(table), 40)
    assert [c.width for c in table.columns] == [None] * 4 and table.padding == (0, 1, 0, 1)
