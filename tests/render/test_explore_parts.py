"""`attn explore` of an encoder–decoder, driven by Textual's Pilot: `c` switches the part (cross, the alignment of
target rows over source columns; the decoder's causal self-attention; the encoder's), and every number on the
screen is the one `attn show --part -f json` gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from textual.widgets import Static

from attncli.core.statistics import CROSS_LABELS, CROSS_STATS
from attncli.models import load_model
from attncli.pipeline.config import RunConfig
from attncli.render.explore.app import HeadsScreen
from attncli.render.explore.state import Explorer
from attncli.render.matrix import fmt
from tests.conftest import attn
from tests.render.test_explore import bars, explore, panels, said, show_json

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
SOURCE, TARGET = "the cat sat on the mat", "le chat est assis sur le tapis"


@pytest.fixture(scope="module")
def t5():
    return load_model(GOLDEN / "t5")


def pair(model, part=None, context=SOURCE, text=TARGET) -> Explorer:
    e = Explorer(text, RunConfig(), context, model=model, part=part)
    e.compute()
    return e


def matrix_rows(app) -> dict[str, list[str]]:
    """The matrix's rows as drawn: the row's token -> its cells (▸ kept on the cell it marks)."""
    rows = {}
    for line in panels(app)[0]:
        cells = line.replace("▸ ", "▸").split()
        if len(cells) > 2 and all(c.lstrip("▸").replace(".", "").isdigit() for c in cells[1:]):
            rows.setdefault(cells[0], cells[1:])
    return rows


def test_it_opens_at_the_alignment_and_marks_each_target_tokens_strongest_source_token(t5):
    async def test(pilot, app):
        assert app.e.part == "cross" and "cross · head 0 of 0..3 · layer 1 of 0..1" in said(app)
        assert "alignment: rows = target tokens" in said(app)
        doc = show_json(TARGET, "--model", GOLDEN / "t5", "--context", SOURCE)
        assert app.e.weights.tolist() == [h["weights"] for h in doc["heads"]]
        weights = np.array(doc["heads"][0]["weights"])
        drawn = matrix_rows(app)
        label = app.e.result.tokens.labels()  # each row labelled by its token as text (␣chat)
        for token in ("chat", "tapis"):  # a row of the target: ▸ on its strongest source token
            i = doc["tokens"].index(token)
            marked = [j for j, cell in enumerate(drawn[label[i]]) if cell.startswith("▸")]
            assert marked == [int(np.argmax(weights[i]))]
            assert [c.lstrip("▸") for c in drawn[label[i]]] == [fmt(w, 2) for w in weights[i]]
        await pilot.press("a")  # the mean over the heads: the alignment a course draws
        mean = np.mean([h["weights"] for h in doc["heads"]], axis=0)
        assert "mean of the 4 heads" in said(app)
        row = matrix_rows(app)[label[2]]
        assert [j for j, cell in enumerate(row) if cell.startswith("▸")] == [int(np.argmax(mean[2]))]

    explore(test, pair(t5), size=(120, 40))


def test_c_switches_to_the_decoder_and_the_encoder_and_back(t5):
    async def test(pilot, app):
        await pilot.press("left_curly_bracket", "c")  # layer 0, then the decoder at layer 0
        assert (app.e.part, app.e.layer) == ("decoder", 0) and "part: decoder" in said(app)
        doc = show_json(TARGET, "--model", GOLDEN / "t5", "--context", SOURCE, "--part", "decoder", "--layer", "0")
        assert app.e.weights.tolist() == [h["weights"] for h in doc["heads"]]
        await pilot.press("down", "down")  # query 2 of the causal self-attention: keys after it are masked
        drawn = bars(app)
        assert [w for _, _, w in drawn.values()] == [
            fmt(w, 2) if j <= 2 else "·" for j, w in enumerate(doc["heads"][0]["weights"][2])
        ]
        await pilot.press("c")
        assert app.e.part == "encoder"
        enc = show_json(SOURCE, "--model", GOLDEN / "t5", "--part", "encoder", "--layer", "0")
        assert list(app.e.result.tokens.strings) == enc["tokens"]
        assert app.e.weights.tolist() == [h["weights"] for h in enc["heads"]]
        assert app.e.query == 2  # the cursor stays where it was (within the source's tokens)
        await pilot.press("h")  # the encoder's heads overview: layers × heads of the encoder
        assert "2 layers × 4 heads" in said(app)
        await pilot.press("escape", "c")
        assert app.e.part == "cross"

    explore(test, pair(t5), size=(120, 40))


def test_c_says_why_when_there_is_no_other_part(t5):
    async def test(pilot, app):
        await pilot.press("c")
        assert app.e.part == "encoder" and "--context SOURCE runs TEXT through the decoder" in said(app)

    explore(test, pair(t5, "encoder", context=None, text=SOURCE))

    async def text_run(pilot, app):
        await pilot.press("c")
        assert "a text run has one attention" in said(app)

    e = Explorer(TARGET, RunConfig())
    e.compute()
    explore(text_run, e)


def test_the_heads_overview_of_cross_attention_has_the_cross_labels(t5):
    async def test(pilot, app):
        await pilot.press("h")
        assert isinstance(app.screen, HeadsScreen) and app.e.part == "cross"
        doc = app.screen.doc
        assert doc["labels"] == list(CROSS_LABELS) and list(doc["stats"]) == list(CROSS_STATS)
        caption = str(app.screen.query(Static).first().render())
        assert "(aln, sink, " in caption and "prev" not in caption
        assert caption.startswith("cross: entropy (bits) of every head")  # which part's heads these are
        await pilot.press("escape", "c", "h")
        assert str(app.screen.query(Static).first().render()).startswith("decoder: entropy (bits) of every head")

    explore(test, pair(t5))


def test_the_command_line_takes_part_and_context():
    r = attn("explore", TARGET, "--model", GOLDEN / "bart", "--part", "decoder")  # no source: said before the screen
    assert r.exit_code != 0 and "give it with --context SOURCE" in r.stderr
    r = attn("explore", TARGET, "--part", "decoder")
    assert r.exit_code == 2 and "--part needs --model" in r.stderr
    r = attn("explore", TARGET, "--model", GOLDEN / "bart", "--context", SOURCE, "--part", "decoder")
    assert "needs a terminal" in r.stderr  # everything else was accepted


def test_a_written_target_is_explored_in_every_part(t5):
    """--generate N with an encoder–decoder: every part's run is of the target it wrote (the encoder's: the
    source), as `attn show --generate --part` gives it."""
    from attncli.models.runs.generate import Generation

    e = Explorer("le chat", RunConfig(), SOURCE, model=t5, generate=Generation(3))
    e.compute()
    assert e.result.tokens.generated == 3 and len(e.result.tokens) == 6
    for part in ("decoder", "encoder", "cross"):
        e.compute(part=part)
        doc = show_json("le chat", "--model", GOLDEN / "t5", "--context", SOURCE, "--generate", "3", "--part", part)
        assert e.weights.tolist() == [h["weights"] for h in doc["heads"]]
