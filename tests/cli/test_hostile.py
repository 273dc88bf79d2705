"""Hostile input: text never reaches the terminal raw, and bad input is one line `Error: ...`.

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

import pytest
from rich.cells import cell_len

import attncli.io.encode
import attncli.io.escape
import attncli.io.formats
from attncli.io.escape import escape_token
from attncli.pipeline.tokenize import tokenize
from tests.conftest import ROOT, UNSAFE, attn, inert, refused

# Every token a WordLevel tokenizer.json knows (so each reaches the tables whole, as one token).
HOSTILE_TOKENS = [
    "[red]x[/red]",
    "[link=https://example.org]y[/link]",
    "\x1b]0;title\x07",
    "\x1b[2J",
    "\x1b[31mred",
    "\x00nul",
    "\x01\x02\x7f",
    "\x9b2J\x90",
    "\u202eevil",
    "\u2066iso\u2069",
    "zero\u200bwidth\u200c\u200d",
    "\ufeffbom",
    "漢字",
    "😀",
    "e\u0301",
    "\u0301",
    "👨\u200d👩\u200d👧",
]
HOSTILE_TEXT = " ".join(HOSTILE_TOKENS)
# A file name is user text too: markup, an OSC title sequence and a bidi override.
HOSTILE_NAME = "tok[bold]\x1b]0;t\x07\u202e"


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
    assert doctest.testmod(attncli.io.escape).failed == 0
    assert doctest.testmod(attncli.io.formats).failed == 0


def test_escape_makes_every_unsafe_code_point_visible():
    from attncli.io.escape import escape_text, escape_token

    assert escape_text("\x1b]0;t\x07") == "\\x1b]0;t\\x07"
    assert escape_text("\x00\x9b\x85\x7f") == "\\0\\x9b\\x85\\x7f"
    assert escape_text("\u202e\u2066\u2069\u200b\u200c\u200d\ufeff\u2028") == (
        "<U+202E><U+2066><U+2069><U+200B><U+200C><U+200D><U+FEFF><U+2028>"
    )
    assert escape_text("[red]x[/red]") == "[red]x[/red]"  # markup is never parsed, so it needs no escape
    assert escape_text("漢字 😀 é") == "漢字 😀 é" and escape_text("a  b") == "a  b"
    assert escape_token("\u0301") == "◌\u0301" and escape_token("\x1b\u0301") == "\\x1b◌\u0301"
    assert escape_token("   ") == "␣␣␣"
    # Whatever escape_text leaves is printable (or a space): planes 0-2 and the tags of plane 14, all of them.
    chars = [chr(c) for c in [*range(0x30000), *range(0xE0000, 0xE1000)] if unicodedata.category(chr(c)) != "Zs"]
    out = [escape_text(c) for c in chars]
    assert all(o.isprintable() for o in out)
    assert UNSAFE.search("".join(out)) is None


def test_json_escapes_what_a_terminal_could_act_on_and_parses_to_the_same_strings():
    for c in map(chr, range(0x80, 0x110000)):
        if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            assert attncli.io.encode._UNSAFE_IN_JSON.fullmatch(c), f"U+{ord(c):04X} written raw in JSON"
    r = attn("show", HOSTILE_TEXT, "-t", "char", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(inert(r.stdout_bytes))
    assert doc["text"] == HOSTILE_TEXT and "".join(doc["tokens"]) == HOSTILE_TEXT


@pytest.mark.parametrize(
    "command",
    [
        ["show"],
        ["show", "--heads", "2", "--stats"],
        ["steps", "-v", "additive", "--query", "5"],
        ["tokens"],
        ["compare", "--tokenizers", "char,word,{path}"],
    ],
)
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
        drawn = tokenize(HOSTILE_TEXT, hostile_json).drawn()  # as text (␣ before all but the first), or raw
        for token, label in zip(HOSTILE_TOKENS, drawn, strict=True):  # long labels: their first 7 columns and …
            assert escape_token(token)[:7] in text or escape_token(label)[:7] in text, token
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


@pytest.mark.parametrize(
    "args, shown",
    [
        (["show", "a", "-t", f"missing{HOSTILE_NAME}.json"], "tokenizer file not found: missing"),
        (["show", "--file", f"{HOSTILE_NAME}.txt"], "no such file: tok[bold]\\x1b]0;t\\x07<U+202E>.txt"),
        (["show", "a", "-o", f"{HOSTILE_NAME}/x.json"], "cannot write tok[bold]\\x1b]0;t\\x07<U+202E>/x.json"),
        (["compute", "--q", f"{HOSTILE_NAME}.npy"], "no such file: tok[bold]\\x1b]0;t\\x07<U+202E>.npy"),
        (["show", "a", "--mask", "window:\x1b[2J"], "mask 'window:\\x1b[2J' needs a whole number"),
        (["show", "a", "--\x1b]0;t\x07"], "attn show has no option --\\x1b]0;t\\x07"),
        (["--\u202eevil"], "attn has no option --<U+202E>evil"),
        (["show", "a", "b\x1b[2J"], 'quote a text of several words, as in attn show "a b\\x1b[2J"'),
        (["show", "a", "--context", "\u202e\u200b", "-t", "char", "--dim", "\x1b[2J"], "'\\x1b[2J' is not a valid"),
    ],
)
def test_error_lines_quote_user_text_escaped(args, shown):
    r = attn(*args)
    assert r.exit_code in (1, 2) and "Traceback" not in r.output
    err = inert(r.stderr_bytes)
    assert shown in err, err
    error_lines = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(error_lines) == 1


def test_pictures_are_escaped_and_well_formed(tmp_path, hostile_json):
    svg, html = tmp_path / "a.svg", tmp_path / "a.html"
    r = attn(
        "show",
        HOSTILE_TEXT,
        "-t",
        hostile_json,
        "--save-svg",
        str(svg),
        "--save-html",
        str(html),
        "--color",
        "always",
        env={"COLUMNS": "400"},
    )
    assert r.exit_code == 0, r.output
    for path in (svg, html):
        inert(path.read_bytes())
    ET.fromstring(svg.read_text(encoding="utf-8"))  # well-formed XML: no raw control characters in it
    assert "[red]x[/red]" in html.read_text(encoding="utf-8")


def test_wide_and_combining_tokens_keep_the_columns_aligned(hostile_json):
    r = attn("show", HOSTILE_TEXT, "-t", hostile_json, "--color", "never", env={"COLUMNS": "400"})
    assert r.exit_code == 0
    lines = r.stdout.split("\n")
    top = lines.index("Attention weights A = softmax(S)")
    rows = lines[top + 3 : top + 3 + len(HOSTILE_TOKENS)]  # under the title, the header and its rule
    assert lines[top + 3 + len(HOSTILE_TOKENS)].startswith("scaled: s = ")
    ends = [[cell_len(line[: m.end()]) for m in re.finditer(r"\d\.\d\d", line)] for line in rows]
    assert all(e == ends[0] for e in ends), "a number column moved in a row with a wide or combining label"
    assert len({cell_len(line.rstrip()) for line in rows}) == 1
    assert "◌\u0301" in r.stdout or "␣\u0301" in r.stdout  # a combining mark never lands on a cell's border


@pytest.mark.skipif(os.name != "posix", reason="needs a pty")
def test_a_real_terminal_gets_only_colour_codes(tmp_path, hostile_json):
    import pty

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
        env.pop(name, None)
    text = HOSTILE_TEXT.replace("\x00", "")  # argv cannot carry NUL
    for args in (
        ["show", text, "-t", hostile_json],
        ["show", "a", "-t", f"nope{HOSTILE_NAME}.json"],
        ["show", text, "-t", hostile_json, "-f", "csv"],  # data formats are escaped on a terminal too
        ["tokens", text, "-t", hostile_json, "-f", "jsonl"],
    ):
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
    p = subprocess.Popen(
        [sys.executable, "-m", "attncli", "show", "--file", str(path), "--lines"],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    )
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


# ---- bad input: one line `Error: ...`, exit 1 for data, 2 for option values, never a traceback --------------


def one_error(r, code: int, message: str) -> None:
    """conftest's `refused`, in the argument order of this file's many cases."""
    refused(r, message, code=code)


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        (["show", ""], None, "empty text: nothing to tokenize"),
        (["show", " \t\n\u3000"], None, "the word tokenizer produced no tokens"),
        (["steps", "   "], None, "the word tokenizer produced no tokens"),
        (["compare", "\n"], None, "the word tokenizer produced no tokens"),
        (["tokens", ""], None, "empty text"),
        (["tokens", "  \n "], None, "the word tokenizer produced no tokens"),
        (["show", "-"], b"", "empty text"),
        (["show", "-", "--lines"], b"\n \n\t\n", "every line of stdin is blank"),
        (["show", "a", "--context", ""], None, "empty context"),
        (["show", "a", "--context", "  "], None, "the word tokenizer produced no tokens for '  '"),
        (["compute"], b"  \n", "stdin is empty"),
        (["show", "-"], b"ab\xffcd", "stdin is not valid UTF-8: byte 0xff at offset 2"),
        (["show", "-", "--lines"], b"ok\nab\xc3(\n", "stdin line 2 is not valid UTF-8: byte 0xc3 at offset 2"),
        (["tokens", "-"], b"\xe2\x82", "stdin is not valid UTF-8: byte 0xe2 at offset 0"),
        (["compute"], b'{"q": [[1]]}\xff', "stdin is not valid UTF-8: byte 0xff at offset 12"),
        (["show", "a\udcffb"], None, "TEXT is not valid UTF-8: byte 0xff at offset 1"),  # how argv carries bytes
        (["show", "a", "--context", "\udce2\udc82"], None, "--context is not valid UTF-8: byte 0xe2 at offset 0"),
        (["show", "a", "--mask", "window:2", "--context", "x\ud800"], None, "--context is not valid UTF-8"),
    ],
)
def test_bad_text_is_one_line_and_exit_1(args, stdin, message):
    one_error(attn(*args, input=stdin), 1, message)


def test_invalid_utf8_in_files_names_the_offset_and_replace_reads_on(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes("café ".encode() + b"\x80 ok")
    one_error(attn("show", "--file", str(bad)), 1, f"{bad} is not valid UTF-8: byte 0x80 at offset 6")
    one_error(attn("show", "--file", str(bad), "--lines"), 1, f"{bad} line 1 is not valid UTF-8: byte 0x80 at")
    given = tmp_path / "q.json"
    given.write_bytes(b'{"q": [[1, 2]], "note": "\xfe"}')
    one_error(attn("compute", "--input", str(given)), 1, f"{given} is not valid UTF-8: byte 0xfe at offset 25")
    r = attn("show", "--file", str(bad), "--errors", "replace", "-f", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["tokens"] == ["café", "\ufffd", "ok"]
    assert r.stderr == (
        f"Warning: {bad} is not valid UTF-8: 1 bad sequence read as U+FFFD (the first, 0x80, at byte offset 6)\n"
    )
    r = attn("tokens", "a\udcffb\udcfe", "--errors", "replace", "-f", "json", "-t", "char")
    assert r.exit_code == 0 and "2 bad sequences" in r.stderr
    assert [row["token"] for row in json.loads(r.stdout)["rows"]] == ["a", "\ufffd", "b", "\ufffd"]
    r = attn("show", "-", "--lines", "--errors", "replace", input=b"a\xffb\nc\n")
    assert r.exit_code == 0 and [json.loads(x)["tokens"] for x in r.stdout.splitlines()] == [
        ["a", "\ufffd", "b"],
        ["c"],
    ]
    one_error(attn("show", "a", "--errors", "ignore"), 2, "'ignore' is not one of 'strict', 'replace'")


@pytest.fixture
def empty_tokenizer(tmp_path) -> str:
    """A WordPiece tokenizer.json that strips accents and adds no special tokens: "\u0301" gives no tokens."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(strip_accents=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    path = tmp_path / "strip.json"
    tok.save(str(path))
    return str(path)


