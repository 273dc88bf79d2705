"""DESIGN §6: hostile text never reaches the terminal raw, and bad input is one line `Error: ...`.

Terminal safety is checked on the raw bytes a terminal would get: Rich forced to a terminal
(`--color always`, or a real pty), Rich's own colour codes (SGR, ESC [ ... m) removed, and then
no ESC, BEL, C0/C1 control, bidi override or isolate, zero-width character or BOM may remain.
"""

import doctest
import json
import os
import re
import subprocess
import sys
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

import attncli.escape
import attncli.formats
from attncli.cli import app
from attncli.escape import escape_token

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

# Every token a WordLevel tokenizer.json knows (so each reaches the tables whole, as one token).
HOSTILE_TOKENS = [
    "[red]x[/red]", "[link=https://example.org]y[/link]", "\x1b]0;title\x07", "\x1b[2J", "\x1b[31mred",
    "\x00nul", "\x01\x02\x7f", "\x9b2J\x90", "\u202eevil", "\u2066iso\u2069", "zero\u200bwidth\u200c\u200d",
    "\ufeffbom", "漢字", "😀", "e\u0301", "\u0301", "👨\u200d👩\u200d👧",
]
HOSTILE_TEXT = " ".join(HOSTILE_TOKENS)
# A file name is user text too: markup, an OSC title sequence and a bidi override.
HOSTILE_NAME = "tok[bold]\x1b]0;t\x07\u202e"

SGR = re.compile(rb"\x1b\[[0-9;]*m")
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\u2028\u2029\ufeff]")


def inert(data: bytes) -> str:
    """The text a terminal gets, checked: only SGR colour codes may carry ESC; nothing else may act or hide."""
    text = SGR.sub(b"", data).decode("utf-8")
    bad = sorted({f"U+{ord(c):04X}" for c in UNSAFE.findall(text)})
    assert not bad, f"raw {bad} reached the terminal"
    return text


def attn(*args, input=None, env=None):
    return runner.invoke(app, list(args), input=input, env=env)


