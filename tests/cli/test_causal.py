"""`attn patch`, `attn dla`, `attn knockout` through the CLI and the API (the numbers: tests/models/test_causal.py)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import attncli
from attncli.models import load_model
from attncli.models.interpret.dla import dla_document
from attncli.models.interpret.knockout import knockout_document
from attncli.models.interpret.patch import WHAT, patch_document
from tests.conftest import attn

GOLDEN = Path(__file__).parents[1] / "models" / "golden"
CLEAN, CORRUPT = "time flies like an arrow", "time fries like an arrow"


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_the_commands_whats_are_the_models():
    from attncli.api.own import WHATS

    assert tuple(WHAT) == WHATS


@pytest.mark.parametrize("what", WHAT)
def test_patch_json_is_the_models_document(what):
    folder = GOLDEN / "gpt_neox"
    args = ("--model", folder, "--target", "Ġa", "--contrast", "Ġl", "--what", what, "-f", "json")
    doc = json.loads(ok("patch", CLEAN, "--corrupt", CORRUPT, *args))
    assert doc == patch_document(load_model(folder), CLEAN, CORRUPT, "Ġa", "Ġl", what)
    assert doc["schema"] == "attncli.patch/1" and set(doc["rows"][0]) == {"layer", WHAT[what].axis, "score"}


def test_patch_table_names_the_strongest_cells_and_the_metric():
    out = ok("patch", CLEAN, "--corrupt", CORRUPT, "--model", GOLDEN / "llama", "--target", "Ġa", "--what", "heads")
    assert "strongest" in out and "m = logit(␣a) at position 17" in out and "L1.H" in out


def test_patch_of_texts_of_different_lengths_is_one_line_exit_2():
    r = attn("patch", CLEAN, "--corrupt", "time fly", "--model", GOLDEN / "llama", "--target", "Ġa")
    assert r.exit_code == 2 and r.stderr.strip() == (
        "Error: CLEAN is 18 tokens and --corrupt 8 for llama: patching needs the same number "
        "(attn tokens --model shows them)"
    )


def test_dla_json_csv_and_the_table_say_the_parts_sum_to_m():
    folder = GOLDEN / "gpt2"
    doc = json.loads(ok("dla", CLEAN, "--model", folder, "--target", "Ġa", "--contrast", "Ġl", "-f", "json"))
    assert doc == dla_document(load_model(folder), CLEAN, "Ġa", "Ġl")
    rows = list(csv.DictReader(io.StringIO(ok("dla", CLEAN, "--model", folder, "--target", "Ġa", "-f", "csv"))))
    assert list(rows[0]) == ["layer", "component", "head", "dla"]
    assert {r["component"] for r in rows} == {"embeddings", "head", "mlp"}  # its biases are 0: no rows for them
    out = ok("dla", CLEAN, "--model", folder, "--target", "Ġa", "--width", "120")
    assert "parts sum to" in out and "within float32 rounding" in out


def test_knockout_json_and_table():
    folder = GOLDEN / "qwen2"
    doc = json.loads(ok("knockout", CLEAN, "--model", folder, "--from", "flies", "--window", "1", "-f", "json"))
    assert doc == knockout_document(load_model(folder), CLEAN, "flies", None, 1)
    assert [(r["first_layer"], r["last_layer"]) for r in doc["rows"]] == [(0, 0), (1, 1)]
    out = ok("knockout", CLEAN, "--model", folder, "--from", "1-2", "--to", "-2", "--window", "2")
    assert "relative change" in out and "0–1" in out


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("knockout", CLEAN, "--from", "banana"), 2, "--from 'banana' is neither positions"),
        (("knockout", CLEAN, "--from", "0", "--window", "9"), 2, "--window must be 1..2"),
        (("dla", CLEAN, "--target", "Ġa", "--contrast", "Ġa"), 2, "--target and --contrast are the same token"),
        (("patch", CLEAN, "--corrupt", CLEAN, "--target", "Ġa"), 1, "there is no difference for a patch to restore"),
    ],
)
def test_bad_options_are_one_line(args, code, message):
    r = attn(*args, "--model", GOLDEN / "llama")
    assert r.exit_code == code and message in r.stderr, r.output


def test_an_encoder_has_no_metric():
    r = attn("dla", CLEAN, "--model", GOLDEN / "bert", "--target", "the")
    assert r.exit_code == 2 and "is an encoder (bert): it has no next-token head" in r.stderr  # docs/limits.md


def test_an_encoder_decoder_is_refused_as_a_command_line_mistake():
    r = attn("patch", CLEAN, "--corrupt", CORRUPT, "--model", GOLDEN / "t5", "--target", "a")
    assert r.exit_code == 2 and "t5 is an encoder–decoder (t5): attn patch runs on a decoder-only model" in r.stderr


def test_the_api_returns_records_with_json():
    found = attncli.knockout(CLEAN, model=str(GOLDEN / "llama"), span="flies", window=1)
    assert json.loads(found.to_json())["schema"] == "attncli.knockout/1"
    assert "attention knockout" in repr(found)
