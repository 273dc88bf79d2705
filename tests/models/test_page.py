"""The attention a model's page draws (attncli/models/runs/page.py): every layer from one pass, the carried q, k
and v kept as that pass makes them, the same numbers as a pass per layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attncli.models import load_model
from attncli.models.network import forward as forward_module
from attncli.models.runs import page, route
from attncli.models.runs.run import model_layer
from attncli.models.runs.seq2seq import part_layer

GOLDEN = Path(__file__).parent / "golden"
TEXT = "time flies like an arrow"


@pytest.fixture
def passes(monkeypatch):
    """The forward passes run from here on (each call of forward.py's one loop)."""
    made: list[int] = []
    loop = forward_module._forward
    monkeypatch.setattr(forward_module, "_forward", lambda *a, **k: made.append(1) or loop(*a, **k))
    return made


@pytest.mark.parametrize("name", ["gpt2", "bert", "llama"])
def test_a_short_pages_every_layer_comes_from_one_pass_with_the_bits_of_a_pass_per_layer(name, passes):
    model = load_model(GOLDEN / name)
    shown = route.result(model, TEXT, layer=0)
    passes.clear()
    layers = route.page_attention(model, shown, None, None)
    assert len(passes) == 1  # before: one more for every layer whose q, k and v the page carries
    assert [c.steps.layer for c in layers.carried] == list(range(model.n_layer))
    for c in layers.carried:
        _, alone = model_layer(model, TEXT, c.steps.layer)
        for stage in ("q", "k", "v", "weights"):
            assert np.array_equal(getattr(c.steps, stage), getattr(alone, stage))  # the same bits
        assert [s.name for s in c.stages][:4] == ["x", "q", "k", "v"]
        assert np.array_equal(layers.weights[c.steps.layer], alone.weights)


def test_a_long_page_carries_its_own_layer_only(monkeypatch):
    model = load_model(GOLDEN / "gpt2")
    monkeypatch.setattr(page, "QKV_BYTES", 0)
    layers = route.page_attention(model, route.result(model, TEXT, layer=1), None, None)
    assert [c.steps.layer for c in layers.carried] == [1]
    assert page.qkv_bytes(layers.carried[0].steps) > 0


def test_an_encoder_decoders_page_has_every_part_and_each_parts_layer():
    model = load_model(GOLDEN / "bart")
    shown = route.result(model, "le chat", layer=1, context="the cat")
    parts = route.page_attention(model, shown, None, None)
    assert (parts.text, parts.context, parts.target) == ("le chat", "the cat", None)  # teacher forcing
    for name, part in parts.parts.items():
        _, alone = part_layer(model, "le chat", 1, None, "the cat", name)
        assert np.array_equal(part.carried.steps.weights, alone.weights) and part.weights.shape[0] == 2
