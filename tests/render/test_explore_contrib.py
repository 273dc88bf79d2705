"""`attn explore`'s o (what the matrix measures: weights, norm, ALTI, value zeroing, as --contrib), z (the colour
scale, as --scale) and k (key 0 dropped, as --drop-sink), on the tiny golden BERT and Llama: the maps come from a
thread, are `attn show --contrib`'s numbers, and the matrix's title says which it draws."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from attncli import api
from attncli.core.measures import CONTRIBUTIONS
from attncli.models import load_model
from attncli.pipeline.config import RunConfig
from attncli.pipeline.heads import sinkless
from attncli.render.explore.state import Explorer
from attncli.render.style import SCALES
from tests.conftest import attn, refused
from tests.render.test_explore import explore, panels, said, text_run

GOLDEN = Path(__file__).parents[1] / "models" / "golden"
TEXT = "time flies like an arrow"
SIZE = (120, 40)


@pytest.fixture(scope="module")
def llama():
    return load_model(GOLDEN / "llama")


def run(model, **looks) -> Explorer:
    e = Explorer(TEXT, RunConfig(), model=model, **looks)
    e.compute()
    return e


async def mapped(pilot, app) -> None:
    """Until the measure's thread is done and the matrix drawn again."""
    for worker in app.workers:
        await worker.wait()
    await pilot.pause()


def test_o_cycles_the_measures_and_draws_each_layers_maps(llama):
    e = run(llama)
    layer = e.layer

    async def test(pilot, app):
        assert "Attention weights A = softmax(S)" in said(app)
        for name in list(CONTRIBUTIONS)[1:]:
            await pilot.press("o")
            await mapped(pilot, app)
            m = CONTRIBUTIONS[name]
            assert app.e.measure == name and app.e.maps_ready()
            title = m.title + (" · head 0 of 0..3" if m.per_head else " (of the layer) · layer 1 of 0..1")
            assert title in said(app) and "computing" not in said(app)
            shown = api.show(TEXT, model=llama, layer=layer, contrib=name).contributions  # attn show --contrib's
            assert np.array_equal(app.e.drawn()[0], shown.heads[app.e.head] if m.per_head else shown.layer_matrix)
        await pilot.press("a")  # the mean of the heads: the layer's own map
        await pilot.press("o", "o")  # back round to the weights, then norm again: the layer's map
        await mapped(pilot, app)
        assert app.e.measure == "norm" and "all heads together · layer" in said(app)
        await pilot.press("{")  # another layer: its maps, computed again
        await mapped(pilot, app)
        assert app.e.layer == layer - 1 and app.e.maps().layer == layer - 1
        await pilot.press("o", "o", "o")
        assert app.e.measure == "weights" and "Attention weights A = softmax(S)" in said(app)

    explore(test, e, size=SIZE)


def test_the_side_panel_shows_the_measures_row_and_formula_not_the_weights(llama):
    # with a measure's map in the matrix, the panel beside it is that map's focused row and the measure's formula
    # and number (not the weights' softmax arithmetic); back on the weights, the weights' again
    e = run(llama)

    async def test(pilot, app):
        def side() -> str:
            return " ".join(" ".join(panels(app)[1]).split())

        assert "A = exp(S − max)" in side()
        for name in list(CONTRIBUTIONS)[1:]:
            await pilot.press("o")
            await mapped(pilot, app)
            m, (array, _, _, _) = CONTRIBUTIONS[name], app.e.drawn()
            i, j = app.e.query, app.e.key
            assert "A = exp(S − max)" not in side() and "the weights sum to 1" not in side()
            assert f"{m.title}[{i},{j}]" in side() and m.formula.split()[0] in side(), side()
            assert f"{m.title}[{i},{j}] = {float(array[i, j]):.{app.precision}f}" in side()
        await pilot.press("o")
        assert app.e.measure == "weights" and "A = exp(S − max)" in side()

    explore(test, e, size=(160, 60))


def test_a_measure_the_model_has_not_says_why_and_the_matrix_goes_back_to_the_weights(llama):
    gemma2 = load_model(GOLDEN / "gemma2")  # a block ALTI does not decompose: Gemma 2's, its norm on the attention's
    e = run(replace(gemma2, family=replace(gemma2.family, attention_out_linear=None)))  # output not declared

    async def test(pilot, app):
        await pilot.press("o", "o")  # norm, then ALTI, which that block refuses
        await mapped(pilot, app)
        assert app.e.measure == "weights" and "✗ --contrib alti" in said(app)

    explore(test, e, size=SIZE)


def test_the_help_says_z_is_the_matrixs_scale_alone():
    from attncli.render.explore.app import KEYS

    (what,) = [w for key, _, w, _ in KEYS if key == "z"]
    assert "the heads overview and the lens keep their own shades" in what


def test_z_cycles_the_scales_and_k_drops_the_sink(llama):
    e = run(llama, scale="log")

    async def test(pilot, app):
        names = list(SCALES)
        await pilot.press("z")
        assert app.e.scale == names[(names.index("log") + 1) % len(names)]
        assert f"colour: {SCALES[app.e.scale].words}" in said(app)
        await pilot.press("k")
        drawn, shut, _, _ = app.e.drawn()
        kept, left = sinkless(app.e.weights[app.e.head], app.e.result.masked[app.e.head])
        assert np.array_equal(drawn[:, 1:], kept) and shut[:, 0].all() and np.array_equal(shut[:, 1:], left)
        assert "key 0 dropped (each row renormalized)" in said(app)
        await pilot.press("k")
        assert "key 0 dropped" not in said(app)

    explore(test, e, size=SIZE)


def test_a_text_run_has_its_weights_only():
    e = text_run()

    async def test(pilot, app):
        await pilot.press("o")
        assert app.e.measure == "weights" and "a text run has its weights only" in said(app)

    explore(test, e)


def test_the_options_are_checked_before_the_screen_is_taken():
    refused(attn("explore", TEXT, "--contrib", "norm"), "--contrib norm", "--model", code=2)
    refused(attn("explore", TEXT, "--scale", "cubic"), "--scale", code=2)
