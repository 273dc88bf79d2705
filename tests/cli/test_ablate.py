"""`attn ablate`: heads switched off one at a time, through the CLI (the numbers: tests/models/test_behaviour.py)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from attncli.models import encode, load_model
from attncli.models.interpret.ablate import MODES, ablate
from tests.conftest import attn
from tests.tolerance import U32

GOLDEN = Path(__file__).parents[1] / "models" / "golden"
TEXT = "time flies like an arrow"


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_the_commands_modes_are_the_models():
    from attncli.api.own import MODES as OFFERED

    assert tuple(MODES) == OFFERED


@pytest.mark.parametrize("mode", MODES)
def test_json_every_head_ranked_as_the_models_ablate(mode):
    folder = GOLDEN / "qwen2"
    doc = json.loads(ok("ablate", TEXT, "--model", folder, "--mode", mode, "-f", "json"))
    model = load_model(folder)
    every = [(l, h) for l in range(model.n_layer) for h in range(model.n_head)]
    assert doc["schema"] == "attncli.ablate/1" and doc["mode"] == mode
    assert doc["rows"] == ablate(model, encode(model, TEXT).ids, every, mode=mode)["rows"]
    assert sorted((r["layer"], r["head"]) for r in doc["rows"]) == every
    assert list(doc["rows"][0]) == ["layer", "head", "delta_logit", "delta_logprob"]
    assert doc["ranked_by"]["column"] == "delta_logprob" and doc["contrast"] is None
    ranked = [abs(r["delta_logprob"]) for r in doc["rows"]]
    assert ranked == sorted(ranked, reverse=True)


def test_heads_and_target_choose_what_is_run_and_watched():
    folder = GOLDEN / "gpt2"
    doc = json.loads(
        ok("ablate", TEXT, "--model", folder, "--heads", "1.2, 0.0,-1.3", "--target", "Ġthe", "-f", "json")
    )
    assert sorted((r["layer"], r["head"]) for r in doc["rows"]) == [(0, 0), (1, 2), (1, 3)]
    the = load_model(folder).tokenizer.token_to_id("Ġthe")
    assert doc["target"] == {"id": the, "token": "Ġthe", "text": " the", "given": "Ġthe"}
    as_text = json.loads(ok("ablate", TEXT, "--model", folder, "--target", " the", "-f", "json"))
    assert as_text["target"]["id"] == the


def test_the_command_s_rankings_are_the_models():
    from attncli.api.own import RANK_BY
    from attncli.models.interpret.ablate import RANKINGS

    assert tuple(RANKINGS) == RANK_BY


@pytest.mark.parametrize("rank_by", ["logprob", "logit", "logit-diff"])
def test_rank_by_orders_the_rows_by_its_column_and_json_keeps_every_column(rank_by):
    """A head that moves every logit alike changes no probability: ranked by |Δ logit| it would look important.
    Each ranking orders by its own column, and every column is written whatever ranks."""
    folder = GOLDEN / "llama"
    doc = json.loads(ok("ablate", TEXT, "--model", folder, "--contrast", "Ġthe", "--rank-by", rank_by, "-f", "json"))
    column = doc["ranked_by"]["column"]
    assert doc["ranked_by"]["name"] == rank_by and column == {"logprob": "delta_logprob"}.get(rank_by, column)
    values = [abs(r[column]) for r in doc["rows"]]
    assert values == sorted(values, reverse=True)
    assert all(set(r) == {"layer", "head", "delta_logit", "delta_logprob", "delta_logit_diff"} for r in doc["rows"])
    assert doc["contrast"]["token"] == "Ġthe" and doc["contrast"]["given"] == "Ġthe"


def test_the_logit_difference_is_target_minus_contrast():
    """Δ(logit_t − logit_c) from the rows of two single-token ablations: the difference of their Δ logits."""
    model = load_model(GOLDEN / "llama")
    ids = encode(model, TEXT).ids
    t, c = 5, 9
    both = ablate(model, ids, [(0, 0), (1, 1)], target=t, contrast=c, rank_by="logit")
    of_c = ablate(model, ids, [(0, 0), (1, 1)], target=c)
    alone = {(r["layer"], r["head"]): r for r in of_c["rows"]}
    for r in both["rows"]:
        other = alone[(r["layer"], r["head"])]["delta_logit"]
        # the same float32 logits (the same batches), subtracted in another order: each side rounds at most 3
        # times (a float32 difference, then another) values no larger than the logits, clean and ablated
        size = abs(both["clean_logit"]) + abs(of_c["clean_logit"]) + abs(r["delta_logit"]) + abs(other)
        assert abs(r["delta_logit_diff"] - (r["delta_logit"] - other)) <= 6 * U32 * 2 * size


def test_contrast_is_the_default_ranking_and_logit_diff_needs_one():
    doc = json.loads(ok("ablate", TEXT, "--model", GOLDEN / "llama", "--contrast", "Ġthe", "-f", "json"))
    assert doc["ranked_by"]["name"] == "logit-diff"
    r = attn("ablate", TEXT, "--model", GOLDEN / "llama", "--rank-by", "logit-diff")
    assert r.exit_code == 2 and "--rank-by logit-diff compares the target with another token: add --contrast" in (
        r.output
    )


def test_table_ranks_and_says_what_was_switched_off():
    out = ok("ablate", TEXT, "--model", GOLDEN / "llama", "--width", "120")
    assert "heads switched off one at a time" in out and "ranked (▼) by |Δ log-prob|" in out
    assert "Δ log-prob ▼" in out
    assert "rank" in out and "L0.H0" in out and "the model's own next token" in out


def test_csv_rows():
    rows = list(csv.DictReader(io.StringIO(ok("ablate", TEXT, "--model", GOLDEN / "gpt_neox", "-f", "csv"))))
    assert len(rows) == 2 * 4 and list(rows[0]) == ["layer", "head", "delta_logit", "delta_logprob"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--heads", "1"], 2, "--heads '1' is not LAYER.HEAD (such as 0.3)"),
        (["--heads", "a.b"], 2, "--heads 'a.b' is not LAYER.HEAD"),
        (["--heads", "9.0"], 2, "layer 9 is out of range"),
        (["--heads", "0.9"], 2, "head 9 is out of range"),
        (["--mode", "half"], 2, "half"),
        (["--target", ""], 2, "--target is empty: give one token"),
        (["--contrast", "time flies"], 2, "--contrast 'time flies' is 8 tokens for llama"),
        (["--rank-by", "size"], 2, "size"),
        (["-f", "npy"], 2, "'npy' is not one of 'table', 'json', 'jsonl', 'csv', 'parquet', 'svg', 'html'"),
        (
            ["--target", "time flies"],
            2,
            "--target 'time flies' is 8 tokens for llama (t i m e Ġf l i es)",
        ),
    ],
)
def test_bad_options_are_one_line(args, code, message):
    r = attn("ablate", TEXT, "--model", GOLDEN / "llama", *args)
    assert r.exit_code == code and message in r.output, r.output


def test_an_encoder_cannot_be_ablated():
    r = attn("ablate", TEXT, "--model", GOLDEN / "bert")
    assert r.exit_code == 2 and "is an encoder (bert): it has no next-token head" in r.stderr


def test_an_encoder_decoder_is_refused_as_a_command_line_mistake():
    r = attn("ablate", TEXT, "--model", GOLDEN / "t5")
    assert r.exit_code == 2 and "is an encoder–decoder (t5): attn ablate switches off a decoder-only" in r.stderr


def test_an_unknown_mode_through_the_api_is_a_command_line_mistake():
    """The API checks --mode as the CLI's choice does: a ConfigError (exit 2), not a data error."""
    from attncli import api
    from attncli.errors import ConfigError

    with pytest.raises(ConfigError, match="--mode must be one of zero, mean, not 'half'"):
        api.ablate(TEXT, model=str(GOLDEN / "llama"), heads=[(0, 0)], mode="half")
