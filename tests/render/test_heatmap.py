"""The compact heatmap for long inputs: pooling by hand, no colour needed, fits the width."""

import io

import numpy as np
from rich.console import Console

from attncli.pipeline.config import RunConfig
from attncli.pipeline.run import run
from attncli.render.heatmap import SHADES, Heatmap, pool
from attncli.render.show import show


def _render(renderable, width=80, colour=False):
    console = Console(
        file=io.StringIO(), width=width, force_terminal=colour, color_system="truecolor" if colour else None
    )
    console.print(renderable)
    return console.file.getvalue()


def test_pool_is_the_block_mean():
    a = np.arange(12.0).reshape(3, 4)
    assert pool(a, 1, 2).tolist() == [[(0 + 1 + 4 + 5 + 8 + 9) / 6, (2 + 3 + 6 + 7 + 10 + 11) / 6]]
    assert pool(a, 3, 4).tolist() == a.tolist()


def test_without_colour_the_shades_carry_the_picture():
    w = np.eye(100)
    out = _render(Heatmap(w, "eye"), width=80)
    lines = out.splitlines()
    assert "pooled to" in lines[0] and "▏0" in lines[1]
    assert all(len(line) <= 80 for line in lines)
    body = [line[12:] for line in lines[2:-2]]
    assert body[0][0] in SHADES[1:] and body[0][-1] == " "  # the diagonal is dark, the corner empty
    assert "\x1b" not in out


def test_with_colour_two_rows_share_a_line():
    out = _render(Heatmap(np.eye(100), "eye"), width=80, colour=True)
    assert "▀" in out and len(out.splitlines()) < 2 + 100 // 2 + 4


def test_show_switches_to_the_heatmap_for_long_inputs():
    text = " ".join(f"w{i}" for i in range(60))
    out = _render(show(run(text, RunConfig(heads=2)), width=100), width=100)
    assert out.count("pooled to") == 2 and "⋮" in out  # one map per head; the output table elides rows
    short = _render(show(run("time flies like an arrow")), width=100)
    assert "pooled to" not in short


def test_a_map_of_one_token_a_row_keys_its_tokens_and_says_its_shape_once():
    out = _render(Heatmap(np.eye(3), "A [3, 3]", tokens=(["time", "flies", "like"], ["time", "flies", "like"])))
    lines = out.splitlines()
    assert lines[0] == "A [3, 3]" and "pooled" not in out  # no block is more than one cell
    assert lines[-1] == "tokens: 0 time · 1 flies · 2 like"
    cross = _render(Heatmap(np.full((2, 3), 1 / 3), "cross", tokens=(["a", "b"], ["x", "y", "z"])))
    assert cross.splitlines()[0] == "cross  [2, 3]" and cross.splitlines()[-2:] == [
        "queries: 0 a · 1 b",
        "keys: 0 x · 1 y · 2 z",
    ]
    pooled = _render(Heatmap(np.eye(100), "eye", tokens=([str(i) for i in range(100)],) * 2))
    assert "tokens:" not in pooled and "queries:" not in pooled  # a block of rows has no one token