def test_a_tokenizer_that_yields_no_tokens(empty_tokenizer):
    for command in ("show", "steps", "tokens"):
        one_error(attn(command, "\u0301\u0301", "-t", empty_tokenizer), 1, "tokenizer produced no tokens for '")
    one_error(attn("compare", "\u0301", "--tokenizers", f"char,{empty_tokenizer}"), 1, "produced no tokens")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "not a valid tokenizer.json"),
        (b"{}", "not a valid tokenizer.json"),
        (b"[1, 2]", "not a valid tokenizer.json"),
        (b'{"version": "1.0", "model": {"type": "BPE", "vocab": "x"}}', "not a valid tokenizer.json"),
        (b"\x00\x01\x02garbage", "not a valid tokenizer.json"),
        (b'{"model": "\xff"}', "is not valid UTF-8: byte 0xff at offset 11"),
    ],
)
def test_a_corrupt_or_foreign_json_as_tokenizer(tmp_path, content, message):
    path = tmp_path / "t.json"
    path.write_bytes(content)
    for args in (
        ["show", "a b", "-t", str(path)],
        ["tokens", "a", "-t", str(path)],
        ["compare", "a", "--tokenizers", f"word,{path}"],
    ):
        one_error(attn(*args), 1, message)


def test_an_endless_or_huge_input_is_refused_without_reading_it_all(tmp_path, monkeypatch):
    tokenize_module = sys.modules[
        "attncli.pipeline.tokenize"
    ]  # (attncli.pipeline.tokenize is also the function's name)
    monkeypatch.setattr(tokenize_module, "MAX_TOKENIZER_BYTES", 1000)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 1001)
    one_error(attn("show", "a", "-t", str(big)), 1, f"tokenizer {big} is larger than 1,000 bytes")
    if os.path.exists("/dev/zero"):
        one_error(
            attn("show", "--file", "/dev/zero"),
            1,
            "/dev/zero is larger than 64 MiB, the most attn reads as one input: use --lines",
        )
        one_error(attn("show", "--file", "/dev/zero", "--lines"), 1, "/dev/zero line 1 is longer than 64 MiB")
        one_error(attn("compute", "--input", "/dev/zero"), 1, "/dev/zero is larger than 64 MiB")


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", "--file", "{dir}"], "{dir} is a directory, expected a text file"),
        (["show", "--file", "{missing}"], "no such file: {missing}"),
        (["show", "--file", "{missing}", "--lines"], "no such file: {missing}"),
        (["steps", "--file", "{dir}"], "is a directory"),
        (["show", "a", "-t", "{dir}"], "tokenizer path is a directory, expected a tokenizer.json file: {dir}"),
        (["show", "a", "-t", "{missing}.json"], "tokenizer file not found: {missing}.json"),
        (["tokens", "a", "-t", "{dir}"], "tokenizer path is a directory"),
        (["compare", "a", "--tokenizers", "word,{dir}"], "tokenizer path is a directory"),
        (["compute", "--input", "{dir}"], "--input {dir} is a directory, expected a JSON file"),
        (["compute", "--input", "{missing}"], "no such file: {missing} (--input)"),
        (["compute", "--q", "{dir}"], "--q {dir} is a directory, expected a .npy file"),
        (["compute", "--q", "{missing}"], "no such file: {missing} (--q)"),
        (["compute", "--q", "{npy}", "--k", "{missing}"], "no such file: {missing} (--k)"),
        (["compute", "--q", "{npy}", "--v", "{dir}"], "--v {dir} is a directory"),
    ],
)
def test_a_directory_or_a_missing_path_where_a_file_is_expected(tmp_path, args, message):
    import numpy as np

    np.save(tmp_path / "q.npy", np.eye(2))

    def fill(s):
        return (
            s.replace("{dir}", str(tmp_path))
            .replace("{missing}", str(tmp_path / "missing"))
            .replace("{npy}", str(tmp_path / "q.npy"))
        )

    one_error(attn(*map(fill, args)), 1, fill(message))


