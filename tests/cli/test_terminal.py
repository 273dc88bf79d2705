"""The real program in a real terminal: tmux at 80 × 24, the screen read back as a user sees it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from rich.cells import cell_len

from tests.conftest import ROOT


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_show_fits_an_80_by_24_terminal():
    session = f"attn-{uuid.uuid4().hex[:8]}"
    marker = "attn-done"
    command = (
        f"cd {shlex.quote(str(ROOT))} && PYTHONPATH=. {shlex.quote(sys.executable)} -m attncli show "
        f"'time flies like an arrow'; echo {marker}"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "TMUX")}
    subprocess.run(
        ["tmux", "-L", session, "new-session", "-d", "-s", session, "-x", "80", "-y", "24", "bash", "--norc"],
        check=True,
        env=env,
    )
    try:
        _tmux("-L", session, "send-keys", "-t", session, "clear; " + command, "Enter")
        screen = ""
        for _ in range(300):  # the run ends with the marker; a slow machine gets up to 30 s, not a timing test
            screen = _tmux("-L", session, "capture-pane", "-p", "-t", session)
            if f"\n{marker}" in screen:
                break
            time.sleep(0.1)
        lines = screen.rstrip("\n").split("\n")
        assert marker in lines, screen
        shown = lines[: lines.index(marker)]
        assert shown[0] == "Attention weights A = softmax(S)", screen  # nothing scrolled off the 24 lines
        assert shown[1].split() == ["time", "flies", "like", "an", "arrow"], screen  # tokens as headers
        rows = {line.split()[0]: line.split()[1:] for line in shown[3:8]}
        assert list(rows) == ["time", "flies", "like", "an", "arrow"], screen
        for cells in rows.values():  # five whole numbers, the largest marked (no colour needed to find it)
            assert len(cells) == 5 and sum(c.startswith("▸") for c in cells) >= 1, screen
            assert all(len(c.lstrip("▸")) == 4 and float(c.lstrip("▸")) <= 1 for c in cells), screen
        assert any(line.startswith("rows: queries, columns: keys") for line in shown), screen  # the caption fits
        assert any(line.startswith("Output O = ") for line in shown), screen
        assert all(cell_len(line) <= 80 and "…" not in line.replace("… ", "") for line in shown), screen
    finally:
        subprocess.run(["tmux", "-L", session, "kill-server"], capture_output=True)


@pytest.mark.parametrize("args", [["show", "-"], ["tokens", "-"], ["show", "-", "--lines", "-f", "csv"]])
def test_dash_at_a_terminal_says_it_reads_the_terminal(args):
    """`-` reads stdin; at a terminal a line on stderr says so (it used to wait without a word), and the text
    typed, ended by Ctrl-D, is read as it is through a pipe."""
    import pty

    main, typed = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "attncli", *args], stdin=typed, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    os.close(typed)
    try:
        os.write(main, b"time flies\n")
        os.write(main, b"\x04")  # Ctrl-D at the start of a line: the end of the input
        out, err = proc.communicate(timeout=60)  # a bound for a stuck run, not a timing test
    finally:
        os.close(main)
    assert proc.returncode == 0, err
    assert err.decode().splitlines()[0].startswith("Reading the "), err
    assert "from the terminal: type it, then Ctrl-D" in err.decode() and b"flies" in out
    piped = subprocess.run(
        [sys.executable, "-m", "attncli", *args], input=b"time flies\n", capture_output=True, env=env
    )
    assert piped.stderr == b"" and piped.stdout == out
