"""`--contrib` on `attn steps` and `attn heads` (and the API's): the same maps as `attn show --contrib`'s, by equality.

show's maps are held to transformers' by tests/models/test_contrib.py's goldens; here steps' are show's, and heads'
statistics are those of show's per-head maps, each head's rows as shares.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attncli
from attncli.core.contrib import normalize_rows
from attncli.core.measures import CONTRIBUTIONS
from attncli.core.stats import head_stats, sink_stats
from attncli.models.interpret.contrib import heads_of
from attncli.models.runs import route
from tests.conftest import attn, refused

GOLDEN = Path(__file__).parents[1] / "models" / "golden"
TEXT = "time flies like an arrow"
MEASURES = [m for m in CONTRIBUTIONS if m != "weights"]


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


# ---- attn steps ------------------------------------------------------------------------------------


def test_steps_default_is_the_weights_byte_for_byte():
    for fmt in ("json", "table"):
        plain = ok("steps", TEXT, "--model", GOLDEN / "llama", "-f", fmt, "--width", "120")
        assert (
            ok("steps", TEXT, "--model", GOLDEN / "llama", "-f", fmt, "--width", "120", "--contrib", "weights") == plain
        )
        assert "contributions" not in plain


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize(("name", "more"), [("bert", ("--layer", "0")), ("llama", ("--head", "1"))])
def test_steps_contributions_are_shows(name, more, measure):
    """-f json's `contributions` of steps equal show's for the same layer and head, key for key; the steps are
    still the run's, the weights among them."""
    args = (TEXT, "--model", GOLDEN / name, "--contrib", measure, "-f", "json", *more)
    stepped, shown = json.loads(ok("steps", *args)), json.loads(ok("show", *args))
    assert stepped["contributions"] == shown["contributions"]
    assert stepped["contributions"]["measure"] == measure
    weights = next(s for s in stepped["steps"] if s["name"] == "weights")["array"]
    np.testing.assert_array_equal(weights, [h["weights"] for h in shown["heads"]])


def test_steps_api_keeps_the_maps_as_show():
    model = attncli.models.load_model(GOLDEN / "gpt2")
    for measure in MEASURES:
        stepped = attncli.steps(TEXT, model=model, layer=0, contrib=measure).contributions
        shown = attncli.show(TEXT, model=model, layer=0, contrib=measure).contributions
        np.testing.assert_array_equal(stepped.layer_matrix, shown.layer_matrix)
        assert (stepped.heads is None) == (shown.heads is None) == (not CONTRIBUTIONS[measure].per_head)
    assert attncli.steps(TEXT, model=model).contributions is None


def test_the_steps_table_draws_the_measure_where_the_weights_were():
    out = ok("steps", TEXT, "--model", GOLDEN / "gpt2", "--contrib", "alti", "--width", "200")
    softmax = out[out.index("· softmax") : out.index("· mix")]
    assert "ALTI contributions, layer 1" in softmax and "ALTI contributions rolled out through layers 0..1" in softmax
    assert "drawn in place of the weights A = softmax(S')" in softmax and "Ferrando et al. 2022" in softmax
    assert "check: A[" not in softmax  # the softmax's worked check is of weights that are not drawn


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--contrib", "norm"), "--contrib norm measures a real model's layer: give --model"),
        (("--model", GOLDEN / "llama", "--contrib", "norm", "-f", "npz", "-o", "x.npz"), "-f npz writes the weights"),
        (("--model", GOLDEN / "llama", "--contrib", "alti", "-f", "html"), "-f html writes the weights alone"),
    ],
)
def test_a_wrong_steps_contrib_is_one_line_exit_2(args, needle):
    refused(attn("steps", TEXT, *args), needle, code=2)


# ---- attn heads ------------------------------------------------------------------------------------


def test_heads_default_is_the_weights_byte_for_byte():
    plain = ok("heads", TEXT, "--model", GOLDEN / "llama", "-f", "json")
    assert ok("heads", TEXT, "--model", GOLDEN / "llama", "-f", "json", "--contrib", "weights") == plain
    assert "contrib" not in json.loads(plain)


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_heads_by_norm_are_the_statistics_of_shows_norm_maps(name):
    """Every statistic and α_k of `attn heads --contrib norm` recomputed here from each layer's `attn show
    --contrib norm -f json` per-head maps, each row divided by its sum. Equal to the bit: both run the layer's
    attention on the same stream and the same float64 norms and sums (JSON keeps a float64 exactly)."""
    folder = GOLDEN / name
    doc = json.loads(ok("heads", TEXT, "--model", folder, "--contrib", "norm", "-f", "json"))
    maps = []
    for layer in range(doc["n_layer"]):
        shown = json.loads(ok("show", TEXT, "--model", folder, "--layer", layer, "--contrib", "norm", "-f", "json"))
        maps.append(normalize_rows(np.array(shown["contributions"]["heads"])))  # [h, n, n]
    maps = np.stack(maps)  # [L, h, n, n]
    stats, sinks = head_stats(maps, causal=doc["causal"]), sink_stats(maps)
    for key, want in stats.items():
        got = [[r[key] for r in doc["rows"] if r["layer"] == l] for l in range(doc["n_layer"])]
        np.testing.assert_array_equal(got, want, err_msg=key)
    np.testing.assert_array_equal(doc["sinks"]["first"], sinks["first"])
    assert doc["sinks"]["sink_rate"] == sinks["sink_rate"]
    assert doc["contrib"]["measure"] == "norm" and {r["measure"] for r in doc["rows"]} == {"norm"}


def test_heads_of_the_weights_is_heads_itself():
    model = attncli.models.load_model(GOLDEN / "gpt2")
    assert heads_of(model, TEXT, "weights") == route.heads(model, TEXT)


def test_the_heads_table_names_its_measure():
    out = ok("heads", TEXT, "--model", GOLDEN / "llama", "--contrib", "norm", "--width", "200")
    assert "entropy of every head by norm ‖αf(x)‖, as shares of each row" in out
    assert "heads put a mean share of norm ‖αf(x)‖ > ε on position 0" in out and "Kobayashi et al. 2020" in out
    table = attncli.heads(TEXT, model=str(GOLDEN / "llama"), contrib="norm")
    assert table.view is None  # its page would draw the weights


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--contrib", "alti"), "--contrib alti measures the whole layer (no map per head)"),
        (("--contrib", "value-zeroing"), "it takes --contrib weights, norm"),
        (("--contrib", "norm", "-o", "page.html"), "-f html's page draws the weights"),
        (("--contrib", "norm", "--lines"), "--contrib norm describes one text's heads: drop --lines"),
    ],
)
def test_a_wrong_heads_contrib_is_one_line_exit_2(args, needle):
    refused(attn("heads", TEXT, "--model", GOLDEN / "llama", *args), needle, code=2)