@pytest.mark.parametrize(
    "option, values",
    [
        ("--dim", ["0", "-1", "4097", "99999999999999999999999"]),
        ("--heads", ["0", "-2", "257"]),
        ("--dk", ["0", "-1", "4097"]),
        ("--dv", ["0", "-3"]),
        ("--d-a", ["0", "-1", "5000"]),
        ("--precision", ["-1", "18", "1000000000000"]),
        ("--temperature", ["0", "-0.0", "-1", "nan", "inf", "-inf"]),
        (
            "--mask",
            [
                "window:-1",
                "window:",
                "window:x",
                "window:1.5",
                "window:²",
                "window:٣",
                "window:10000000001",
                "topk:0",
                "topk:-1",
                "topk:" + "9" * 5000,
                "causal:1",
                "nope",
                "window",
            ],
        ),
        ("--seed", ["-1", str(2**63), str(10**30)]),
    ],
)
def test_absurd_option_values_are_usage_errors(option, values):
    for value in values:
        for command in (["show", "a b"], ["steps", "a b"], ["compare", "a b"]):
            if option == "--precision" and command[0] == "steps":
                continue  # (checked below with -f json)
            one_error(attn(*command, f"{option}={value}"), 2, option.lstrip("-") if option != "--mask" else "mask")
    for value in values:  # attn compute checks the ones it has
        if option in ("--d-a", "--temperature", "--mask", "--seed", "--precision"):
            one_error(
                attn("compute", f"{option}={value}", input='{"q": [[1, 0]]}'),
                2,
                option.lstrip("-") if option != "--mask" else "mask",
            )


