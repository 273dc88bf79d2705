"""`attn explore` from the command line: its options fail as `attn show`'s do, before the screen is taken; the real
program in tmux (80 × 24) shows the matrix, follows the keys and quits with 0, in colour and with NO_COLOR."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from tests.conftest import ROOT, attn

TEXT = "time flies like an arrow"


@pytest.mark.parametrize(
    "args, code, message",
    [
        ([TEXT, "--heads", "2", "--head", "2"], 2, "--head 2 is out of range: the run has 2 heads, 0..1"),
        ([TEXT, "--layer", "1"], 2, "--layer needs --model DIR"),
        ([TEXT, "--query", "bananas"], 2, "--query 'bananas': no such token"),
        ([""], 1, "Error: empty text"),
        ([TEXT, "-v", "nope"], 2, "nope"),
        ([TEXT], 2, "attn explore is a full-screen app: it needs a terminal"),  # CliRunner's stdout is no terminal
    ],
)
def test_bad_options_and_no_terminal_are_one_line_errors(args, code, message):
    r = attn("explore", *args)
    assert r.exit_code == code, r.output
    assert message in r.output and "Traceback" not in r.output


def _tmux(server: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", server, *args], check=True, capture_output=True, text=True).stdout


def _wait(server: str, until: str, escapes: bool = False) -> str:
    """The screen once it shows `until` (a slow machine gets up to 30 s: this is not a timing test)."""
    screen = ""
    for _ in range(300):
        screen = _tmux(server, "capture-pane", "-p", *(["-e"] if escapes else []), "-t", server)
        if until in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{until!r} never showed:\n{screen}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_the_real_program_in_tmux(no_color):
    server = f"attn-{uuid.uuid4().hex[:8]}"
    command = (
        f"cd {shlex.quote(str(ROOT))} && PYTHONPATH=. {shlex.quote(sys.executable)} -m attncli explore "
        f"'{TEXT}' --heads 2; echo attn-exit-$?"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "TMUX")}
    if no_color:
        env["NO_COLOR"] = "1"
    subprocess.run(
        ["tmux", "-L", server, "new-session", "-d", "-s", server, "-x", "80", "-y", "24", "bash", "--norc"],
        check=True,
        env=env,
    )
    try:
        _tmux(server, "send-keys", "-t", server, "clear; " + command, "Enter")
        screen = _wait(server, "every key")
        assert "Attention weights A = softmax(S)" in screen and "q quit" in screen, screen
        _tmux(server, "send-keys", "-t", server, "Down", "Right", "Right", "]")
        screen = _wait(server, "A[1,2]: 'flies' → 'like'")
        assert "head 1 of 0..1" in screen, screen
        coloured = _wait(server, "A[1,2]", escapes=True)
        colours = [code for code in ("38;2;", "48;2;", "38;5;", "48;5;") if code in coloured]
        assert bool(colours) != no_color, colours  # NO_COLOR: no colour at all; the cursor is reverse video
        assert "\x1b[7m" in coloured or ";7m" in coloured or ";7;" in coloured
        _tmux(server, "send-keys", "-t", server, "q")
        screen = _wait(server, "attn-exit-")
        assert "attn-exit-0" in screen, screen
        assert "every key" not in screen  # the terminal is given back as it was
    finally:
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_a_closed_terminal_ends_the_app():
    """SIGHUP (the terminal or the ssh connection went away) ends attn explore; it never spins on a dead terminal."""
    server, marker = f"attn-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:12]
    command = f"cd {shlex.quote(str(ROOT))} && PYTHONPATH=. {shlex.quote(sys.executable)} -m attncli explore '{marker}'"
    subprocess.run(["tmux", "-L", server, "new-session", "-d", "-s", server, "-x", "80", "-y", "24", "bash", "--norc"])
    try:
        _tmux(server, "send-keys", "-t", server, command, "Enter")
        _wait(server, "q quit")
        _tmux(server, "send-keys", "-t", server, "e")
        _wait(server, "editing")
        _tmux(server, "send-keys", "-t", server, " x", "Enter", "q")  # the terminal closes as the app leaves
    finally:
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True)
    for _ in range(300):  # up to 30 s on a slow machine: this is not a timing test
        if subprocess.run(["pgrep", "-f", f"attncli explore {marker}"], capture_output=True).returncode:
            return
        time.sleep(0.1)
    left = subprocess.run(["pgrep", "-fa", f"attncli explore {marker}"], capture_output=True, text=True).stdout
    subprocess.run(["pkill", "-f", f"attncli explore {marker}"])
    raise AssertionError(f"attn explore still runs after its terminal closed: {left}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_a_decoder_s_written_tokens_lens_and_ablation_in_tmux():
    """The real program on the golden Llama with --generate 3 at 80 × 24: n steps to the first written token, l
    and x open the lens and the ablation (computed in a thread) and Esc comes back; q quits with 0."""
    server = f"attn-{uuid.uuid4().hex[:8]}"
    golden = ROOT / "tests" / "models" / "golden" / "llama"
    command = (
        f"cd {shlex.quote(str(ROOT))} && PYTHONPATH=. {shlex.quote(sys.executable)} -m attncli explore "
        f"'{TEXT}' --model {shlex.quote(str(golden))} --generate 3; echo attn-exit-$?"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "TMUX")}
    subprocess.run(
        ["tmux", "-L", server, "new-session", "-d", "-s", server, "-x", "80", "-y", "24", "bash", "--norc"],
        check=True,
        env=env,
    )
    try:
        _tmux(server, "send-keys", "-t", server, "clear; " + command, "Enter")
        _wait(server, "n b step")
        _tmux(server, "send-keys", "-t", server, "n")
        screen = _wait(server, "(written token 1 of")  # the row that chose it, the one before: 17 of 18
        assert "row 17 '" in screen and "' wrote '" in screen and ", probability" in screen
        _tmux(server, "send-keys", "-t", server, "l")
        _wait(server, "its top 5 next tokens")
        _tmux(server, "send-keys", "-t", server, "Escape")  # alone: Esc and a key at once read as Alt+key
        _wait(server, "n b step")
        _tmux(server, "send-keys", "-t", server, "x")
        _wait(server, "switched off: Δ logit")
        _tmux(server, "send-keys", "-t", server, "x")  # the key that opened it closes it
        _wait(server, "n b step")
        _tmux(server, "send-keys", "-t", server, "w")
        _wait(server, "layer 1 of 0..1  [21,")  # the whole matrix (a heatmap at 80 × 24: 21 tokens)
        _tmux(server, "send-keys", "-t", server, "q")
        assert "attn-exit-0" in _wait(server, "attn-exit-")
    finally:
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True)
