"""Encoders through the command line: sentence pairs with --context (the boundary in the matrix and the JSON),
--lines with --model, and the marks of special tokens, on the golden folders of tests/models/golden/."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncli.models import encode, forward, load_model
from attncli.pipeline.tokentext import shown
from tests.conftest import attn
from tests.models.test_golden import GOLDEN

TEXT, PAIR = "time flies like an arrow", "fruit flies like a banana"


def ok(*args, input=None) -> str:
    r = attn(*args, input=input)
    assert r.exit_code == 0, r.output
    return r.stdout


def fails(*args) -> str:
    r = attn(*args)
    assert r.exit_code != 0 and "Traceback" not in r.output, r.output
    return r.output


def test_special_tokens_are_marked_in_the_table_and_the_json():
    folder = GOLDEN / "roberta"
    doc = json.loads(ok("show", TEXT, "--model", folder, "-f", "json"))
    assert doc["tokens"][0] == "<s>" and doc["tokens"][-1] == "</s>"
    assert doc["special"] == [True] + [False] * (len(doc["tokens"]) - 2) + [True]
    screen = ok("show", TEXT, "--model", folder, "--head", "0", "--color", "never", "--width", "120")
    assert "◇<s>" in screen and "◇</s>" in screen and "␣flies" in screen and "◇␣flies" not in screen
    assert "◇ = added by the tokenizer, not cut from the text: <s> </s>" in screen


@pytest.mark.parametrize("family", ["distilbert", "albert", "roberta"])
def test_context_makes_a_sentence_pair_with_its_boundary_shown(family):
    folder = GOLDEN / family
    model = load_model(folder)
    ref = np.load(folder / "reference.npz")  # transformers on the same pair
    doc = json.loads(ok("show", TEXT, "--context", PAIR, "--model", folder, "--layer", "1", "-f", "json"))
    assert doc["tokens"] == list(encode(model, TEXT, PAIR).strings)
    second = doc["second_segment"]
    assert doc["tokens"][second : second + 2] in (["fruit", "flies"], ["▁fruit", "▁flies"], ["fruit", "Ġflies"])
    assert doc["config"]["pair"] == PAIR and doc["context"] is None  # one sequence, not cross-attention
    weights = np.array([h["weights"] for h in doc["heads"]])
    assert np.abs(weights - ref["pair"][1]).max() <= 1e-5
    screen = ok("show", TEXT, "--context", PAIR, "--model", folder, "--head", "0", "--color", "never", "--width", "60")
    assert f"‖{second}" in screen  # the narrow form's index headers keep the divider
    wide = ok("show", TEXT, "--context", PAIR, "--model", folder, "--head", "0", "--color", "never", "--width", "200")
    assert f"‖{shown(doc['texts'][second])}" in wide  # the token as its text: ‖␣fruit
    assert f"sentence pair: ‖ = the second text (--context) starts at token {second}" in " ".join(wide.split())


def test_context_with_steps_and_rollout():
    folder = GOLDEN / "electra"
    steps = json.loads(ok("steps", TEXT, "--context", PAIR, "--model", folder, "-f", "json"))
    assert steps["config"]["pair"] == PAIR and steps["tokens"][steps["second_segment"]]["token"] == "fruit"
    assert steps["special"][0] and not steps["special"][1]
    rolled = json.loads(ok("show", TEXT, "--context", PAIR, "--model", folder, "--rollout", "-f", "json"))
    assert rolled["config"]["pair"] == PAIR and rolled["tokens"][rolled["second_segment"]] == "fruit"
    screen = ok("show", TEXT, "--context", PAIR, "--model", folder, "--rollout", "--color", "never", "--width", "200")
    assert "‖␣fruit" in screen


def test_a_decoder_refuses_context_in_one_line(tmp_path):
    from tests.model_fixtures import make_gpt2

    folder = make_gpt2(tmp_path / "gpt2-tiny")
    out = fails("show", TEXT, "--context", PAIR, "--model", folder)
    assert out.strip() == (
        "Error: --context makes a sentence pair, which only an encoder (BERT-like) model takes; "
        "gpt2-tiny is a decoder (gpt2)"
    )


def test_lines_with_a_model_streams_one_result_per_line():
    folder = GOLDEN / "distilbert"
    model = load_model(folder)
    text = "time flies like an arrow\n\nfruit flies like a banana\nthe cat sat on the mat\n"
    out = ok("show", "--lines", "-", "--model", folder, "--layer", "0", "--head", "2", "-f", "jsonl", input=text)
    docs = [json.loads(line) for line in out.splitlines()]
    assert [d["line"] for d in docs] == [1, 3, 4]
    for d in docs:
        want = forward(model, encode(model, d["text"]).ids).weights[0][2]
        assert d["config"]["head"] == 2 and np.array_equal(np.array(d["heads"][0]["weights"]), want.astype(float))
    table = ok("show", "--lines", "-", "--model", folder, "--head", "0", "-f", "table", "--color", "never", input=text)
    assert table.count("distilbert: distilbert, 2 layers") == 3


def test_lines_with_a_model_names_the_bad_line_and_rollout_refuses_lines():
    folder = GOLDEN / "roberta"
    out = fails("show", "--lines", "time flies\n" + "flies " * 200, "--model", folder)
    assert "line 2: the text is" in out and "takes at most 128" in out
    assert "--rollout draws one text's rollout" in fails("show", "--lines", TEXT, "--model", folder, "--rollout")


@pytest.mark.parametrize("width", [40, 60, 90, 140, 200])
def test_a_pair_fits_every_width(width):
    from rich.cells import cell_len

    args = ("show", TEXT, "--context", PAIR, "--model", GOLDEN / "roberta", "--color", "never", "--width", width)
    lines = ok(*args).splitlines()
    assert max(cell_len(line) for line in lines) <= width
    matrix = lines[: next(i for i, line in enumerate(lines) if line.startswith("roberta: roberta"))]
    assert any("‖" in line for line in matrix)  # in the headers, or (a heatmap, the narrowest form) in its token key
