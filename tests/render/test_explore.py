"""`attn explore` driven by Textual's Pilot: keys move the cursor and switch what runs, and every number on the
screen is the one `attn show -f json` gives for the same options (read from the screen, as a user reads it)."""

from __future__ import annotations

import asyncio
import io
import json
import re

import pytest
from rich.console import Console
from textual.widgets import Input

from attncli.core.statistics import LABELS
from attncli.models import load_model
from attncli.models.runs.generate import Generation
from attncli.pipeline.config import RunConfig
from attncli.render.explore.app import DEBOUNCE, ExploreApp
from attncli.render.explore.state import Explorer
from attncli.render.matrix import fmt
from tests.conftest import attn

TEXT = "time flies like an arrow"
BAR_ROW = re.compile(r"^(\d+)(?: (\S+))?\s+(-?\d+\.\d\d|masked)\s+▸?(\d\.\d\d|·)")


def screen(app: ExploreApp) -> list[str]:
    """The screen as plain text lines, as a terminal shows it."""
    console = Console(width=app.size.width, file=io.StringIO(), record=True, color_system=None)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()


def said(app: ExploreApp) -> str:
    """The screen's words in one line (what wraps at the edge of the screen joins again)."""
    return " ".join(" ".join(screen(app)).split())


def panels(app: ExploreApp) -> tuple[list[str], list[str]]:
    """The left (matrix) and right (focused row) panels' lines, split at the rule between them."""
    lines = [line for line in screen(app) if "▏" in line]
    halves = [line.split("▏", 1) for line in lines]  # the first ▏ is the rule (a bar may end in another)
    return [left.strip() for left, _ in halves], [right.strip() for _, right in halves]


