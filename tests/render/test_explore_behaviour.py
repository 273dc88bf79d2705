"""`attn explore` on a decoder: stepping through the tokens it wrote (n, b, w), the logit lens (l) and the heads
switched off (x), on the tiny golden Llama; every number read from the screen is the one attncli.models gives
(`attn lens -f json`, `attn ablate -f json`), and those equal transformers' (tests/models/test_behaviour.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from attncli.models import load_model
from attncli.models.interpret.ablate import ablate_document
from attncli.models.interpret.lens import lens_document, written_probabilities
from attncli.models.runs.generate import Generation
from attncli.models.runs.seq2seq import encoder_tokens
from attncli.pipeline.config import RunConfig
from attncli.pipeline.tokentext import labels
from attncli.render.explore.app import DEBOUNCE
from attncli.render.explore.state import Explorer
from attncli.render.matrix import fmt
from tests.conftest import attn
from tests.render.test_explore import bars, explore, said

LLAMA = Path(__file__).parents[1] / "models" / "golden" / "llama"
TEXT = "time flies like an arrow"
SIZE = (120, 40)


def run(model, generate: int | None = 3, text: str = TEXT) -> Explorer:
    e = Explorer(text, RunConfig(), model=model, generate=None if generate is None else Generation(generate))
    e.compute()
    return e


async def finished(pilot, app) -> None:
    """Until the screen's computation (a thread) is done and drawn."""
    for worker in app.screen.workers:
        await worker.wait()
    await pilot.pause()


def test_n_and_b_step_through_the_written_tokens_and_w_goes_back(llama):
    e = run(llama)
    tokens = e.result.tokens
    start = tokens.generated
    probs = written_probabilities(llama, tokens.ids, start)

    async def test(pilot, app):
        assert "n b step" in said(app) and "written token" not in said(app)
        await pilot.press("n")
        assert (app.e.step, app.e.query) == (0, start - 1)  # the row that chose the first written token
        shown, drawn = said(app), tokens.drawn()
        assert f"row {start - 1} '{drawn[start - 1]}' wrote '{drawn[start]}', probability" in shown
        assert f"probability {fmt(float(probs[0]), 2)} (written token 1 of 3, at position {start}" in shown
        assert max(bars(app)) == start - 1  # the choosing row over the tokens before the written one, no later key
        for _ in range(4):  # past the last: it stays on the last
            await pilot.press("n")
        assert app.e.step == 2 and f"probability {fmt(float(probs[2]), 2)}" in said(app)
        await pilot.press("b", "up")  # ↑ steps back too
        assert (app.e.step, app.e.query) == (0, start - 1) and max(bars(app)) == start - 1
        await pilot.press("right", "right")  # the key stays within what the choosing row saw
        assert app.e.key <= start - 1
        await pilot.press("w")
        assert app.e.step is None and "written token" not in said(app)
        assert max(bars(app)) == len(tokens) - 1  # the whole row again
        await pilot.press("b")  # from the whole matrix, b starts at the last written token
        assert app.e.step == 2 and app.e.query == len(tokens) - 2

    explore(test, e, size=SIZE)


def test_stepping_follows_the_layer_and_an_edit(llama):
    e = run(llama)

    async def test(pilot, app):
        await pilot.press("n", "n", "left_curly_bracket")  # layer 0: the same step
        assert (app.e.layer, app.e.step) == (0, 1) and "(written token 2 of 3" in said(app)
        await pilot.press("e", "ctrl+u", *"a cat")
        await pilot.pause(DEBOUNCE * 4)
        await pilot.press("enter")
        start = app.e.result.tokens.generated
        assert app.e.text == "a cat" and (app.e.step, app.e.query) == (1, start)
        assert f"probability {fmt(float(written_probabilities(llama, app.e.result.tokens.ids, start)[1]), 2)}" in said(
            app
        )

    explore(test, e, size=SIZE)


