"""--generate N on show, steps, heads and view: the text and what a decoder writes after it, one sequence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attncli.models import encode, forward, load_model
from tests.conftest import attn

GOLDEN = Path(__file__).parents[1] / "models" / "golden"


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


def behaviour(name: str) -> dict:
    return json.loads((GOLDEN / name / "behaviour.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["qwen2", "gpt2", "gpt_neox"])
def test_show_json_is_the_whole_sequence_and_its_generated_ids_are_transformers(name):
    ref, folder = behaviour(name), GOLDEN / name
    n = ref["greedy"]["max_new_tokens"]
    doc = json.loads(ok("show", ref["prompt"], "--model", folder, "--generate", n, "-f", "json"))
    new = ref["greedy"]["new"]
    model = load_model(folder)
    assert doc["generated"] == {"ids": new, "text": model.tokenizer.decode(new, skip_special_tokens=False)}
    ids = ref["greedy"]["ids"] + new
    assert len(doc["tokens"]) == len(ids)
    weights = forward(model, ids).weights[-1]  # one pass over the whole sequence
    np.testing.assert_array_equal(np.array([h["weights"] for h in doc["heads"]], dtype=np.float32), weights)


def test_table_marks_the_generated_tokens_and_says_so():
    out = ok("show", "time flies", "--model", GOLDEN / "llama", "--generate", "3", "--head", "0", "--width", "200")
    assert out.count("›") >= 3 * 2  # each generated token: its row and its column
    assert "› = written by the model after the text: 3 tokens, greedy" in out


def test_steps_and_heads_json_carry_the_generation():
    ref = behaviour("mistral")
    steps = json.loads(ok("steps", ref["prompt"], "--model", GOLDEN / "mistral", "--generate", "4", "-f", "json"))
    heads = json.loads(ok("heads", ref["prompt"], "--model", GOLDEN / "mistral", "--generate", "4", "-f", "json"))
    assert steps["generated"]["ids"] == heads["generated"]["ids"] == ref["greedy"]["new"][:4]
    assert len(heads["tokens"]) == len(ref["greedy"]["ids"]) + 4
    table = ok("heads", ref["prompt"], "--model", GOLDEN / "mistral", "--generate", "4", "--width", "200")
    assert "the last 4 tokens the model wrote after the text (--generate, greedy): " in table


def test_view_page_data_is_the_whole_sequence():
    doc = json.loads(ok("view", "time flies", "--model", GOLDEN / "gpt2", "--generate", "2", "-f", "json"))
    model = load_model(GOLDEN / "gpt2")
    assert len(doc["tokens"]) == len(encode(model, "time flies").ids) + 2
    assert "--generate 2" in doc["exact"]["command"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["show", "a b", "--generate", "2"], 2, "--generate needs --model"),
        (["show", "time", "--model", GOLDEN / "bert", "--generate", "2"], 1, "is an encoder (bert)"),
        (["show", "time", "--model", GOLDEN / "t5", "--context", "x", "--generate", "2"], 1, "is an encoder–decoder"),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "0"], 1, "--generate must be at least 1, got 0"),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "64"], 1, "takes at most 64"),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "2", "--rollout"], 2, "drop --lines and"),
    ],
)
def test_bad_generations_are_one_line(args, code, message):
    r = attn(*args)
    assert r.exit_code == code and message in r.output, r.output