def show_json(*args) -> dict:
    r = attn("show", *args, "-f", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def bars(app: ExploreApp) -> dict[int, tuple[str, str, str]]:
    """The side panel's rows: key index -> (token, score, weight) as drawn (token None: a narrow panel keys
    them by index, with the key under the bars)."""
    rows = [BAR_ROW.match(line) for line in panels(app)[1]]
    return {int(m[1]): (m[2], m[3], m[4]) for m in rows if m}


def explore(test, explorer: Explorer, size=(80, 24)):
    """Run `test(pilot, app)` on the app of `explorer` in a headless terminal of `size`."""

    async def run():
        app = ExploreApp(explorer)
        async with app.run_test(size=size) as pilot:
            await test(pilot, app)
        return app

    return asyncio.run(run())


def text_run(text: str = TEXT, **config) -> Explorer:
    e = Explorer(text, RunConfig(**config))
    e.compute()
    return e


def test_arrows_move_the_cursor_and_brackets_switch_the_head():
    async def test(pilot, app):
        await pilot.press("down", "down", "right", "up")
        assert app.e.focus() == (0, 1, 1)
        await pilot.press("left", "left", "left")  # stops at the edge
        assert app.e.focus() == (0, 1, 0)
        await pilot.press("right_square_bracket")
        assert app.e.focus() == (1, 1, 0)
        assert "head 1 of 0..1" in said(app)
        await pilot.press("right_square_bracket")  # round to head 0
        assert app.e.head == 0
        await pilot.press("a")
        assert app.e.mean and "mean of the 2 heads" in said(app)

    explore(test, text_run(heads=2))


def test_the_heads_overview_of_a_text_run_opens_a_head():
    async def test(pilot, app):
        await pilot.press("h")
        assert app.screen.doc["labels"] == LABELS and len(app.screen.doc["rows"]) == 2
        await pilot.press("right", "enter")
        assert app.e.head == 1 and "head 1 of 0..1" in said(app)

    explore(test, text_run(heads=2))


@pytest.mark.parametrize("keys, options", [((), []), (("v",), ["-v", "cosine"]), (("m",), ["--mask", "causal"])])
def test_the_numbers_on_the_screen_are_attn_shows(keys, options):
    """The focused row's scores and weights, and the matrix's row, as `attn show -f json` has them."""

    async def test(pilot, app):
        await pilot.press("down", "right_square_bracket", *keys)
        doc = show_json(TEXT, "--heads", "2", *options)
        head = doc["heads"][1]
        drawn = bars(app)
        assert sorted(drawn) == list(range(5))
        masked = [options == ["--mask", "causal"] and j > 1 for j in range(5)]  # query 1 sees keys 0 and 1
        expected = ["·" if m else fmt(w, 2) for w, m in zip(head["weights"][1], masked)]
        for j, (token, score, weight) in drawn.items():
            assert token in (doc["tokens"][j], None)
            assert weight == expected[j]
            assert score == ("masked" if masked[j] else fmt(head["scores"][1][j], 2))
        row = next(line for line in panels(app)[0] if line.startswith("flies "))
        assert row.replace("▸", " ").split()[1:] == expected

    explore(test, text_run(heads=2))


def test_the_formula_works_out_the_focused_weight():
    async def test(pilot, app):
        await pilot.press("down", "right", "right", "right")
        side = "\n".join(panels(app)[1])
        weights, scores, _ = app.e.row()
        assert f"S[1,3] = {fmt(float(scores[3]), 2)}" in side
        assert f"max    = {fmt(float(scores.max()), 2)}" in side
        assert f"= {fmt(float(weights[3]), 2)}" in side

    explore(test, text_run())


def test_the_switch_keys_run_what_attn_show_runs():
    async def test(pilot, app):
        await pilot.press("p", "t")
        assert app.e.config.positional == "sinusoidal" and app.e.config.tokenizer == "bpe"
        doc = show_json(TEXT, "--positional", "sinusoidal", "-t", "bpe")
        assert list(app.e.result.tokens.strings) == doc["tokens"]
        assert app.e.weights.tolist() == [h["weights"] for h in doc["heads"]]
        await pilot.press("left_curly_bracket")  # a text run has one layer: said, nothing changes
        assert "has one layer" in said(app)

    explore(test, text_run())


def test_editing_the_text_recomputes_as_you_type():
    async def test(pilot, app):
        await pilot.press("e", *" today")
        await pilot.pause(DEBOUNCE * 4)
        assert app.e.text == TEXT + " today"  # before Enter: the view follows the typing
        assert "today" in said(app)
        await pilot.press("backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "enter")
        assert app.e.text == TEXT
        await pilot.press("e", "ctrl+u")  # an empty text is said, and the last view stays
        await pilot.pause(DEBOUNCE * 4)
        assert app.e.text == TEXT and "✗" in said(app)
        await pilot.press("escape", "down")  # the edit line is closed: the arrows move the cursor again
        assert app.e.query == 1

    explore(test, text_run())
    doc = show_json(TEXT + " today")
    e = text_run(TEXT + " today")
    assert e.weights.tolist() == [h["weights"] for h in doc["heads"]]


def test_j_writes_the_json_of_attn_show_and_s_the_screen(tmp_path):
    target, picture = tmp_path / "view.json", tmp_path / "view.svg"

    async def test(pilot, app):
        await pilot.press("v")
        for key, path in (("j", target), ("s", picture)):
            await pilot.press(key)
            app.screen.query_one(Input).value = str(path)  # what the user types in the prompt
            await pilot.press("enter")
        await pilot.pause()
        await pilot.press("q")

    app = explore(test, text_run(heads=2))
    assert json.loads(target.read_text()) == show_json(TEXT, "--heads", "2", "-v", "cosine")
    assert picture.read_text().startswith("<svg") and "cosine" in picture.read_text()
    assert "@font-face" not in picture.read_text() and "cdnjs" not in picture.read_text()  # nothing fetched
    assert app.return_code == 0


def test_help_and_escape():
    async def test(pilot, app):
        await pilot.press("question_mark")
        assert "attn explore: the keys" in said(app)
        await pilot.press("escape")
        assert "attn explore: the keys" not in said(app)

    explore(test, text_run())


def test_the_help_scrolls_to_its_last_key_at_80_by_24():
    """At 80 × 24 the list of keys is longer than the screen: the box scrolls, it is not cut."""
    from textual.containers import VerticalScroll

    async def test(pilot, app):
        await pilot.press("question_mark")
        box = app.screen.query_one("#help", VerticalScroll)
        assert box.max_scroll_y > 0 and box.scroll_y == 0  # longer than the box
        await pilot.press("end")
        await pilot.pause()
        assert box.scroll_y == box.max_scroll_y

    explore(test, text_run(), size=(80, 24))


def test_a_model_run_switches_layer_and_head_and_opens_a_head_from_the_overview(bert):
    e = Explorer(TEXT, RunConfig(), model=bert)
    e.compute()

    async def test(pilot, app):
        last = bert.n_layer - 1
        assert app.e.layer == last
        await pilot.press("right_curly_bracket")  # round to layer 0
        assert app.e.layer == 0
        await pilot.press("right_square_bracket", "down")
        doc = show_json(TEXT, "--model", bert.path, "--layer", "0")
        assert app.e.weights.tolist() == [h["weights"] for h in doc["heads"]]
        drawn = bars(app)
        assert [w for _, _, w in drawn.values()] == [fmt(w, 2) for w in doc["heads"][1]["weights"][1]]
        await pilot.press("v")
        assert "the model's own score function: run without --model" in said(app)
        await pilot.press("p")
        assert "the model's own positional encoding:" in said(app)
        await pilot.press("h")
        assert "pattern label" in said(app)
        await pilot.press("down", "left", "enter")  # layer 1, head 0
        assert (app.e.layer, app.e.head) == (1, 0)

    explore(test, e)


def test_the_matrix_marks_the_tokens_the_tokenizer_added_as_its_caption_says(bert):
    e = Explorer(TEXT, RunConfig(), model=bert)
    e.compute()

    async def test(pilot, app):
        assert "◇ = added by the tokenizer" in said(app)
        rows = [line.split()[0] for line in panels(app)[0] if line.split()]
        assert "◇[CLS]" in rows and "◇[SEP]" in rows and "[CLS]" not in rows

    explore(test, e, size=(120, 40))


def test_hostile_text_reaches_the_screen_escaped():
    """A token or an error message that holds terminal controls is drawn as visible escapes."""

    async def test(pilot, app):
        text = "\n".join(screen(app))
        assert "\x1b" not in text and "\\x1b" in text
        await pilot.press("e", "ctrl+u")  # an empty text: the error line
        await pilot.pause(DEBOUNCE * 4)
        assert "✗" in said(app)

    explore(test, text_run("time \x1b[2J flies", tokenizer="char"))


def test_a_generation_is_explored_whole_at_every_layer_and_marked():
    from pathlib import Path

    folder = Path(__file__).parents[1] / "models" / "golden" / "llama"
    e = Explorer(TEXT, RunConfig(), model=load_model(folder), generate=Generation(3))
    e.compute()
    doc = show_json(TEXT, "--model", folder, "--generate", "3")
    assert list(e.result.tokens.strings) == doc["tokens"]
    assert e.weights.tolist() == [h["weights"] for h in doc["heads"]]
    assert e.heads_document()["generated"] == doc["generated"]

    async def test(pilot, app):
        assert "› = written by the model after the text: 3 tokens" in said(app)
        await pilot.press("right_curly_bracket")  # layer 0: the same sequence
        assert len(app.e.result.tokens) == len(doc["tokens"])

    explore(test, e, size=(160, 50))


def test_keys_that_come_before_a_screen_has_gone_do_nothing():
    """Hostile round III: `h`, Enter, Enter a few ms apart crashed (the second Enter dismissed the main screen:
    ScreenStackError), and a burst of keys stacked screens. Here the keys' actions come in one go, as a burst
    does, before Textual has drawn anything between them."""

    async def test(pilot, app):
        await pilot.press("h")
        heads = app.screen
        heads.dismiss((0, 1))  # the first Enter: open head 1
        heads.dismiss((0, 0))  # the second, on the screen already leaving: nothing
        await pilot.pause()
        assert len(app.screen_stack) == 1 and app.e.head == 1 and "head 1 of 0..1" in said(app)
        app.action_heads()
        app.action_heads()  # `h` twice: one overview
        app.action_help()  # and `?` over it: nothing
        await pilot.pause()
        assert len(app.screen_stack) == 2 and app.screen.doc["n_head"] == 2
        await pilot.press("escape", "escape", "escape")
        assert len(app.screen_stack) == 1 and app.is_running

    explore(test, text_run(heads=2))
