"""`attn show/steps/heads --model` on the encoder–decoder golden folders: --part, the alignment, the refusals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import attn, refused
from tests.tolerance import assert_within, rollout_sum_bound

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
SOURCE, TARGET = "the cat sat on the mat", "le chat est assis sur le tapis"


@pytest.mark.parametrize("name", ["bart", "t5", "marian"])
def test_show_cross_json_is_transformers_cross_attention(name):
    folder = GOLDEN / name
    r = attn("show", TARGET, "--model", folder, "--context", SOURCE, "--layer", 0, "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    ref = np.load(folder / "reference.npz")["short_cross"][0]  # layer 0, every head
    assert len(doc["context_tokens"]) == ref.shape[2] and len(doc["tokens"]) == ref.shape[1]
    assert doc["config"]["part"] == "cross"
    assert np.abs(np.array([h["weights"] for h in doc["heads"]]) - ref).max() <= 1e-5


def test_the_alignment_table_names_itself_and_marks_each_row():
    r = attn("show", TARGET, "--model", GOLDEN / "bart", "--context", SOURCE, "--mean-heads", "--width", 120)
    assert r.exit_code == 0, r.output
    assert "alignment: rows = target tokens (9), columns = source tokens (8)" in r.output
    assert "Cross-attention alignment: target queries × source keys, mean of the 4 heads" in r.output
    every = attn("show", TARGET, "--model", GOLDEN / "bart", "--context", SOURCE, "--width", 120).output
    assert every.startswith("Cross-attention alignment: target queries × source keys, every head\nhead 0")
    one = attn("show", TARGET, "--model", GOLDEN / "t5", "--context", SOURCE, "--part", "decoder", "--head", 1).output
    assert one.startswith("Decoder self-attention (causal): target × target, A = softmax(S)")
    matrix = r.output.split("Output O")[0]
    rows = [line for line in matrix.splitlines() if line.startswith(("le ", "chat ", "tapis "))]
    assert rows and all(line.count("▸") == 1 for line in rows)


def test_parts_steps_heads_and_rollout_run():
    bart = GOLDEN / "t5"
    steps = attn("steps", TARGET, "--model", bart, "--context", SOURCE, "-f", "json")
    assert steps.exit_code == 0, steps.output
    names = [s["name"] for s in json.loads(steps.output)["steps"]]
    assert names[:3] == ["x", "x_context", "q"]
    for args in (
        ("show", SOURCE, "--part", "encoder"),
        ("show", TARGET, "--part", "decoder", "--context", SOURCE, "--head", 2),
        ("show", TARGET, "--part", "decoder", "--context", SOURCE, "--rollout"),
        ("heads", TARGET, "--part", "decoder", "--context", SOURCE),
        ("heads", SOURCE, "--part", "encoder"),
    ):
        r = attn(*args, "--model", bart, "--width", 100)
        assert r.exit_code == 0, (args, r.output)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("show", TARGET, "--model", GOLDEN / "bart"), "give it with --context SOURCE"),
        (("show", TARGET, "--model", GOLDEN / "bert", "--part", "cross"), "its only part is encoder"),
        (("show", TARGET, "--model", GOLDEN / "gpt2", "--part", "decoder", "--context", "x"), "sentence pair"),
        (("show", TARGET, "--part", "cross"), "--part needs --model"),
        (("heads", TARGET, "--model", GOLDEN / "t5", "--context", SOURCE, "--stat", "previous"), "see monotonic"),
        (("heads", SOURCE, "--model", GOLDEN / "t5", "--part", "encoder", "--stat", "monotonic"), "--part cross"),
    ],
)
def test_refusals_say_what_to_do(args, says):
    r = attn(*args)
    assert r.exit_code != 0 and says in r.output, r.output


@pytest.mark.parametrize("command", ["show", "steps", "heads", "view"])
def test_a_target_without_its_source_is_told_about_the_default_part_in_its_own_terms(command):
    r = attn(command, "bonjour", "--model", GOLDEN / "t5")
    refused(r, code=2)
    assert "--part cross (the default)" in r.stderr and "give it with --context SOURCE" in r.stderr
    assert "le chat" not in r.stderr and "attn show" not in r.stderr  # no example of another text or command
    given = attn(command, "bonjour", "--model", GOLDEN / "t5", "--part", "decoder").stderr
    assert "--part decoder runs" in given and "(the default)" not in given


def test_heads_of_the_cross_attention():
    r = attn("heads", TARGET, "--model", GOLDEN / "marian", "--context", SOURCE, "--stat", "diagonality", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["part"] == "cross" and "diagonal" in doc["undefined"] and "diagonality" in doc["stats"]
    assert doc["context_tokens"][-1] == "</s>" and len(doc["rows"]) == 2 * 4
    table = attn(
        "heads", TARGET, "--model", GOLDEN / "marian", "--context", SOURCE, "--stat", "monotonic", "--width", 100
    )
    assert table.exit_code == 0, table.output
    assert "monotonic of every head" in table.output and "source tokens (columns)" in table.output
    assert "no previous:" in table.output


def test_cross_rollout_as_json_and_csv():
    args = ("show", TARGET, "--model", GOLDEN / "bart", "--context", SOURCE, "--rollout")
    doc = json.loads(attn(*args, "-f", "json").output)
    matrix = np.array(doc["rollout"])
    assert matrix.shape == (len(doc["tokens"]), len(doc["context_tokens"]))
    # the source's flows renormalised in float64: one layer's renormalisation of rollout_sum_bound
    assert_within(matrix.sum(-1), 1, rollout_sum_bound(matrix.shape[1], 1))
    assert doc["context"] == SOURCE and "Chefer" in doc["config"]["method"]
    rows = attn(*args, "-f", "csv").output.splitlines()
    assert rows[0] == "query_index,query,key_index,key,weight" and rows[1].startswith("0,</s>,0,<s>,")
    table = attn(*args, "--width", 100).output
    assert "Cross-attention rollout: target rows, source columns" in table


@pytest.mark.parametrize("command", ["show", "steps", "heads", "view", "explore"])
def test_the_help_of_context_says_what_it_is_with_every_kind_of_model(command):
    """--context is the source of an encoder–decoder (whatever --part), the pair's second text of an encoder."""
    said = " ".join(attn(command, "--help").output.split())
    context = re.search(r"--context <str> (.*?)(?= -h, --help| --\w[\w-]* <)", said)[1]
    assert "encoder–decoder" in context and "source" in context and "sentence pair" in context