@pytest.mark.parametrize(
    "args",
    [
        ["--dim", "abc"],
        ["--heads", "1.5"],
        ["--temperature", "warm"],
        ["--seed", "0x10"],
        ["--precision", ""],
        ["--dim", "9" * 5000],
        ["--query", "-3"],  # -1 is the last token, as show's --query reads it; -3 is before the first of two
        ["--query", "2"],
        ["--query", "banana"],
    ],
)
def test_non_numeric_or_out_of_range_values_exit_2(args):
    r = attn("steps", "a b", *args)
    assert r.exit_code == 2 and "Traceback" not in r.output and r.stderr.count("Error:") == 1, r.output


def test_the_precision_is_checked_on_every_path():
    one_error(attn("show", "a", "--stats", "-f", "json", "--precision", "-3"), 2, "--precision must be between 0")
    one_error(attn("steps", "a", "-f", "json", "--precision", "40"), 2, "--precision must be between 0")
    one_error(attn("show", "-", "--lines", "--precision", "-1", input="a\n"), 2, "--precision must be between 0")
    one_error(attn("tokens", "a", "--precision", "-1"), 2, "--precision must be between 0")


def test_output_into_a_missing_or_impossible_place(tmp_path):
    (tmp_path / "somefile.txt").write_text("x")
    one_error(attn("show", "a", "-o", str(tmp_path / "nope" / "x.json")), 1, "no such directory")
    one_error(
        attn("show", "a", "-o", str(tmp_path / "somefile.txt" / "x.json")),
        1,
        f"{tmp_path / 'somefile.txt'} is a file, not a directory",
    )
    one_error(attn("show", "a", "-o", str(tmp_path / "somefile.txt" / "y" / "x.json")), 1, "is a file, not a dir")
    (tmp_path / "d.json").mkdir()
    one_error(attn("show", "a", "-o", str(tmp_path / "d.json")), 1, "it is a directory")
    one_error(attn("show", "a", "--save-svg", str(tmp_path / "nope" / "x.svg")), 1, "no such directory")
    one_error(attn("compute", "-o", str(tmp_path / "nope" / "x.json"), input='{"q": [[1]]}'), 1, "no such dir")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json", "somefile.txt"]  # nothing half-written


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_output_into_an_unwritable_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        one_error(attn("show", "a", "-o", str(locked / "x.json")), 1, "cannot write")
    finally:
        locked.chmod(0o700)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_output_to_a_fifo_writes_into_it_and_never_replaces_it(tmp_path):
    import stat
    import threading

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    r = attn("show", "time flies", "-o", str(fifo))
    reader.join(10)
    assert r.exit_code == 0 and stat.S_ISFIFO(os.stat(fifo).st_mode)  # /dev/null, as root, is not replaced either
    assert json.loads(got[0])["tokens"] == ["time", "flies"]


