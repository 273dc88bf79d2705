"""Pipes, terminals, files and pictures: the output side of every command, mostly in real processes."""

import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import attncli.io.formats
from attncli.cli.app import app
from attncli.io.documents import Result

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "ATTN_DEBUG"):
    ENV.pop(name, None)
ATTN = [sys.executable, "-m", "attncli"]
posix_only = pytest.mark.skipif(os.name != "posix", reason="needs a pty")
runner = CliRunner()


def _run(*args, env=None, **kw):
    return subprocess.run([*ATTN, *args], capture_output=True, env={**ENV, **(env or {})}, **kw)


def _in_a_terminal(*args, env=None, stdout_tty=True, stderr_tty=False, stdin=None):
    """Run attn with stdout (and/or stderr) on a pseudo-terminal; returns (what the pty got, stdout, stderr)."""
    import pty

    master, slave = pty.openpty()
    p = subprocess.Popen(
        [*ATTN, *args],
        env={**ENV, **(env or {})},
        stdin=stdin,
        stdout=slave if stdout_tty else subprocess.PIPE,
        stderr=slave if stderr_tty else subprocess.PIPE,
    )
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        got += chunk
    out = p.stdout.read() if p.stdout else b""
    err = p.stderr.read() if p.stderr else b""
    p.wait()
    os.close(master)
    return got, out, err, p.returncode


def _colour_codes(data: bytes) -> list[bytes]:
    """The SGR sequences that set a colour (30-49, 90-107), not bold, dim, italic or underline."""
    codes = re.findall(rb"\x1b\[([0-9;]*)m", data)
    return [
        c
        for c in codes
        if any(p.startswith((b"3", b"4", b"9", b"10")) and p not in (b"3", b"4") for p in c.split(b";"))
    ]


# ---- pipes ------------------------------------------------------------------------------------------


def test_a_pipe_gets_no_escape_codes():
    p = _run("show", "time flies like an arrow")
    assert p.returncode == 0 and b"flies" in p.stdout and b"\x1b" not in p.stdout


def test_no_color_gets_no_escape_codes_in_a_pipe():
    p = _run("show", "time flies like an arrow", "--heads", "2", env={"NO_COLOR": "1"})
    assert p.returncode == 0 and b"head 1" in p.stdout and b"\x1b" not in p.stdout + p.stderr


def test_color_always_forces_colour_into_a_pipe_even_with_no_color():
    p = _run("show", "time flies", "--color", "always", env={"NO_COLOR": "1"})
    assert _colour_codes(p.stdout)


@posix_only
def test_a_terminal_gets_colour_unless_no_color_or_never():
    got, *_ = _in_a_terminal("show", "time flies like an arrow")
    assert _colour_codes(got), got[:300]
    got, *_ = _in_a_terminal("show", "time flies like an arrow", env={"NO_COLOR": "1"})
    assert b"flies" in got and not _colour_codes(got)  # bold may stay: NO_COLOR is about colour
    got, *_ = _in_a_terminal("show", "time flies like an arrow", "--color", "never")
    assert b"flies" in got and b"\x1b" not in got