@pytest.fixture
def hostile_json(tmp_path) -> str:
    """A WordLevel tokenizer.json whose vocabulary is HOSTILE_TOKENS, saved under a hostile file name."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, **{t: i for i, t in enumerate(HOSTILE_TOKENS, 1)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    assert tok.encode(HOSTILE_TEXT).tokens == HOSTILE_TOKENS
    path = tmp_path / f"{HOSTILE_NAME}.json"
    tok.save(str(path))
    return str(path)


def test_doctests():
    assert doctest.testmod(attncli.escape).failed == 0
    assert doctest.testmod(attncli.formats).failed == 0


def test_escape_makes_every_unsafe_code_point_visible():
    from attncli.escape import escape_text, escape_token

    assert escape_text("\x1b]0;t\x07") == "\\x1b]0;t\\x07"
    assert escape_text("\x00\x9b\x85\x7f") == "\\0\\x9b\\x85\\x7f"
    assert escape_text("\u202e\u2066\u2069\u200b\u200c\u200d\ufeff\u2028") == (
        "<U+202E><U+2066><U+2069><U+200B><U+200C><U+200D><U+FEFF><U+2028>")
    assert escape_text("[red]x[/red]") == "[red]x[/red]"  # markup is never parsed, so it needs no escape
    assert escape_text("漢字 😀 é") == "漢字 😀 é" and escape_text("a  b") == "a  b"
    assert escape_token("\u0301") == "◌\u0301" and escape_token("\x1b\u0301") == "\\x1b◌\u0301"
    assert escape_token("   ") == "␣␣␣"
    # Whatever escape_text leaves is printable (or a space): planes 0-2 and the tags of plane 14, all of them.
    chars = [chr(c) for c in [*range(0x30000), *range(0xE0000, 0xE1000)]
             if unicodedata.category(chr(c)) != "Zs"]
    out = [escape_text(c) for c in chars]
    assert all(o.isprintable() for o in out)
    assert UNSAFE.search("".join(out)) is None


def test_json_escapes_what_a_terminal_could_act_on_and_parses_to_the_same_strings():
    for c in map(chr, range(0x80, 0x110000)):
        if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            assert attncli.formats._UNSAFE_IN_JSON.fullmatch(c), f"U+{ord(c):04X} written raw in JSON"
    r = attn("show", HOSTILE_TEXT, "-t", "char", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(inert(r.stdout_bytes))
    assert doc["text"] == HOSTILE_TEXT and "".join(doc["tokens"]) == HOSTILE_TEXT


@pytest.mark.parametrize("command", [
    ["show"], ["show", "--heads", "2", "--stats"], ["steps", "-v", "additive", "--query", "5"], ["tokens"],
    ["compare", "--tokenizers", "char,word,{path}"],
])
def test_every_table_shows_hostile_tokens_escaped(hostile_json, command):
    args = [a.replace("{path}", hostile_json) for a in command]
    if "--tokenizers" not in args:
        args += ["-t", hostile_json]
    r = attn(*args, HOSTILE_TEXT, "--color", "always", env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    assert b"\x1b[" in r.stdout_bytes  # Rich really wrote for a terminal
    text = inert(r.stdout_bytes + r.stderr_bytes)
    assert "tok[bold]\\x1b]0;t\\x07<U+202E>" in text  # the tokenizer's file name
    if command[0] != "compare":  # (compare runs char and word too, which split the markup up)
        assert "[red]x[/red]" in text
        for token in HOSTILE_TOKENS:  # long labels are cut to their first 7 columns and …
            assert escape_token(token)[:7] in text, token
    assert "\x1b]8;" not in text and b"\x1b[31m" not in r.stdout_bytes  # no hyperlink, no red from [red]


def test_lines_headings_warnings_and_the_compute_caption_are_escaped(tmp_path, hostile_json):
    r = attn("show", "-", "--lines", "-f", "table", "--color", "always", input=f"{HOSTILE_TEXT}\n")
    assert r.exit_code == 0, r.output
    assert "line 1: [red]x[/red] [link=https://example.org]y[/link] \\x1b]0;title\\x07" in inert(r.stdout_bytes)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(hostile_json)
    tok.enable_truncation(3)
    truncating = tmp_path / f"trunc{HOSTILE_NAME}.json"
    tok.save(str(truncating))
    r = attn("show", HOSTILE_TEXT, "-t", str(truncating), "--color", "always")
    assert r.exit_code == 0 and "Warning: tokenizer" in inert(r.stderr_bytes) and "\\x1b]0;t" in r.stderr
    given = tmp_path / f"{HOSTILE_NAME}q.json"
    given.write_text('{"q": [[1, 0], [0, 1]]}')
    r = attn("compute", "--input", str(given), "--color", "always", env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    assert "tok[bold]\\x1b]0;t\\x07<U+202E>q.json" in inert(r.stdout_bytes)


@pytest.mark.parametrize("args, shown", [
    (["show", "a", "-t", f"missing{HOSTILE_NAME}.json"], "tokenizer file not found: missing"),
    (["show", "--file", f"{HOSTILE_NAME}.txt"], "no such file: tok[bold]\\x1b]0;t\\x07<U+202E>.txt"),
    (["show", "a", "-o", f"{HOSTILE_NAME}/x.json"], "cannot write tok[bold]\\x1b]0;t\\x07<U+202E>/x.json"),
    (["compute", "--q", f"{HOSTILE_NAME}.npy"], "no such file: tok[bold]\\x1b]0;t\\x07<U+202E>.npy"),
    (["show", "a", "--mask", "window:\x1b[2J"], "mask 'window:\\x1b[2J' needs a whole number"),
    (["show", "a", "--\x1b]0;t\x07"], "No such option: --\\x1b]0;t\\x07"),
    (["--\u202eevil"], "No such option: --<U+202E>evil"),
    (["show", "a", "b\x1b[2J"], "unexpected extra argument"),
    (["show", "a", "--context", "\u202e\u200b", "-t", "char", "--dim", "\x1b[2J"], "'\\x1b[2J' is not a valid"),
])
def test_error_lines_quote_user_text_escaped(args, shown):
    r = attn(*args)
    assert r.exit_code in (1, 2) and "Traceback" not in r.output
    err = inert(r.stderr_bytes)
    assert shown in err, err
    error_lines = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(error_lines) == 1


def test_pictures_are_escaped_and_well_formed(tmp_path, hostile_json):
    svg, html = tmp_path / "a.svg", tmp_path / "a.html"
    r = attn("show", HOSTILE_TEXT, "-t", hostile_json, "--save-svg", str(svg), "--save-html", str(html),
             "--color", "always", env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    for path in (svg, html):
        inert(path.read_bytes())
    ET.fromstring(svg.read_text(encoding="utf-8"))  # well-formed XML: no raw control characters in it
    assert "[red]x[/red]" in html.read_text(encoding="utf-8")


def test_wide_and_combining_tokens_keep_the_columns_aligned(hostile_json):
    r = attn("show", HOSTILE_TEXT, "-t", hostile_json, "--color", "never", env={"COLUMNS": "400"})
    assert r.exit_code == 0
    lines = r.stdout.split("\n")
    top = lines.index(next(line for line in lines if "query \\ key" in line))
    rows = []
    for line in lines[top + 2:]:
        if not line.strip():
            break
        rows.append(line)
    assert len(rows) == len(HOSTILE_TOKENS)
    ends = [[cell_len(line[:m.end()]) for m in re.finditer(r"\d\.\d\d", line)] for line in rows]
    assert all(e == ends[0] for e in ends), "a number column moved in a row with a wide or combining label"
    assert len({cell_len(line.rstrip()) for line in rows}) == 1
    assert "◌\u0301" in r.stdout  # a lone combining mark gets a visible base


@pytest.mark.skipif(os.name != "posix", reason="needs a pty")
def test_a_real_terminal_gets_only_colour_codes(tmp_path, hostile_json):
    import pty

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
        env.pop(name, None)
    text = HOSTILE_TEXT.replace("\x00", "")  # argv cannot carry NUL
    for args in (["show", text, "-t", hostile_json], ["show", "a", "-t", f"nope{HOSTILE_NAME}.json"]):
        master, slave = pty.openpty()
        p = subprocess.Popen([sys.executable, "-m", "attncli", *args], stdout=slave, stderr=slave, env=env)
        os.close(slave)
        got = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
        p.wait()
        os.close(master)
        assert inert(got.replace(b"\r\n", b"\n"))


@pytest.mark.skipif(os.name != "posix", reason="needs a pty")
def test_the_progress_bar_shows_a_hostile_file_name_escaped(tmp_path):
    import pty

    path = tmp_path / f"{HOSTILE_NAME}.txt"
    path.write_text("time flies like an arrow\n" * 300, encoding="utf-8")
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    p = subprocess.Popen([sys.executable, "-m", "attncli", "show", "--file", str(path), "--lines"],
                         stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    p.stdout.read()
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    p.wait()
    os.close(master)
    assert p.returncode == 0
    assert b"\x1b]0;" not in got and b"\x07" not in got and "\u202e".encode() not in got
    assert b"attn --lines tok[bold]\\x1b]0;t\\x07<U+202E>.txt" in got