def test_a_tokenizer_that_cannot_encode_the_text(tmp_path):
    """Found by tests/test_fuzz.py: a WordLevel tokenizer.json with no [UNK] raised from `tokenizers`."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"time": 0}))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    path = tmp_path / "no-unk.json"
    tok.save(str(path))
    assert attn("tokens", "time", "-t", str(path)).exit_code == 0
    for args in (["show", "time flies"], ["tokens", "flies"], ["steps", "x"]):
        one_error(
            attn(*args, "-t", str(path)),
            1,
            f"tokenizer {path} cannot encode this text: WordLevel error: Missing [UNK] token from the vocabulary",
        )


@pytest.mark.parametrize(
    "args, closing, message",
    [  # hostile round III: each was an internal error (Python sets sys.stdout or sys.stdin to None)
        (["show", "a b"], ">&-", "cannot write the output to stdout: it is closed (attn was started with >&-)"),
        (["show", "a b", "-f", "npy"], ">&-", "cannot write the output to stdout: it is closed"),
        (["--help"], ">&-", "cannot write the output to stdout: it is closed"),
        (["show", "-"], "<&-", "cannot read stdin: it is closed (attn was started with <&-)"),
        (
            ["heads", "--lines", "-", "--model", ROOT / "tests/models/known/gpt2-known-heads"],
            "<&-",
            "cannot read stdin",
        ),
    ],
)
def test_a_closed_standard_stream_is_one_line(args, closing, message):
    script = 'exec "$0" -m attncli "$@" ' + closing
    p = subprocess.run(["sh", "-c", script, sys.executable, *args], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 1 and p.stderr.startswith(f"Error: {message}"), p.stderr
    assert p.stderr.count("\n") == 1 and "internal error" not in p.stderr, p.stderr


def test_a_closed_stdout_is_not_needed_to_write_a_file(tmp_path):
    out = tmp_path / "a.json"
    script = 'exec "$0" -m attncli show "a b" -o "$1" >&-'
    p = subprocess.run(["sh", "-c", script, sys.executable, out], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and p.stderr == "" and json.loads(out.read_text())["tokens"] == ["a", "b"]


# ---- hostile round IV: the new options' exit codes ----------------------------------------------------------

GOLDEN_DECODER = ROOT / "tests" / "models" / "golden" / "qwen2"  # 64 positions


@pytest.mark.parametrize(
    "args, code, message",
    [  # 9: the target's checks came after the text's (exit 1); 10: an absurd --generate was "the text is too long"
        (["ablate", "time flies", "--target", ""], 2, "--target is empty: give one token"),
        (["ablate", "", "--target", ""], 2, "--target is empty"),  # the command line's mistake first
        (["ablate", "time flies", "--target", "x" * 100_000], 2, "--target is 100,000 characters long"),
        (["ablate", "time flies", "--target", " time flies like"], 2, "give one token"),
        (["show", "time flies", "--generate", "1000000000"], 2, "--generate 1,000,000,000 is more tokens than"),
        (["show", "time flies", "--generate", "65"], 2, "--generate 65 is more tokens than"),
        (["show", "time flies", "--generate", "60"], 1, "and --generate 60 more, but"),  # this text's room
    ],
)
def test_the_new_options_exit_codes(args, code, message):
    one_error(attn(*args, "--model", GOLDEN_DECODER), code, message)


@pytest.mark.parametrize(
    "args",
    [  # 11: whitespace alone was refused, though these tokenizers encode it
        ["show", "\n\n\n", "-t", "char"],
        ["steps", " \t ", "-t", "char"],
        ["show", "\n\n\n", "--model", GOLDEN_DECODER],
        ["tokens", "\n\n\n", "--model", GOLDEN_DECODER],
    ],
)
def test_whitespace_alone_is_a_text_its_tokenizer_encodes(args):
    r = attn(*args, "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc.get("tokens") or doc.get("rows"), doc
