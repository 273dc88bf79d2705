"""The page with --contrib, --scale and --drop-sink: its data are attn show's numbers, and a page without them is
the page it always was.

The page's contribution maps come from the function `attn show --contrib` runs (models/interpret/contrib.of_result),
on the same text and layer, so their numbers are equal, not close; its weights without the sink are the same
renormalization `attn show --drop-sink` draws (pipeline/heads.sinkless), to the page's 1/255.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from attncli import api
from attncli.io.packing import SCALE, unpacked
from attncli.io.view import maps_of, weights_of
from attncli.models import load_model
from attncli.models.files.hparams import ModelError
from attncli.models.interpret import contrib_page
from attncli.models.runs.page import PAGE_CELL_BYTES, STATS_CELL_BYTES
from attncli.pipeline.heads import sinkless
from attncli.render import html_view
from tests.conftest import attn, refused
from tests.io.test_view import embedded

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
TEXT = "time flies like an arrow"


def _json(*args) -> dict:
    out = attn(*args, "-f", "json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    ("family", "measure"), [("gpt2", "norm"), ("bert", "alti"), ("llama", "alti"), ("llama", "value-zeroing")]
)
def test_the_pages_maps_are_attn_shows_of_every_layer(family, measure):
    model = GOLDEN / family
    doc = _json("view", TEXT, "--model", model, "--contrib", measure)
    c = doc["contributions"]
    assert c["measure"] == measure and doc["colour"] == {"scale": "sqrt", "drop_sink": False}
    maps = maps_of(doc)
    assert [m["layer"] for m in maps] == [layer["layer"] for layer in doc["layers"]]  # every layer: a short text
    for m in maps:
        shown = _json("show", TEXT, "--model", model, "--contrib", measure, "--layer", m["layer"])["contributions"]
        assert np.array_equal(m["map"], np.array(shown["layer"]))
        assert (m["heads"] is None) == ("heads" not in shown) and (m["rollout"] is None) == ("rollout" not in shown)
        if m["heads"] is not None:
            assert np.array_equal(m["heads"], np.array(shown["heads"]))
        if m["rollout"] is not None:
            assert np.array_equal(m["rollout"], np.array(shown["rollout"]))
        entries = [e for e in [*(c["layers"][0]["heads"] or []), c["layers"][0]["map"]] if e]
        assert all(e["top"] == 1.0 for e in entries) == c["normalized"]


def test_a_long_pages_maps_are_its_layers_alone(monkeypatch):
    monkeypatch.setattr(contrib_page, "PAGE_BYTES", 1)
    doc = api.view(TEXT, model=str(GOLDEN / "gpt2"), contrib="norm", layer=0, head=1).doc
    assert [m["layer"] for m in maps_of(doc)] == [0]


@pytest.mark.parametrize("model", [None, "llama"])
def test_the_pages_weights_without_the_sink_are_show_drop_sinks_to_1_255(model):
    given = [] if model is None else ["--model", GOLDEN / model]
    run = [] if model is not None else ["--heads", "2", "--mask", "causal"]
    doc = _json("view", TEXT, *given, *run, "--drop-sink", "--scale", "log")
    assert doc["colour"] == {"scale": "log", "drop_sink": True} and "contributions" not in doc
    dropped = weights_of({**doc, "layers": doc["sinkless"]["layers"]})  # [L, h, n, n] as drawn
    for layer, entry in enumerate(doc["layers"]):
        args = [] if model is None else ["--layer", entry["layer"]]
        shown = _json("show", TEXT, *given, *run, *args)
        weights = np.array([h["weights"] for h in shown["heads"]])
        masked = None if model is None and "causal" not in run else np.triu(np.ones(weights.shape, bool), 1)
        kept, shut = sinkless(weights, masked)
        assert np.array_equal(dropped[layer][..., 1:] * SCALE, np.rint(kept * SCALE))
        drawn_masks = doc["sinkless"]["masks"]
        for h, head in enumerate(doc["sinkless"]["layers"][layer]["heads"]):
            rows = drawn_masks[head["mask"]]
            assert all(row[0] == "1" for row in rows)  # key 0, the sink, is never drawn
            assert [[c == "1" for c in row[1:]] for row in rows] == shut[h].tolist()


def test_a_page_without_the_options_is_the_page_it_was():
    script = html_view.script({})
    assert "/*{" not in script and "/*" + "colour}" not in script and "drawContrib" not in script
    assert html_view.script({"colour": {}, "contributions": {}}).count("/*{") == len(
        re.findall(r"/\*\w+\}\*/", html_view.script({"colour": {}, "contributions": {}}))
    )  # every block opened is closed
    doc = api.view(TEXT, model=str(GOLDEN / "gpt2")).doc
    assert not {"colour", "sinkless", "contributions"} & set(doc)
    page = html_view.page(doc)
    assert 'id="attn-scales"' not in page and "useSink" not in page
    looked = html_view.page(api.view(TEXT, model=str(GOLDEN / "gpt2"), scale="linear").doc)
    assert 'id="attn-scales"' in looked and "useSink" in looked and "drawContrib" not in looked


def test_the_page_embeds_its_json(tmp_path):
    args = [TEXT, "--model", GOLDEN / "bert", "--contrib", "alti", "--drop-sink"]
    assert attn("view", *args, "-o", tmp_path / "p.html").exit_code == 0
    assert embedded((tmp_path / "p.html").read_text()) == _json("view", *args)


def test_a_measure_needs_a_model():
    refused(attn("view", TEXT, "--contrib", "norm"), "--contrib norm", "--model", code=2)
    refused(attn("view", TEXT, "--scale", "cubic"), "--scale", code=2)


SOURCE = "the source text"


@pytest.mark.parametrize(
    ("family", "measure"), [("bart", "alti"), ("bart", "value-zeroing"), ("t5", "norm"), ("marian-heads", "norm")]
)
def test_an_encoder_decoders_page_has_each_parts_maps_as_attn_show_part(family, measure):
    model = GOLDEN / family
    doc = _json("view", TEXT, "--model", model, "--context", SOURCE, "--contrib", measure)
    assert set(doc["contributions"]["parts"]) == set(doc["parts"]) == {"cross", "decoder", "encoder"}
    for part, entry in doc["parts"].items():
        maps = maps_of(doc, part)
        assert [m["layer"] for m in maps] == [layer["layer"] for layer in entry["layers"]]  # every layer: short
        for m in maps:
            args = ("--context", SOURCE, "--part", part, "--layer", m["layer"], "--contrib", measure)
            shown = _json("show", TEXT, "--model", model, *args)["contributions"]
            assert np.array_equal(m["map"], np.array(shown["layer"])), (part, m["layer"])
            for key in ("heads", "rollout", "residual"):
                assert (m[key] is None) == (key not in shown), (part, key)
                assert m[key] is None or np.array_equal(m[key], np.array(shown[key])), (part, key)
            assert doc["contributions"]["parts"][part]["note"] == shown.get("note")


def test_an_encoder_decoders_page_without_a_source_has_the_encoders_maps():
    doc = api.view(SOURCE, model=str(GOLDEN / "bart"), part="encoder", contrib="alti").doc
    assert set(doc["contributions"]["parts"]) == {"encoder"}
    shown = api.show(SOURCE, model=str(GOLDEN / "bart"), part="encoder", layer=0, contrib="alti").contributions
    assert np.array_equal(maps_of(doc, "encoder")[0]["rollout"], shown.rollout)


def test_an_encoder_decoders_page_drops_each_parts_sink_and_show_s_page_too():
    args = dict(model=str(GOLDEN / "bart"), context=SOURCE, scale="log", drop_sink=True)
    doc = api.view(TEXT, **args).doc
    assert doc["colour"] == {"scale": "log", "drop_sink": True} and "contributions" not in doc
    for part, entry in doc["parts"].items():
        dropped = weights_of({**entry, "layers": entry["sinkless"]["layers"]})  # [L, h, m, n] as drawn
        shown = json.loads(api.show(TEXT, **args, part=part, layer=0).to_json())
        weights = np.array([h["weights"] for h in shown["heads"]])
        kept, _ = sinkless(weights, None if part != "decoder" else np.triu(np.ones(weights.shape, bool), 1))
        assert np.array_equal(dropped[0][..., 1:] * SCALE, np.rint(kept * SCALE)), part
    page = api.show(TEXT, model=str(GOLDEN / "bart"), context=SOURCE, part="cross", contrib="norm").view.doc
    assert set(page["contributions"]["parts"]) == {"cross", "decoder", "encoder"}
    plain = api.view(TEXT, model=str(GOLDEN / "bart"), context=SOURCE).doc
    assert not {"colour", "contributions"} & set(plain) and not any("sinkless" in p for p in plain["parts"].values())


def test_the_maps_unpack_as_float64():
    doc = api.view(TEXT, model=str(GOLDEN / "gpt2"), contrib="norm").doc
    n = len(doc["tokens"])
    entry = doc["contributions"]["layers"][-1]["map"]
    assert unpacked(entry["values"], "<f8", (n, n)).max() == entry["top"]


def test_show_s_page_carries_what_show_draws():
    shown = api.show(TEXT, model=str(GOLDEN / "gpt2"), contrib="alti", scale="log", layer=1)
    doc = shown.view.doc
    assert doc["colour"] == {"scale": "log", "drop_sink": False}
    assert np.array_equal(maps_of(doc)[1]["map"], shown.contributions.layer_matrix)
    assert "sinkless" in api.show(TEXT, heads=2, drop_sink=True).view.doc
    assert not {"colour", "contributions"} & set(api.show(TEXT, model=str(GOLDEN / "gpt2")).view.doc)


@pytest.mark.parametrize(("family", "context"), [("gpt2", None), ("bart", SOURCE)])
def test_the_maps_are_priced_with_the_page_and_refused_before_they_are_computed(monkeypatch, family, context):
    model = load_model(GOLDEN / family)
    text = TEXT
    page = api.view(text, model=model, context=context).doc
    longest = max(len(p["tokens"]) for p in page.get("parts", {"": page}).values())
    maps = contrib_page.page_cost(model, "alti", longest, None if context is None else longest)
    assert maps > 0 and contrib_page.page_cost(model, "weights", longest) == 0
    drawn = sum(len(layer["heads"]) for p in page.get("parts", {"": page}).values() for layer in p["layers"])
    priced = longest**2 * (drawn * PAGE_CELL_BYTES + model.n_head * STATS_CELL_BYTES)  # the page without the maps
    per_layer = (3 * model.n_head * longest**2 + 8 * longest * model.d_model) * 4  # folder.check_run's
    without = model.weights.least() + model.n_layer * per_layer + priced
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(without + maps // 2))  # the page fits, its maps do not
    api.view(text, model=model, context=context, scale="log")

    def computed(*args, **kwargs):
        raise AssertionError("the maps were computed before the page was priced")

    monkeypatch.setattr(contrib_page, "every_layer", computed)
    with pytest.raises(ModelError, match=r"the page of .* with its contribution maps on \d+ tokens needs about"):
        api.view(text, model=model, context=context, contrib="alti")