def test_l_opens_the_lens_of_the_whole_sequence_and_the_cursor_shows_a_cell_s_top_5(llama):
    e = run(llama)
    doc = lens_document(llama, TEXT, 5, e.result.tokens)
    cells = {(r["layer"], r["position"]): r for r in doc["rows"]}

    async def test(pilot, app):
        await pilot.press("n", "l")
        await finished(pilot, app)
        assert "logit lens" in said(app) and "› = written by the model" in said(app)
        assert app.e.lens() == doc
        start = (llama.n_layer, app.e.query)  # the model's own prediction of the written token in focus
        assert cells[start]["top_ids"][0] == app.e.result.tokens.ids[app.e.query + 1]  # greedy: it is the top 1
        for l, i in (start, (llama.n_layer - 1, app.e.query - 1)):
            r = cells[(l, i)]
            shown = said(app)
            assert f"layer {l}, position {i} " in shown
            drawn = labels(r["top_tokens"], r["top_texts"], [False] * len(r["top_ids"]))  # as text: ␣Paris
            for rank, (token, p) in enumerate(zip(drawn, r["top_probs"]), 1):
                assert f"{rank}. {token} {p:.2f} (id {r['top_ids'][rank - 1]})" in shown
            await pilot.press("up", "left")
        await pilot.press("right_square_bracket", "n", "left_curly_bracket", "e")  # the main screen's: nothing
        assert (app.e.head, app.e.step, app.e.layer, app.query_one("#edit").display) == (0, 0, 1, False)
        await pilot.press("l")  # l again: back, on the same step
        assert len(app.screen_stack) == 1 and app.e.step == 0

    explore(test, e, size=SIZE)


def test_the_lens_without_generate_is_attn_lens(llama):
    e = run(llama, generate=None)
    r = attn("lens", TEXT, "--model", str(LLAMA), "-f", "json")
    assert r.exit_code == 0, r.output
    assert e.lens() == json.loads(r.stdout)


def test_x_ablates_every_head_once_per_text_and_shows_attn_ablate_s_numbers(llama):
    e = run(llama)
    doc = ablate_document(llama, TEXT)
    r = attn("ablate", TEXT, "--model", str(LLAMA), "-f", "json")
    assert r.exit_code == 0 and json.loads(r.stdout) == doc
    top = doc["rows"][0]

    async def test(pilot, app):
        await pilot.press("x")
        await finished(pilot, app)
        assert app.e.ablation() == doc
        shown = said(app)
        assert f"the next token after position {doc['position']}" in shown
        assert (
            f"L{top['layer']}.H{top['head']} switched off: Δ logit {top['delta_logit']:+.2f}, "
            f"Δ log-prob {top['delta_logprob']:+.2f}, rank 1 of {len(doc['rows'])} by |Δ log-prob|"
        ) in shown
        assert f"{top['delta_logprob']:+.2f} #1" in shown  # in the grid, the ranking's column, its rank beside it
        cached = app.e.cache["ablate"]
        await pilot.press("escape", "x")  # again: from the cache, not computed again
        await finished(pilot, app)
        assert app.e.cache["ablate"] is cached and "switched off: Δ logit" in said(app)
        await pilot.press("x", "e", "ctrl+u", *"a cat")  # an edit: other tokens, so not computed yet
        await pilot.pause(DEBOUNCE * 4)
        await pilot.press("enter")
        assert not app.e.done("ablate") and app.e.done("written") is False

    explore(test, e, size=SIZE)


def test_the_ablation_says_it_is_working_and_how_far(llama, monkeypatch):
    """While the heads are switched off (seconds on SmolLM2), the screen says what runs and how many layers are
    done; the thread is held here between its two layers."""
    e = run(llama)
    between, go_on = threading.Event(), threading.Event()
    real = Explorer.ablation

    def slow(self, progress=None):
        def held(done, total):
            assert progress is not None
            progress(done, total)
            if done == 1:
                between.set()
                go_on.wait(10)

        return real(self, held)

    monkeypatch.setattr(Explorer, "ablation", slow)

    async def test(pilot, app):
        await pilot.press("x")
        while not between.is_set():
            await pilot.pause(0.01)
        await pilot.pause()
        assert "switching off each of the 8 heads of llama alone" in said(app)
        assert "layer 1 of 2 done" in said(app)
        go_on.set()
        await finished(pilot, app)
        assert "switched off: Δ logit" in said(app)

    explore(test, e, size=SIZE)


