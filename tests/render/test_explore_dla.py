"""`attn explore`'s d: the direct logit attribution of the model's own next token after the text, on the tiny
golden Llama; its numbers are `attn dla -f json`'s with --target that token (tests/models/test_causal.py checks
those against transformers' hooks)."""

from __future__ import annotations

import json

import pytest

from attncli.models.interpret.ablate import ablate_document
from attncli.pipeline.config import RunConfig
from attncli.render.causal import part_name
from attncli.render.explore.state import Explorer
from tests.conftest import attn
from tests.render.test_explore import explore, said
from tests.render.test_explore_behaviour import LLAMA, SIZE, TEXT, finished, run


@pytest.mark.parametrize("generate", [None, 3])
def test_d_attributes_the_models_next_token_as_attn_dla_does(llama, generate):
    e = run(llama, generate)
    own = ablate_document(llama, TEXT)["target"]  # the model's own next token after the text (greedy: written first)
    r = attn("dla", TEXT, "--model", LLAMA, "--target", own["token"], "-f", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    top = max(doc["rows"], key=lambda x: abs(x["dla"]))

    async def test(pilot, app):
        await pilot.press("d")
        await finished(pilot, app)
        assert app.e.attribution() == doc and doc["target"]["id"] == own["id"]
        if generate is not None:
            assert app.e.result.tokens.ids[app.e.result.tokens.generated] == own["id"]
        shown = said(app)
        assert f"the next token after position {doc['position']}" in shown
        assert f"the {len(doc['rows'])} parts sum to {doc['sum']:.6f}, m = {doc['m']:.6f}" in shown
        assert f"{part_name(top)}: dla {top['dla']:+.6f} of m = logit(" in shown
        assert f"rank 1 of {len(doc['rows'])} by |dla|" in shown
        cached = app.e.cache["dla"]
        await pilot.press("d", "d")  # closed by its own key, opened again: from the cache
        await finished(pilot, app)
        assert app.e.cache["dla"] is cached and "rank 1 of" in said(app)

    explore(test, e, size=SIZE)


def test_a_text_run_and_an_encoder_say_in_one_line_why_they_have_no_dla(bert):
    encoder = Explorer(TEXT, RunConfig(), model=bert)
    encoder.compute()
    text = Explorer(TEXT, RunConfig())
    text.compute()
    why = {id(encoder): "is an encoder (bert): it has no next-token head", id(text): "a text run predicts no token"}
    for e in (encoder, text):

        async def test(pilot, app, e=e):
            await pilot.press("d")
            assert len(app.screen_stack) == 1 and why[id(e)] in said(app)

        explore(test, e, size=SIZE)
