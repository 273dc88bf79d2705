"""The Python API of the output head: api.lens, api.ablate and show(generate=) write what their commands write."""

from __future__ import annotations

import json
from pathlib import Path

from attncli import api
from attncli.models.runs.generate import Generation
from tests.conftest import attn

GOLDEN = Path(__file__).parents[1] / "models" / "golden" / "llama"
TEXT = "time flies like an arrow"


def command_json(*args) -> dict:
    r = attn(*args, "--model", GOLDEN, "-f", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_lens_and_ablate_are_their_commands():
    assert api.lens(TEXT, model=str(GOLDEN), top_k=3).rows == command_json("lens", TEXT, "--top-k", "3")["rows"]
    mine = api.ablate(TEXT, model=str(GOLDEN), heads=[(1, 2), (0, 1)], mode="mean").rows
    assert mine == command_json("ablate", TEXT, "--heads", "1.2,0.1", "--mode", "mean")["rows"]


def test_show_generates_as_the_command_does():
    greedy = api.show(TEXT, model=str(GOLDEN), generate=4)
    assert json.loads(greedy.to_json())["generated"] == command_json("show", TEXT, "--generate", "4")["generated"]
    sampled = api.show(TEXT, model=str(GOLDEN), generate=Generation(4, temperature=2.0, seed=5))
    expected = command_json("show", TEXT, "--generate", "4", "--temperature", "2", "--seed", "5")["generated"]
    assert json.loads(sampled.to_json())["generated"] == expected