@pytest.mark.skipif(shutil.which("head") is None, reason="needs head(1)")
@pytest.mark.parametrize(
    "args, lines",
    [
        (["show", "-", "-t", "char", "-f", "json"], 1),
        (["show", "-", "-t", "char", "-f", "csv"], 1),
        (["show", "-", "-t", "char", "--lines"], 20),
        (["show", "-", "-t", "char", "--color", "always"], 1),
    ],
    ids=["json", "csv", "lines", "table"],
)
def test_a_closed_pipe_ends_quietly(args, lines):
    text = ("".join(chr(0x61 + i % 26) for i in range(300)) + "\n") * lines  # MBs: far above a pipe buffer
    attn = subprocess.Popen(
        [*ATTN, *args], env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    head = subprocess.Popen(["head", "-c", "100"], stdin=attn.stdout, stdout=subprocess.PIPE)
    attn.stdout.close()  # head owns the read end now: when it exits, the pipe is closed
    attn.stdin.write(text.encode())
    attn.stdin.close()
    first, _ = head.communicate(timeout=120)
    err = attn.stderr.read()
    attn.wait(timeout=120)
    assert len(first) == 100
    assert err == b"", err.decode()  # no BrokenPipeError, no traceback, no "Exception ignored"
    assert attn.returncode in (0, 1)


def test_npy_is_not_sent_to_a_terminal_but_to_a_pipe():
    p = _run("show", "time flies", "-f", "npz")
    assert p.returncode == 0 and p.stdout[:2] == b"PK"
    z = np.load(io.BytesIO(p.stdout), allow_pickle=False)
    assert z["tokens"].tolist() == ["time", "flies"]


@posix_only
def test_binary_formats_refuse_a_terminal():
    got, _, err, code = _in_a_terminal("show", "time flies", "-f", "npy")
    assert code == 2 and b"binary" in err and b"NUMPY" not in got


# ---- -o FILE: atomic ----------------------------------------------------------------------------------


def _leftovers(directory: Path):
    return [p.name for p in directory.iterdir() if p.name.startswith(".attn-")]


def test_a_run_failing_while_writing_leaves_the_file_and_no_temp(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    out.write_text("keep me")

    def half_then_fail(result, stream, precision=None):
        stream.write(b'{"schema": "half')
        raise RuntimeError("disk on fire")

    json_format = attncli.io.formats.FORMATS["json"]
    writers = {**json_format.writers, Result: half_then_fail}
    monkeypatch.setitem(attncli.io.formats.FORMATS, "json", dataclasses.replace(json_format, writers=writers))
    r = runner.invoke(app, ["show", "time flies", "-o", str(out)])
    assert r.exit_code == 1 and "disk on fire" in r.stderr
    assert out.read_text() == "keep me" and _leftovers(tmp_path) == []


def test_lines_failing_on_a_later_line_leave_the_file_and_no_temp(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text("keep me")
    p = _run("show", "-", "--lines", "-o", str(out), input=b"time flies\nlike an arrow\nbad \xff byte\n")
    assert p.returncode == 1 and p.stderr == (
        b"Error: stdin line 3 is not valid UTF-8: byte 0xff at offset 4 (--errors replace reads it with U+FFFD)\n"
    )
    assert out.read_text() == "keep me" and _leftovers(tmp_path) == []


def test_an_error_before_writing_leaves_the_file(tmp_path):
    out = tmp_path / "r.csv"
    out.write_text("keep me")
    assert runner.invoke(app, ["show", "a b", "--heads", "3", "-o", str(out)]).exit_code == 2
    assert out.read_text() == "keep me" and _leftovers(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_new_file_gets_the_usual_permissions_and_an_old_one_keeps_its_own(tmp_path):
    umask = os.umask(0o022)
    try:
        new, old = tmp_path / "new.json", tmp_path / "old.json"
        old.write_text("x")
        old.chmod(0o640)
        for path in (new, old):
            assert runner.invoke(app, ["show", "a b", "-o", str(path)]).exit_code == 0
        assert new.stat().st_mode & 0o777 == 0o644 and old.stat().st_mode & 0o777 == 0o640
        assert json.loads(old.read_text())["tokens"] == ["a", "b"]
    finally:
        os.umask(umask)


# ---- pictures -----------------------------------------------------------------------------------------


def test_svg_and_html_show_the_tokens_while_the_table_still_prints(tmp_path):
    svg, html = tmp_path / "fig.svg", tmp_path / "fig.html"
    p = _run("show", "time flies like an arrow", "--save-svg", str(svg), "--save-html", str(html))
    assert p.returncode == 0 and b"arrow" in p.stdout and b"\x1b" not in p.stdout
    picture = svg.read_text()
    assert picture.startswith("<svg") and "attn&#160;show" in picture  # the title
    for word in ("time", "flies", "like", "arrow", "Output"):
        assert word in picture
    page = html.read_text()  # the interactive page of the run (tests/io/test_view.py), not a picture of the table
    assert page.startswith("<!DOCTYPE html>") and '"tokens":["time","flies","like","an","arrow"]' in page


def test_a_command_without_a_page_saves_the_table_as_html(tmp_path):
    html = tmp_path / "t.html"
    assert _run("tokens", "time flies", "--save-html", str(html)).returncode == 0
    text = html.read_text()
    assert "flies" in text and ("rgb(" in text or "#" in text) and "attn-data" not in text


def test_pictures_follow_the_colour_choice(tmp_path):
    coloured, plain = tmp_path / "c.svg", tmp_path / "p.svg"
    assert _run("show", "time flies", "--save-svg", str(coloured)).returncode == 0
    assert _run("show", "time flies", "--save-svg", str(plain), "--color", "never").returncode == 0
    # the weight cells are shaded, each with its own fill; without colour only the window's own fills remain
    assert coloured.read_text().count('fill="#') > plain.read_text().count('fill="#') + 3


def test_a_picture_needs_the_table(tmp_path):
    r = runner.invoke(app, ["show", "a b", "-f", "json", "--save-svg", str(tmp_path / "x.svg")])
    assert r.exit_code == 2 and "--save-svg" in r.stderr and not (tmp_path / "x.svg").exists()


def test_a_picture_in_a_missing_directory_fails_before_printing():
    r = runner.invoke(app, ["show", "a b", "--save-svg", "/nonexistent-dir/x.svg"])
    assert r.exit_code == 1 and r.stderr.startswith("Error: cannot write") and r.stdout == ""


@pytest.mark.parametrize(
    "command",
    [["steps", "time flies"], ["tokens", "time flies"], ["compare", "time flies", "--tokenizers", "word,char"]],
)
def test_every_table_command_saves_pictures(tmp_path, command):
    svg, html = tmp_path / "x.svg", tmp_path / "x.html"
    r = runner.invoke(app, [*command, "--save-svg", str(svg), "--save-html", str(html)])
    assert r.exit_code == 0, r.output
    assert f"attn&#160;{command[0]}" in svg.read_text() and "flies" in html.read_text()


def test_svg_and_html_are_formats_of_the_table(tmp_path):
    svg = runner.invoke(app, ["show", "time flies", "-f", "svg"])
    assert svg.exit_code == 0 and svg.stdout.startswith("<svg") and "time" in svg.stdout
    assert runner.invoke(app, ["steps", "time flies", "-o", str(tmp_path / "s.html")]).exit_code == 0
    html = (tmp_path / "s.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "softmax" in html
    r = runner.invoke(app, ["variants", "-f", "svg"])
    assert r.exit_code == 0 and "scaled" in r.stdout
