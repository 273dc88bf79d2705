"""The first hour of a new user (issue 34, items 8, 9 and 12): an unset shell variable, a file name given as TEXT,
a mistyped model file, a negative head, a mistyped choice: each is said in one line that says what was meant."""

from __future__ import annotations

import json

import pytest

from attncli import api
from attncli.errors import ConfigError
from tests.conftest import ROOT, attn, refused

GPT2 = str(ROOT / "tests" / "models" / "golden" / "gpt2")


@pytest.mark.parametrize(
    "args",
    [
        ["show", "time flies", "--model", "", "--layer", "1"],  # --model $SMOLLM2 with SMOLLM2 unset
        ["heads", "--model", "--lines", "corpus.txt"],
        ["show", "time flies like an arrow", "--model", "--layer", "17", "--head", "4", "--matrix-only"],
        ["lens", "The capital of France is", "--model"],  # README example 6: the empty word is dropped
    ],
)
def test_an_empty_variable_before_another_option_is_named_as_such(args):
    r = attn(*args)
    assert "quote a text" not in refused(r, "is the variable you meant empty?", code=2)


def test_the_api_refuses_an_empty_model_name_rather_than_reading_the_current_folder():
    with pytest.raises(ConfigError, match="the model is empty"):
        api.tokens("x", model="")


def test_a_text_that_names_a_file_gets_the_hint_of_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.txt").write_text("the cat sat\nthe dog ran\n")
    r = attn("heads", "--model", GPT2, "--lines", "corpus.txt", "-f", "json")
    assert r.exit_code == 0 and "--file corpus.txt" in r.stderr
    assert json.loads(r.stdout)["texts"] == 1  # what it did: the name as a one-line corpus, and it says so
    r = attn("show", "the cat", "-f", "json")  # a text that names no file: not a word on stderr
    assert r.exit_code == 0 and r.stderr == ""


@pytest.mark.parametrize("command", ["show", "steps"])
def test_a_negative_head_counts_from_the_end_with_and_without_a_model(command):
    text_run = [command, "a b c", "--heads", "2", "-f", "json"]
    assert attn(*text_run, "--head", "-1").stdout == attn(*text_run, "--head", "1").stdout
    model_run = [command, "a b c", "--model", GPT2, "-f", "json"]
    assert attn(*model_run, "--head", "-1").stdout == attn(*model_run, "--head", "3").stdout


def test_a_caption_says_what_the_weights_are_as_the_folder_says_it(tmp_path):
    import shutil

    out = attn("show", "time flies", "--model", ROOT / "tests/models/golden/qwen2", "--width", "200").stdout
    assert "random weights, never trained (a test model of tools/golden_decoders.py)" in out
    assert "trained weights" not in out
    copy = tmp_path / "qwen2"
    shutil.copytree(ROOT / "tests/models/golden/qwen2", copy)
    config = json.loads((copy / "config.json").read_text())
    for hostile in ("\x1b[31mtrained", "x" * 500, 7):  # not printable, too long, not a text: not shown
        config["attncli_weights"] = hostile
        (copy / "config.json").write_text(json.dumps(config))
        out = attn("show", "time flies", "--model", copy, "--width", "200").stdout
        assert "its own weights" in out and "xxxx" not in out and "trained" not in out.replace("untrained", "")
