"""`--scale log` (colours on a log scale, the numbers the weights) and `--drop-sink` (the weights without key 0)."""

from __future__ import annotations

import json

import numpy as np

from attncli.render.style import LOG_FLOOR, SCALES, shade
from tests.conftest import SGR, attn

GOLDEN = "tests/models/golden/llama"
TEXT = "time flies like an arrow"


def test_the_log_scale_spreads_the_small_weights():
    """1e-3 and 1e-2 get shades of their own on the log scale, where √w leaves both near the lightest."""
    log = [shade(w, "truecolor", scale="log").bgcolor for w in (LOG_FLOOR, 1e-3, 1e-2, 1.0)]
    assert len(set(log)) == 4
    assert shade(0.0, "truecolor", scale="log").bgcolor == log[0]  # 0 and the floor alike: the lightest
    assert SCALES["log"].position(1e-2) == SCALES["sqrt"].position(0.25) == 0.5


def test_only_the_colours_change():
    def run(scale: str) -> bytes:
        r = attn("show", TEXT, "--model", GOLDEN, "--head", "0", "--scale", scale, "--color", "always", "--width", 100)
        assert r.exit_code == 0, r.output
        return r.stdout_bytes

    sqrt, log = run("sqrt"), run("log")
    assert SGR.findall(sqrt) != SGR.findall(log)
    plain, logged = (SGR.sub(b"", out).decode() for out in (sqrt, log))
    same = [line for line in plain.splitlines() if "weights in %" not in line]  # the notes' line gets one more
    assert all(line in logged.splitlines() for line in same)  # every number and label as it was
    words = " ".join(logged.split())
    assert "colour on a log scale (≤ 0.0001 lightest, 1 darkest); the numbers are the weights" in words


def test_the_scale_is_for_a_table():
    r = attn("show", TEXT, "--scale", "log", "-f", "json")
    assert r.exit_code == 2 and "--scale only changes what the table draws" in r.output


def test_drop_sink_draws_the_weights_renormalized_without_key_0():
    """The numbers it shows are the JSON's weights without column 0, each row divided by what is left."""
    doc = json.loads(attn("show", TEXT, "--model", GOLDEN, "--head", "1", "-f", "json").stdout)
    w = np.array(doc["heads"][0]["weights"])[:, 1:]
    kept = w[1:] / w[1:].sum(-1, keepdims=True)  # row 0 sees key 0 alone: nothing left
    r = attn("show", TEXT, "--model", GOLDEN, "--head", "1", "--drop-sink", "--width", 200, "--precision", 4)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert "without key 0 (◇<s>), rows renormalized" in lines[0]
    rows = [line.split()[1:] for line in lines[3 : 3 + len(w)]]  # after the title, the header and the rule
    assert all(cell == "·" for cell in rows[0])
    for i, row in enumerate(rows[1:], start=1):
        shown = [float(c.lstrip("▸")) for c in row if c != "·"]
        np.testing.assert_allclose(shown, kept[i - 1][:i], atol=0.5e-4)


def test_drop_sink_is_for_each_heads_table():
    r = attn("show", TEXT, "--model", GOLDEN, "--drop-sink", "--mean-heads")
    assert r.exit_code == 2 and "--drop-sink redraws each head's weights" in r.output
    r = attn("show", TEXT, "--drop-sink", "-f", "csv")
    assert r.exit_code == 2 and "--drop-sink only changes what the table draws" in r.output
