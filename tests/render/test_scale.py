"""`--scale log`: the weights' colours on a log scale, the numbers the weights (render/style.py's one scale)."""

from __future__ import annotations

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
