"""The `attn` command through typer's CliRunner (in-process) and, where a real process matters, a subprocess."""

import json
import subprocess
import sys

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
