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
    text = model.tokenizer.decode(new, skip_special_tokens=False)
    assert doc["generated"] == {"ids": new, "text": text, "decoding": "greedy (the most probable each time)"}
    ids = ref["greedy"]["ids"] + new
    assert len(doc["tokens"]) == len(ids)
    weights = forward(model, ids).weights[-1]  # one pass over the whole sequence
    np.testing.assert_array_equal(np.array([h["weights"] for h in doc["heads"]], dtype=np.float32), weights)


def test_table_marks_the_generated_tokens_and_says_so():
    out = ok("show", "time flies", "--model", GOLDEN / "llama", "--generate", "3", "--head", "0", "--width", "200")
    assert out.count("›") >= 3 * 2  # each generated token: its row and its column
    assert "› = written by the model after the text: 3 tokens, greedy (the most probable each time)" in out


def test_steps_and_heads_json_carry_the_generation():
    ref = behaviour("mistral")
    steps = json.loads(ok("steps", ref["prompt"], "--model", GOLDEN / "mistral", "--generate", "4", "-f", "json"))
    heads = json.loads(ok("heads", ref["prompt"], "--model", GOLDEN / "mistral", "--generate", "4", "-f", "json"))
    assert steps["generated"]["ids"] == heads["generated"]["ids"] == ref["greedy"]["new"][:4]
    assert len(heads["tokens"]) == len(ref["greedy"]["ids"]) + 4
    table = ok("heads", ref["prompt"], "--model", GOLDEN / "mistral", "--generate", "4", "--width", "200")
    assert "the last 4 tokens the model wrote after the text (--generate, greedy (the most probable each " in table


def test_view_page_data_is_the_whole_sequence():
    doc = json.loads(ok("view", "time flies", "--model", GOLDEN / "gpt2", "--generate", "2", "-f", "json"))
    model = load_model(GOLDEN / "gpt2")
    assert len(doc["tokens"]) == len(encode(model, "time flies").ids) + 2
    assert "--generate 2" in doc["exact"]["command"]


def sampled(*args) -> dict:
    return json.loads(ok("show", "time flies", "--model", GOLDEN / "qwen2", "--generate", "12", *args, "-f", "json"))


def test_sampling_is_seeded_and_says_how():
    one = sampled("--temperature", "1.5", "--seed", "3")["generated"]
    assert one == sampled("--temperature", "1.5", "--seed", "3")["generated"]
    assert one["ids"] != sampled("--temperature", "1.5", "--seed", "4")["generated"]["ids"]
    assert one["decoding"] == (
        "sampled (temperature 1.5; seed 3: NumPy's default_rng, one uniform a token, not torch's stream)"
    )
    assert sampled("--top-k", "5")["generated"]["decoding"].startswith("sampled (top-k 5; seed 0")


def test_sampling_from_the_most_probable_alone_is_greedy():
    greedy = sampled()["generated"]["ids"]
    assert sampled("--top-k", "1", "--seed", "7")["generated"]["ids"] == greedy
    assert sampled("--top-p", "1e-9", "--temperature", "3")["generated"]["ids"] == greedy
    # a temperature so small that the logits over it overflow: the limit, greedy, not NaN probabilities (which
    # drew the last id of the vocabulary every time)
    assert sampled("--temperature", "1e-320", "--seed", "7")["generated"]["ids"] == greedy


def test_draws_follow_the_warped_probabilities():
    from attncli.models.runs.generate import draw, warped

    logits = np.array([2.0, 0.5, -1.0, 1.0, 0.0])
    probs = warped(logits, 0.7, 4, 0.9)  # temperature, then top-k 4 (drops -1.0), then top-p 0.9
    assert probs[2] == 0 and abs(probs.sum() - 1) < 1e-12
    z = np.exp(logits / 0.7)
    z[2] = 0
    kept = np.argsort(-z)
    cut = kept[: np.searchsorted(np.cumsum(z[kept] / z.sum()), 0.9) + 1]  # the fewest whose mass reaches 0.9
    expected = np.where(np.isin(np.arange(5), cut), z, 0) / z[cut].sum()
    np.testing.assert_allclose(probs, expected, rtol=1e-12)
    counts = np.bincount([draw(probs, u) for u in (np.arange(100_000) + 0.5) / 100_000], minlength=5)
    np.testing.assert_allclose(counts / 100_000, probs, atol=2e-5)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["show", "a b", "--generate", "2"], 2, "--generate needs --model"),
        (["show", "time", "--model", GOLDEN / "bert", "--generate", "2"], 2, "is an encoder (bert)"),
        (["show", "time", "--model", GOLDEN / "t5", "--generate", "2"], 2, "give it with --context SOURCE"),
        (
            ["show", "", "--model", GOLDEN / "bart", "--context", "x", "--generate", "64"],
            1,
            "the text is 1 token and --generate 64 more, but bart takes at most 64",
        ),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "0"], 2, "--generate must be at least 1, got 0"),
        (["steps", "time", "--model", GOLDEN / "gpt2", "--generate", "-1"], 2, "--generate must be at least 1, got -1"),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "2", "--temperature", "inf"], 2, "a finite number"),
        (["view", "time", "--model", GOLDEN / "gpt2", "--generate", "2", "--temperature", "nan"], 2, "a finite number"),
        (
            ["show", "time", "--model", GOLDEN / "gpt2", "--generate", "2", "--top-k", "3", "--seed", "-5"],
            2,
            "--seed must be between 0 and 2**63 - 1, got -5",
        ),
        (
            [
                "explore",
                "time",
                "--model",
                GOLDEN / "gpt2",
                "--generate",
                "2",
                "--top-p",
                "0.5",
                "--seed",
                "1" + "0" * 20,
            ],
            2,
            "--seed must be between 0 and 2**63 - 1",
        ),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "64"], 1, "takes at most 64"),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "2", "--rollout"], 2, "drop --lines and"),
        (["show", "time", "--model", GOLDEN / "gpt2", "--top-k", "2"], 2, "--top-k and --top-p sample the tokens"),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "2", "--seed", "1"], 2, "--seed seeds the"),
        (
            ["show", "time", "--model", GOLDEN / "gpt2", "--temperature", "2"],
            2,
            "drop --temperature (--temperature is for sampling with --generate N)",
        ),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "2", "--top-p", "0"], 2, "--top-p must be in"),
        (["show", "time", "--model", GOLDEN / "gpt2", "--generate", "2", "--top-k", "0"], 2, "--top-k must be at"),
        (["show", "a b", "--top-k", "2"], 2, "--top-k needs --model"),
    ],
)
def test_bad_generations_are_one_line(args, code, message):
    r = attn(*args)
    assert r.exit_code == code and message in r.output, r.output
