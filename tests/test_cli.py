"""The `attn` command through typer's CliRunner (in-process) and, where a real process matters, a subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from attncli import __version__
from attncli.cli import app

runner = CliRunner()


def attn(*args, input=None):
    return runner.invoke(app, list(args), input=input)


def test_show_json_parses_and_matches_the_schema():
    r = attn("show", "time flies like an arrow", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["tokens"] == ["time", "flies", "like", "an", "arrow"]
    assert doc["config"] == {"tokenizer": "word", "variant": "scaled", "heads": 1, "dim": 16, "d_k": 16, "d_v": 16,
                             "d_a": 16, "mask": [], "positional": "none", "projection": "random",
                             "temperature": 1.0, "seed": 0}
    w = np.array(doc["heads"][0]["weights"])
    assert w.shape == (5, 5) and np.allclose(w.sum(1), 1)
    assert np.array(doc["output"]).shape == (5, 16)


def test_show_table_has_tokens_numbers_and_caption():
    r = attn("show", "time flies like an arrow", "--color", "never")
    assert r.exit_code == 0
    for word in ("time", "flies", "arrow", "scaled", "qᵀk / √d_k", "random", "not trained", "seed 0", "Output"):
        assert word in r.stdout
    assert "\x1b[" not in r.stdout


def test_heads_give_one_panel_each_then_the_merged_output():
    r = attn("show", "time flies like an arrow", "--heads", "2", "--color", "never")
    assert "head 0" in r.stdout and "head 1" in r.stdout and "Output" in r.stdout


def test_cross_attention_and_causal_mask():
    doc = json.loads(attn("show", "time flies", "--context", "like an arrow", "--mask", "causal", "-f", "json").stdout)
    assert doc["context_tokens"] == ["like", "an", "arrow"]
    assert np.array(doc["heads"][0]["weights"]).shape == (2, 3)
    assert doc["heads"][0]["masked"] == [[False, True, True], [False, False, True]]


def test_output_file_takes_its_format_from_the_extension(tmp_path):
    out = tmp_path / "r.json"
    r = attn("show", "time flies", "-o", str(out))
    assert r.exit_code == 0 and r.stdout == ""
    assert json.loads(out.read_text())["tokens"] == ["time", "flies"]


def test_stdin_and_file(tmp_path):
    assert json.loads(attn("show", "-", "-f", "json", input="fruit flies\n").stdout)["tokens"] == ["fruit", "flies"]
    (tmp_path / "t.txt").write_text("a banana")
    assert json.loads(attn("show", "--file", str(tmp_path / "t.txt"), "-f", "json").stdout)["tokens"] == ["a", "banana"]


@pytest.mark.parametrize("args, code, message", [
    (["show", ""], 1, "Error: empty text"),
    (["show", "   "], 1, "Error: the text is only whitespace"),
    (["show", "a b", "--heads", "3"], 2, "Error: --dim 16 is not divisible by --heads 3"),
    (["show", "a b", "-t", "nope"], 2, "Error: unknown tokenizer 'nope'"),
    (["show", "a b", "-t", "missing/tokenizer.json"], 1, "Error: tokenizer file not found"),
    (["show", "a b", "-o", "out.weird"], 2, "Error: cannot tell the format"),
    (["show", "a b", "-o", "/nonexistent-dir/x.json"], 1, "Error: cannot write"),
])
def test_errors_are_one_line(args, code, message):
    r = attn(*args)
    assert r.exit_code == code
    assert r.stderr.startswith(message) and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.output


def test_unknown_variant_is_a_usage_error():
    r = attn("show", "a b", "-v", "quadratic")
    assert r.exit_code == 2 and "quadratic" in r.stderr


def test_version_and_help():
    assert attn("--version").stdout.strip() == f"attn {__version__}"
    help_text = attn("--help").stdout
    assert "show" in help_text
    assert "Usage" in attn().output


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "attncli", *args], capture_output=True, check=True).stdout


def test_same_inputs_same_bytes_in_two_processes():
    args = ("show", "time flies like an arrow", "--heads", "2", "-f", "json")
    assert _cli(*args) == _cli(*args)


def test_no_traceback_in_a_real_process():
    p = subprocess.run([sys.executable, "-m", "attncli", "show", ""], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr == "Error: empty text: nothing to tokenize\n"


# ---- --lines ----------------------------------------------------------------------------------------


def _jsonl(text):
    return [json.loads(line) for line in text.splitlines()]


def test_lines_stream_in_input_order_and_skip_blank_lines():
    source = [f"word{i} and more words {i}" if i % 7 else ("" if i % 2 else "   ") for i in range(1, 41)]
    r = attn("show", "-", "--lines", input="\n".join(source) + "\n")
    assert r.exit_code == 0, r.output
    docs = _jsonl(r.stdout)
    kept = [(i, t) for i, t in enumerate(source, 1) if t.strip()]
    assert [(d["line"], d["text"]) for d in docs] == kept  # blank lines: no object, their number skipped
    assert all(d["schema"] == "attncli.attention/1" and list(d)[:2] == ["schema", "line"] for d in docs)
    assert docs[0]["tokens"] == ["word1", "and", "more", "words", "1"]


def test_each_line_is_the_same_as_its_own_run():
    r = attn("show", "-", "--lines", "--heads", "2", input="time flies like an arrow\r\nfruit flies like a banana")
    one = json.loads(attn("show", "fruit flies like a banana", "--heads", "2", "-f", "json").stdout)
    line = _jsonl(r.stdout)[1]
    assert line.pop("line") == 2 and line == one  # CRLF and a missing last newline are fine


def test_lines_from_a_file_and_from_text(tmp_path):
    (tmp_path / "t.txt").write_text("a b\n\nc d e\n", encoding="utf-8")
    docs = _jsonl(attn("show", "--file", str(tmp_path / "t.txt"), "--lines").stdout)
    assert [(d["line"], d["tokens"]) for d in docs] == [(1, ["a", "b"]), (3, ["c", "d", "e"])]
    assert [d["line"] for d in _jsonl(attn("show", "x y\nz w", "--lines").stdout)] == [1, 2]


def test_lines_as_csv_have_a_line_column_and_one_header():
    import csv
    import io

    r = attn("show", "-", "--lines", "-f", "csv", input="a b\n\nc\n")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [(row["line"], row["query"], row["key"]) for row in rows] == [
        ("1", "a", "a"), ("1", "a", "b"), ("1", "b", "a"), ("1", "b", "b"), ("3", "c", "c")]


def test_lines_as_tables_have_a_heading_each():
    r = attn("show", "-", "--lines", "-f", "table", "--color", "never", input="time flies\n\nan arrow [red]x\n")
    assert r.exit_code == 0
    assert "line 1: time flies" in r.stdout and "line 3: an arrow [red]x" in r.stdout and "line 2" not in r.stdout
    assert r.stdout.count("Attention weights") == 2


@pytest.mark.parametrize("args, code, message", [
    (["-f", "json"], 2, "Error: --lines streams one result per line: use -f jsonl (the default), csv or table"),
    (["-o", "x.npz"], 2, "Error: --lines streams one result per line"),
    (["--heads", "3"], 2, "Error: --dim 16 is not divisible by --heads 3"),
    (["--save-svg", "x.svg"], 2, "Error: --save-svg and --save-html picture the tables: add -f table"),
])
def test_lines_refuse_what_cannot_stream(args, code, message):
    r = attn("show", "-", "--lines", *args, input="a b\n")
    assert r.exit_code == code and r.stderr.startswith(message), r.stderr


def test_lines_that_are_all_blank_are_an_error_and_a_bad_line_is_named():
    r = attn("show", "-", "--lines", input="\n  \n\n")
    assert r.exit_code == 1 and r.stderr == "Error: no text: every line of stdin is blank\n"
    r = attn("show", "-", "--lines", "-t", "missing.json", input="a\n")
    assert r.exit_code == 1 and "tokenizer file not found" in r.stderr
    r = attn("show", "-", "--lines", "--context", " ", input="a\nb\n")
    assert r.exit_code == 1 and r.stderr.startswith("Error: stdin line 1: the context is only whitespace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_lines_from_a_file_show_progress_on_a_terminal_stderr(tmp_path):
    import os
    import pty

    (tmp_path / "t.txt").write_text("time flies like an arrow\n" * 300, encoding="utf-8")
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "COLUMNS": "100"}
    p = subprocess.Popen([sys.executable, "-m", "attncli", "show", "--file", str(tmp_path / "t.txt"), "--lines"],
                         stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    out = p.stdout.read()
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
    assert p.returncode == 0 and out.count(b"\n") == 300 and b"\x1b" not in out
    assert b"attn --lines t.txt" in got and b"%" in got
