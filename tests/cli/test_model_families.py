"""Every registered family through the command line: `attn show`, `heads`, `steps` and `--rollout`
on the golden folders of tests/models/golden/ (tiny random models saved by transformers)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncli.models import encode, forward, load_model
from tests.conftest import attn
from tests.models.test_golden import FOLDERS, GOLDEN
from tests.tolerance import assert_within, rollout_sum_bound

TEXT = "time flies like an arrow"


def run(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("name", [n for n in FOLDERS if not (GOLDEN / n / "pairs.json").is_file()])
def test_show_heads_steps_and_rollout_work_for_every_family(name):  # encoder–decoders: tests/cli/test_seq2seq.py
    folder = GOLDEN / name
    model = load_model(folder)
    ids = encode(model, TEXT).ids
    expected = forward(model, ids).weights
    doc = json.loads(run("show", TEXT, "--model", folder, "--layer", 1, "-f", "json"))
    assert np.array_equal(np.array([h["weights"] for h in doc["heads"]]), expected[1].astype(float))
    assert name.split("-")[0] in run("show", TEXT, "--model", folder, "--color", "never")
    heads = json.loads(run("heads", TEXT, "--model", folder, "-f", "json"))
    assert len(heads["rows"]) == model.n_layer * model.n_head
    steps = json.loads(run("steps", TEXT, "--model", folder, "--layer", 0, "--head", 1, "-f", "json"))
    outputs = next(s for s in steps["steps"] if s["name"] == "head_outputs")
    layer0 = forward(model, ids, upto_layer=0, steps_layer=0).steps
    assert layer0 is not None and np.array_equal(np.array(outputs["array"])[0], layer0.out[1].astype(float))
    rollout = json.loads(run("show", TEXT, "--model", folder, "--rollout", "-f", "json"))
    r = np.array(rollout["rollout"])
    assert_within(r.sum(-1), 1, rollout_sum_bound(len(r), model.n_layer))


def test_grouped_query_heads_name_their_key_value_head():
    folder = GOLDEN / "qwen2"
    doc = json.loads(run("show", TEXT, "--model", folder, "--layer", 1, "--head", 3, "-f", "json"))
    assert (doc["config"]["n_kv_head"], doc["config"]["kv_head"]) == (2, 1)
    assert doc["config"]["mask"] == ["causal", "window:7"] and doc["config"]["positional"] == "rope"
    heads = json.loads(run("heads", TEXT, "--model", folder, "-f", "json"))
    assert [r["kv_head"] for r in heads["rows"][:4]] == [0, 0, 1, 1]
    caption = run("show", TEXT, "--model", folder, "--layer", 1, "--head", 3, "--color", "never", "--width", 200)
    assert "head 3 reads key/value head 1, shared by query heads 2..3" in caption
    assert "sliding window 8" in caption
    assert "H0–H1 key/value head 0" in run("heads", TEXT, "--model", folder, "--color", "never", "--width", 200)


def test_gemma2_caption_names_the_soft_cap_and_the_steps_name_rope():
    folder = GOLDEN / "gemma2"
    caption = run("show", TEXT, "--model", folder, "--layer", 0, "--color", "never", "--width", 200)
    assert "2 · tanh(" in caption and "sliding window 8" in caption
    steps = run("steps", TEXT, "--model", folder, "--layer", 1, "--head", 0, "--color", "never", "--width", 200)
    assert "Q = RoPE(X W_Q + b_Q)" in steps and "sliding window" not in steps.split("Q = RoPE")[0]


@pytest.mark.parametrize("name", [n for n in FOLDERS if not (GOLDEN / n / "pairs.json").is_file()])
def test_heads_over_a_corpus_is_every_text_alone_for_every_family(name, tmp_path):
    """Two lines of different lengths run as one padded batch: the corpus's mean row entropy is that of the texts
    one by one, weighted by their rows (a causal model's row 0 left out); RoPE once took the heads for the length."""
    lines = ["the cat sat on the mat", "a dog"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n")
    folder = GOLDEN / name
    doc = json.loads(run("heads", "--model", folder, "--lines", "--file", corpus, "--workers", 1, "-f", "json"))
    assert doc["texts"] == 2 and doc["skipped"] == 0
    ones = [json.loads(run("heads", line, "--model", folder, "-f", "json")) for line in lines]
    rows = np.array([len(one["tokens"]) - one["causal"] for one in ones])
    each = np.array([[row["entropy"] for row in one["rows"]] for one in ones])  # [texts, layer × head]
    assert np.abs(np.array([row["entropy"] for row in doc["rows"]]) - rows @ each / rows.sum()).max() <= 1e-5
