"""`attn lens`: every layer's next-token prediction, through the CLI's formats; the last layer is the model's own."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from attncli.models import encode, forward, load_model
from attncli.models.network.unembed import logits, probabilities
from tests.conftest import attn

GOLDEN = Path(__file__).parents[1] / "models" / "golden"
TEXT = "time flies like an arrow"


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("name", ["llama", "gpt2", "gpt_neox", "gemma2"])
def test_json_rows_every_layer_and_position_the_last_the_models_own(name):
    folder = GOLDEN / name
    doc = json.loads(ok("lens", TEXT, "--model", folder, "--top-k", "3", "-f", "json"))
    model = load_model(folder)
    ids = encode(model, TEXT).ids
    assert doc["schema"] == "attncli.lens/1" and doc["k"] == 3
    assert [(r["layer"], r["position"]) for r in doc["rows"]] == [
        (l, i) for l in range(model.n_layer + 1) for i in range(len(ids))
    ]
    run = forward(model, ids)
    probs = probabilities(logits(model, run.final))  # [n, vocab]: the model's own prediction
    for r in doc["rows"][-len(ids) :]:
        assert r["top_ids"] == list(np.argsort(-probs[r["position"]], kind="stable")[:3])
        np.testing.assert_allclose(r["top_probs"], np.sort(probs[r["position"]])[::-1][:3], rtol=1e-12)
        assert r["top_tokens"] == [model.tokenizer.id_to_token(i) for i in r["top_ids"]]
        assert r["top_probs"] == sorted(r["top_probs"], reverse=True)


def test_table_has_every_layer_and_says_what_the_cells_are():
    out = ok("lens", TEXT, "--model", GOLDEN / "llama", "--width", "200")
    assert "logit lens" in out and "[3 layers ×" in out
    assert "the last, layer 2, is the model's own prediction" in out
    assert "nothing" not in out


def test_narrow_table_elides_positions_and_says_which():
    out = ok("lens", TEXT, "--model", GOLDEN / "llama", "--width", "40")
    assert "positions (" in out and "hidden; --width" in out


def test_csv_and_jsonl_rows():
    rows = list(csv.DictReader(io.StringIO(ok("lens", TEXT, "--model", GOLDEN / "gpt2", "-f", "csv"))))
    assert list(rows[0]) == ["layer", "position", "top_ids", "top_tokens", "top_probs", "top_texts"]
    assert len(json.loads(rows[0]["top_ids"])) == 5
    lines = ok("lens", TEXT, "--model", GOLDEN / "gpt2", "-f", "jsonl").splitlines()
    assert len(lines) == len(rows)


def test_an_encoder_has_no_next_token_head():
    r = attn("lens", TEXT, "--model", GOLDEN / "bert")
    assert r.exit_code == 2 and "is an encoder (bert): it has no next-token head" in r.stderr


def test_top_k_is_checked():
    r = attn("lens", TEXT, "--model", GOLDEN / "gpt2", "--top-k", "0")
    assert r.exit_code == 2 and "--top-k must be between 1 and 100, got 0" in r.stderr


def test_an_encoder_decoder_needs_its_source():
    r = attn("lens", TEXT, "--model", GOLDEN / "bart")
    assert r.exit_code == 2 and "bart is an encoder–decoder: its lens is its decoder's over TEXT" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_an_encoder_decoders_lens_is_its_decoders_over_the_target():
    doc = json.loads(ok("lens", "le chat", "--model", GOLDEN / "t5", "--context", "the cat sat", "-f", "json"))
    assert doc["tokens"] == ["<pad>", "le", "chat"] and doc["source"] == "the cat sat" and doc["n_layer"] == 2
    assert doc["layers"].startswith("layer 0 = the decoder's embeddings")


def test_format_offers_only_what_a_lens_writes():
    """-f offers the formats of rows (Records): npy and npz are refused by the option itself, in one line."""
    r = attn("lens", TEXT, "--model", GOLDEN / "gpt2", "-f", "npz")
    assert r.exit_code == 2 and r.stderr.splitlines() == [
        "Error: invalid value for '-f' / '--format': 'npz' is not one of 'table', 'json', 'jsonl', 'csv', 'parquet', "
        "'svg', 'html' (attn lens --help)"
    ]