@pytest.mark.parametrize(
    ("target", "advice"),
    [("le chat", "'en_XX le chat'"), ("le chat fr_XX", "'fr_XX le chat'"), ("le fr_XX chat", "'fr_XX le chat'")],
)
def test_an_mbart_target_without_its_code_first_is_shown_the_target_to_give(target, advice):
    r = attn("show", target, "--model", GOLDEN / "mbart", "--context", SOURCE)
    assert r.exit_code == 1 and r.stderr.endswith(f"put one first in the target: {advice}\n"), r.stderr
    assert attn("show", advice.strip("'"), "--model", GOLDEN / "mbart", "--context", SOURCE).exit_code == 0


@pytest.mark.parametrize("repeat", [40, 300])  # past the positions (64); past 16 characters a position (counted early)
def test_a_source_too_long_for_the_model_is_called_the_context(repeat):
    r = attn("show", TARGET, "--model", GOLDEN / "bart", "--context", "the cat " * repeat)
    assert r.exit_code == 1 and r.stderr.startswith("Error: the context is "), r.stderr
    assert "takes at most 64" in r.stderr
    r = attn("show", "le chat " * repeat, "--model", GOLDEN / "bart", "--context", SOURCE)
    assert r.exit_code == 1 and r.stderr.startswith("Error: the text is "), r.stderr


@pytest.mark.parametrize("part", ["cross", "decoder", "encoder"])
def test_a_layer_out_of_range_names_the_part_and_its_layers_as_an_encoder_does(part):
    r = attn("show", TARGET, "--model", GOLDEN / "bart", "--context", SOURCE, "--part", part, "--layer", -9)
    assert r.stderr == f"Error: layer -9 is out of range: --part {part} of bart has 2 layers, 0..1\n", r.stderr


@pytest.mark.parametrize("name", ["bart", "t5", "marian", "mbart"])
def test_heads_over_a_corpus_of_an_encoder_decoder_reads_its_encoder(name, tmp_path):
    """Two lines of different lengths (one padded batch): the corpus's mean row entropy is the encoder's, text by
    text, weighted by the rows of each (T5's position bias once took the batch size for the length)."""
    lines = ["the cat sat on the mat", "a dog"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n")
    r = attn("heads", "--model", GOLDEN / name, "--lines", "--file", corpus, "--workers", 1, "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["texts"] == 2 and doc["skipped"] == 0 and doc["part"] == "encoder"
    ones = [
        json.loads(attn("heads", t, "--model", GOLDEN / name, "--part", "encoder", "-f", "json").stdout) for t in lines
    ]
    n = np.array([len(one["tokens"]) for one in ones])
    each = np.array([[row["entropy"] for row in one["rows"]] for one in ones])  # [texts, layer × head]
    assert np.abs(np.array([row["entropy"] for row in doc["rows"]]) - n @ each / n.sum()).max() <= 1e-5


def test_heads_over_a_corpus_says_an_encoder_decoder_reads_each_line_with_its_encoder():
    r = attn("heads", "--model", GOLDEN / "bart", "--lines", "the cat sat\na dog", "--workers", 1, "--width", 200)
    assert r.exit_code == 0 and "the encoder's self-attention (each line is a source)" in r.stdout
    r = attn("heads", "--model", GOLDEN / "bert", "--lines", "the cat sat\na dog", "--workers", 1, "-f", "json")
    assert "part" not in json.loads(r.stdout)
