"""`attn show --contrib`: the contribution maps through the CLI and the API (numbers: tests/models/test_contrib.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attncli
from attncli.core.measures import CONTRIBUTIONS
from attncli.models import forward, load_model
from attncli.models.interpret.contrib import contributions
from attncli.models.runs.run import run_pass
from tests.conftest import attn

GOLDEN = Path(__file__).parents[1] / "models" / "golden"
TEXT = "time flies like an arrow"


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_the_default_is_the_weights_byte_for_byte():
    plain = ok("show", TEXT, "--model", GOLDEN / "bert", "-f", "json")
    assert ok("show", TEXT, "--model", GOLDEN / "bert", "-f", "json", "--contrib", "weights") == plain
    assert "contributions" not in json.loads(plain)


@pytest.mark.parametrize("measure", [m for m in CONTRIBUTIONS if m != "weights"])
@pytest.mark.parametrize("name", ["bert", "llama"])
def test_json_adds_the_models_contributions(name, measure):
    folder = GOLDEN / name
    doc = json.loads(ok("show", TEXT, "--model", folder, "--contrib", measure, "-f", "json", "--layer", "1"))
    got = doc["contributions"]
    model = load_model(folder)
    want = contributions(model, run_pass(model, TEXT, upto_layer=1, steps_layer=1)[1], 1, measure)
    assert got["measure"] == measure and got["title"] == CONTRIBUTIONS[measure].title
    np.testing.assert_array_equal(np.array(got["layer"]), want.layer_matrix)
    assert ("heads" in got) == CONTRIBUTIONS[measure].per_head == (want.heads is not None)
    assert ("rollout" in got) == CONTRIBUTIONS[measure].rolls_out
    if want.heads is not None:
        np.testing.assert_array_equal(np.array(got["heads"]), want.heads)
    assert len(doc["weights"] if "weights" in doc else doc["heads"]) > 0  # the weights are still written


def test_the_table_names_its_measure_never_weights():
    out = ok("show", TEXT, "--model", GOLDEN / "bert", "--contrib", "norm", "--width", "200", "--head", "1")
    assert "norm ‖αf(x)‖, layer 1, per head" in out and "norm ‖αf(x)‖, layer 1, all heads together" in out
    assert "Kobayashi et al. 2020" in out
    assert "Attention weights" not in out
    alti = ok("show", TEXT, "--model", GOLDEN / "gpt2", "--contrib", "alti", "--width", "200")
    assert "ALTI contributions rolled out through layers 0..1" in alti


@pytest.mark.parametrize("name", ["t5", "bart", "mbart"])
def test_an_encoder_decoders_encoder_part_has_every_measure(name):
    """The encoder of T5 (pre-RMSNorm), BART (post-LN) and mBART (pre-LN): the same maps as its own pass gives."""
    model = load_model(GOLDEN / name)
    for measure in ("norm", "alti", "value-zeroing"):
        shown = attncli.show(TEXT, model=model, part="encoder", contrib=measure)
        ids = np.asarray(shown.result.tokens.ids)
        run = forward(model, ids, upto_layer=model.n_layer - 1, steps_layer=model.n_layer - 1)
        want = contributions(model, run, model.n_layer - 1, measure)
        np.testing.assert_array_equal(shown.contributions.layer_matrix, want.layer_matrix)


@pytest.mark.parametrize("measure", [m for m in CONTRIBUTIONS if m != "weights"])
@pytest.mark.parametrize("part", ["decoder", "cross"])
def test_an_encoder_decoders_decoder_and_cross_parts_have_every_measure(part, measure):
    """The JSON's maps are the API's, say their part and measure, and are target × target or target × source."""
    args = ("show", "le chat est assis", "--model", GOLDEN / "bart", "--context", TEXT, "--part", part)
    doc = json.loads(ok(*args, "--contrib", measure, "-f", "json"))
    got = doc["contributions"]
    assert got["measure"] == measure and got["part"] == part and got["note"]
    shown = attncli.show("le chat est assis", model=str(GOLDEN / "bart"), context=TEXT, part=part, contrib=measure)
    np.testing.assert_array_equal(np.array(got["layer"]), shown.contributions.layer_matrix)
    columns = doc["context_tokens"] if part == "cross" else doc["tokens"]
    assert np.shape(got["layer"]) == (len(doc["tokens"]), len(columns))
    assert ("residual" in got) == (part == "cross" and measure == "alti")
    assert ("rollout" in got) == CONTRIBUTIONS[measure].rolls_out
    if "residual" in got:  # the source's shares and the residual's make each row
        np.testing.assert_allclose(np.sum(got["layer"], -1) + got["residual"], 1.0, atol=1e-12)


def test_the_table_says_the_part_and_draws_the_residual():
    args = ("show", "le chat est assis", "--model", GOLDEN / "t5", "--context", TEXT, "--width", "200")
    out = ok(*args, "--part", "cross", "--contrib", "alti")
    assert "ALTI contributions, cross layer 1" in out and "the residual's share" in out
    assert "rolled out through decoder layers 0..1" in out and "ALTI+ (Ferrando et al. 2022b" in out
    norm = ok(*args, "--part", "decoder", "--contrib", "norm", "--head", "2")
    assert "norm ‖αf(x)‖, decoder layer 1, per head" in norm and "head 2" in norm


def test_the_api_returns_the_maps():
    shown = attncli.show(TEXT, model=str(GOLDEN / "gpt2"), contrib="value-zeroing", head=2)
    c = shown.contributions
    assert c.measure == "value-zeroing" and c.heads is None
    n = len(shown.tokens)
    assert c.layer_matrix.shape == (n, n)
    assert attncli.show(TEXT, model=str(GOLDEN / "gpt2")).contributions is None
    norm = attncli.show(TEXT, model=str(GOLDEN / "gpt2"), contrib="norm", head=2).contributions
    assert norm.heads.shape == (1, n, n)  # the one head shown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--contrib", "norm"), "--contrib norm measures a real model's layer: give --model"),
        (("--contrib", "nope"), "'nope' is not one of"),
        (("--model", GOLDEN / "bert", "--contrib", "alti", "--mean-heads"), "--contrib alti draws its own maps"),
        (("--model", GOLDEN / "bert", "--contrib", "alti", "--rollout"), "maps one text's layer"),
        (("--model", GOLDEN / "bert", "--contrib", "norm", "-f", "csv"), "-f csv writes the weights alone"),
        (("--model", GOLDEN / "bert", "--contrib", "alti", "-o", "page.html"), "-f html writes the weights alone"),
    ],
)
def test_a_wrong_contrib_is_one_line_exit_2(args, message):
    r = attn("show", TEXT, *args)
    assert r.exit_code == 2, r.output
    assert message in r.output and r.output.count("\n") <= 3


@pytest.mark.parametrize("name", ["gemma2", "gemma3_text", "olmo2", "gpt_neox"])
def test_alti_runs_on_every_block_form(name):
    """The forms once refused: a norm on the attention's output alone (Gemma 2 and 3, OLMo 2) and GPT-NeoX's parallel
    attention and MLP. Each row is a share of its output (Gemma's first, an output of length 0, is 0)."""
    r = attn("show", TEXT, "--model", GOLDEN / name, "--contrib", "alti", "-f", "json")
    assert r.exit_code == 0, r.output
    c = json.loads(r.output)["contributions"]
    assert c["measure"] == "alti"
    want = np.ones(len(c["layer"]))
    want[0] = 0.0 if name.startswith("gemma") else 1.0
    np.testing.assert_allclose(np.sum(c["layer"], -1), want, atol=1e-12)  # float64 shares, written in full
