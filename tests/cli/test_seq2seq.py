"""`attn show/steps/heads --model` on the encoder–decoder golden folders: --part, the alignment, the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import attn

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
SOURCE, TARGET = "the cat sat on the mat", "le chat est assis sur le tapis"


@pytest.mark.parametrize("name", ["bart", "t5", "marian"])
def test_show_cross_json_is_transformers_cross_attention(name):
    folder = GOLDEN / name
    r = attn("show", TARGET, "--model", folder, "--context", SOURCE, "--layer", 0, "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    ref = np.load(folder / "reference.npz")["short_cross"][0]  # layer 0, every head
    assert len(doc["context_tokens"]) == ref.shape[2] and len(doc["tokens"]) == ref.shape[1]
    assert doc["config"]["part"] == "cross"
    assert np.abs(np.array([h["weights"] for h in doc["heads"]]) - ref).max() <= 1e-5


def test_the_alignment_table_names_itself_and_marks_each_row():
    r = attn("show", TARGET, "--model", GOLDEN / "bart", "--context", SOURCE, "--mean-heads", "--width", 120)
    assert r.exit_code == 0, r.output
    assert "alignment: rows = target tokens (9), columns = source tokens (8)" in r.output
    assert "mean of the 4 heads" in r.output
    matrix = r.output.split("Output O")[0]
    rows = [line for line in matrix.splitlines() if line.startswith(("le ", "chat ", "tapis "))]
    assert rows and all(line.count("▸") == 1 for line in rows)


def test_parts_steps_heads_and_rollout_run():
    bart = GOLDEN / "t5"
    steps = attn("steps", TARGET, "--model", bart, "--context", SOURCE, "-f", "json")
    assert steps.exit_code == 0, steps.output
    names = [s["name"] for s in json.loads(steps.output)["steps"]]
    assert names[:3] == ["x", "x_context", "q"]
    for args in (
        ("show", SOURCE, "--part", "encoder"),
        ("show", TARGET, "--part", "decoder", "--context", SOURCE, "--head", 2),
        ("show", TARGET, "--part", "decoder", "--context", SOURCE, "--rollout"),
        ("heads", TARGET, "--part", "decoder", "--context", SOURCE),
        ("heads", SOURCE, "--part", "encoder"),
    ):
        r = attn(*args, "--model", bart, "--width", 100)
        assert r.exit_code == 0, (args, r.output)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("show", TARGET, "--model", GOLDEN / "bart"), "give it with --context SOURCE"),
        (("show", TARGET, "--model", GOLDEN / "bert", "--part", "cross"), "its only part is encoder"),
        (("show", TARGET, "--model", GOLDEN / "gpt2", "--part", "decoder", "--context", "x"), "sentence pair"),
        (("show", TARGET, "--part", "cross"), "--part needs --model"),
        (("show", TARGET, "--model", GOLDEN / "t5", "--context", SOURCE, "--rollout"), "roll out --part encoder"),
        (("heads", TARGET, "--model", GOLDEN / "t5", "--context", SOURCE), "--part encoder or --part decoder"),
    ],
)
def test_refusals_say_what_to_do(args, says):
    r = attn(*args)
    assert r.exit_code != 0 and says in r.output, r.output
