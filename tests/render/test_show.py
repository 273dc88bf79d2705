"""Renderers return Rich renderables that read without colour."""

import io

from rich.console import Console

from attncli.pipeline.config import RunConfig
from attncli.pipeline.result import one_head
from attncli.pipeline.run import run
from attncli.render.matrix import MARK
from attncli.render.show import Multiples, escape_token, show, weight_matrices
from attncli.render.stats import show_view


def _text(renderable, width=100, **kw):
    console = Console(width=width, record=True, file=io.StringIO(), **kw)
    console.print(renderable)
    return console


def test_every_cell_shows_its_number_and_the_row_max_is_marked():
    r = run("time flies like an arrow")
    plain = _text(show(r), color_system=None).export_text()
    lines = plain.splitlines()
    for i, row in enumerate(r.weights[0]):
        line = next(line for line in lines if line.startswith(r.tokens.strings[i] + " "))
        for w in row:
            assert f"{w:.2f}" in line
        assert line.count(MARK) == 1 and f"{MARK}{row.max():.2f}" in line


def test_markup_in_tokens_is_shown_literally():
    r = run("[red]x[/red] [link=https://example.org]y[/link]", RunConfig(tokenizer="char"))
    plain = _text(show(r), width=400).export_text()
    assert "[" in plain and "/" in plain


def test_escape_token():
    assert escape_token("a\x1b]0;t\x07") == "a\\x1b]0;t\\x07"
    assert escape_token("\u200b") == "<U+200B>"
    assert escape_token("\n") == "\\n"
    assert escape_token("  ") == "␣␣"


def test_a_short_sentence_fits_one_80_by_24_screen():
    plain = _text(show_view(run("time flies like an arrow")), width=80, color_system=None).export_text()
    lines = plain.splitlines()
    assert len(lines) <= 23 and max(len(line) for line in lines) <= 80
    assert "head 0: entropy" in plain  # the statistics, in a line


def test_heads_sit_side_by_side_when_the_width_allows():
    r = run("time flies like an arrow", RunConfig(heads=4))
    multiples = Multiples(weight_matrices(r))
    assert multiples.per_row(80) == 2 and multiples.per_row(160) == 4 and multiples.per_row(40) == 1
    plain = _text(multiples, width=160, color_system=None).export_text()
    assert all(f"head {h}" in plain.splitlines()[0] for h in range(4))


def test_one_head_and_the_mean_of_the_heads():
    r = run("time flies like an arrow", RunConfig(heads=2))
    one = one_head(r, 1)
    assert (one.weights[0] == r.weights[1]).all() and one.source.config_record(one)["head"] == 1
    plain = _text(show_view(one), color_system=None).export_text()
    assert "head 1" in plain and "head 0" not in plain
    mean = _text(show_view(r, mean=True), color_system=None).export_text()
    assert "mean of the 2 heads" in mean and f"{r.weights.mean(axis=0)[0, 0]:.2f}" in mean


def test_query_bars_show_one_row_with_its_numbers():
    r = run("time flies like an arrow", RunConfig(mask=("causal",)))
    plain = _text(show_view(r, query="like"), width=60, color_system=None).export_text()
    assert "query 2 'like'" in plain
    for j in range(3):
        assert f"{r.weights[0, 2, j]:.2f}" in plain
    bars = plain[: plain.index("scaled: s =")]
    assert bars.count(" masked") == 2 and "█" in bars


def test_masked_keys_are_never_top_keys():
    r = run("time flies like an arrow", RunConfig(mask=("causal",)))
    plain = _text(show_view(r, stats=True), width=120, color_system=None).export_text()
    top = plain[plain.index("Top 3 keys") : plain.index("Output")]
    first = next(line.strip() for line in top.splitlines() if line.strip().startswith("time "))
    assert "flies" not in first and "time 1.00" in first