def test_esc_while_it_ablates_stops_it(llama, monkeypatch):
    """Leaving the screen stops the thread at its next layer: nothing is kept, and x starts it again."""
    e = run(llama)
    between, go_on, ended = threading.Event(), threading.Event(), threading.Event()
    real = Explorer.ablation

    def slow(self, progress=None):
        def held(done, total):
            assert progress is not None
            progress(done, total)  # the second layer's, after Esc: it stops here
            between.set()
            go_on.wait(10)

        try:
            return real(self, held)
        finally:
            ended.set()

    monkeypatch.setattr(Explorer, "ablation", slow)

    async def test(pilot, app):
        await pilot.press("x")
        while not between.is_set():
            await pilot.pause(0.01)
        await pilot.press("escape")
        go_on.set()
        while not ended.is_set():
            await pilot.pause(0.01)
        assert len(app.screen_stack) == 1 and not app.e.done("ablate") and "ablate" not in app.e.cache
        monkeypatch.setattr(Explorer, "ablation", real)
        await pilot.press("x")
        await finished(pilot, app)
        assert app.e.done("ablate") and "switched off: Δ logit" in said(app)

    explore(test, e, size=SIZE)


@pytest.mark.parametrize("key", ["n", "l", "x"])
def test_a_text_run_and_an_encoder_say_in_one_line_why_they_have_none(key, bert):
    encoder = Explorer(TEXT, RunConfig(), model=bert)
    encoder.compute()
    text = Explorer(TEXT, RunConfig())
    text.compute()
    why = {
        id(encoder): "is an encoder (bert): it has no next-token head, which the logit lens, ablation, patching, logit "
        "attribution, knockout and --generate read; its attention: attn show, attn heads or attn view with --model",
        id(text): "a text run predicts no token: --model DIR of a decoder has the lens",
    }
    for e in (encoder, text):

        async def test(pilot, app, e=e):
            await pilot.press(key)
            assert len(app.screen_stack) == 1 and why[id(e)] in said(app)

        explore(test, e, size=SIZE)


def test_a_decoder_without_generate_says_how_to_step(llama):
    async def test(pilot, app):
        await pilot.press("n")
        assert "the model wrote nothing here: --generate N has it write N tokens" in said(app)
        await pilot.press("w")
        assert "the whole matrix is in view" in said(app)

    explore(test, run(llama, generate=None), size=SIZE)


BART = Path(__file__).parents[1] / "models" / "golden" / "bart"
SOURCE = "the quick brown fox"


def test_an_encoder_decoder_steps_through_its_written_target_and_has_its_decoders_lens():
    """An encoder–decoder's written target: n steps through it with the probability its decoder gave each
    token reading the source, l shows its decoder's lens (`attn lens TARGET --context SOURCE`), x says in one
    line that attn ablates a decoder-only model's heads; in the encoder's part n says where the target is."""
    bart = load_model(BART)
    e = Explorer("the", RunConfig(), model=bart, context=SOURCE, generate=Generation(3))
    e.compute()
    tokens = e.result.tokens
    start = tokens.generated
    probs = written_probabilities(bart, tokens.ids, start, encoder_tokens(bart, SOURCE).ids)
    lens = lens_document(bart, "the", 5, tokens, context=SOURCE)

    async def test(pilot, app):
        await pilot.press("n")
        shown = said(app)
        assert f"'{tokens.drawn()[start]}', probability" in shown
        assert f"(written token 1 of {e.written()}, at position {start}" in shown
        assert f"probability {fmt(float(probs[0]), 2)}" in shown
        await pilot.press("w", "l")
        await finished(pilot, app)
        assert len(app.screen_stack) == 2
        top = lens["rows"][-1]
        assert f"{labels(top['top_tokens'], top['top_texts'], [False] * 5)[0]} {fmt(top['top_probs'][0], 2)}" in said(
            app
        )
        await pilot.press("escape", "x")
        assert len(app.screen_stack) == 1 and "attn ablate switches off a decoder-only model's heads" in said(app)
        while app.e.part != "encoder":
            await pilot.press("c")
        await pilot.press("n")
        assert "the target the model wrote is the rows of the cross and decoder parts (c)" in said(app)

    explore(test, e, size=SIZE)
