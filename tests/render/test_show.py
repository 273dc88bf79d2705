"""Renderers return Rich renderables that read without colour."""

import io

from rich.console import Console

from attncli.pipeline.config import RunConfig
from attncli.pipeline.run import run
from attncli.render.show import columns_shown, escape_token, show, weights_table
from attncli.render.style import weight_style


def _text(renderable, width=100, **kw):
    console = Console(width=width, record=True, file=io.StringIO(), **kw)
    console.print(renderable)
    return console


def test_every_cell_shows_its_number_and_the_row_max_is_bold():
    r = run("time flies like an arrow")
    console = _text(show(r), color_system="truecolor", force_terminal=True)
    plain = console.export_text()
    for row in r.weights[0]:
        for w in row:
            assert f"{w:.2f}" in plain
    table = weights_table(r, 0)
    for i, row in enumerate(r.weights[0]):
        cells = [column._cells[i] for column in table.columns[1:]]
        assert [c.style.bold for c in cells] == [w == row.max() for w in row]


def test_markup_in_tokens_is_shown_literally():
    r = run("[red]x[/red] [link=https://example.org]y[/link]", RunConfig(tokenizer="char"))
    plain = _text(show(r, width=400), width=400).export_text()
    assert "[" in plain and "/" in plain


def test_escape_token():
    assert escape_token("a\x1b]0;t\x07") == "a\\x1b]0;t\\x07"
    assert escape_token("\u200b") == "<U+200B>"
    assert escape_token("\n") == "\\n"
    assert escape_token("  ") == "␣␣"


def test_weight_style_shades_and_flips_text():
    assert weight_style(0.0).bgcolor.triplet == (247, 251, 255)
    assert weight_style(1.0).color.triplet == (255, 255, 255)


def test_wide_matrices_are_elided_with_a_marker():
    assert columns_shown(20, 7) == [0, 1, 2, None, 17, 18, 19]
    r = run("a b c d e f g h i j k l m n o p q r s t u v w x y z", RunConfig())
    plain = _text(show(r, width=80), width=80).export_text()
    assert "…" in plain
    assert max(len(line) for line in plain.splitlines()) <= 80
