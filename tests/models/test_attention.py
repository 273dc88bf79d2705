"""`attend`'s weights are the softmax of the scores it reports (computed again on first read), for every kind
of score: scaled, biased (T5), soft-capped and windowed (Gemma 2), grouped-query (Llama), a batch's padding."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncli.core.attention import softmax
from attncli.models import encode, forward, load_model
from attncli.models.attention import padding
from tests.models.test_golden import GOLDEN


@pytest.mark.parametrize("name", ["bert", "gpt2", "t5", "gemma2", "llama"])
def test_weights_are_the_softmax_of_the_scores(name):
    model = load_model(GOLDEN / name)
    text = json.loads((GOLDEN / name / "texts.json").read_text())["long"]
    steps = forward(model, encode(model, text).ids, steps_layer=-1).steps
    assert steps is not None and steps.scores.shape == steps.weights.shape
    assert np.isfinite(steps.scores).all() and steps.scores is steps.scores  # computed once, then kept
    np.testing.assert_allclose(softmax(steps.scores, steps.masked), steps.weights, rtol=0, atol=2e-6)
    raw = (steps.q * np.float32(steps.scale)) @ steps.k.swapaxes(-1, -2) + (0 if steps.bias is None else steps.bias)
    cap = steps.softcap
    np.testing.assert_allclose(steps.scores, raw if cap is None else cap * np.tanh(raw / cap), rtol=1e-6, atol=1e-6)


def test_padding_keys_get_exactly_zero():
    model = load_model(GOLDEN / "bert")
    ids = encode(model, "time flies like an arrow").ids
    x = np.stack([model.family.embed(model, ids)] * 2)  # [2, n, d]
    pad = np.zeros((2, len(ids)), bool)
    pad[1, 3:] = True
    with padding(pad):
        _, steps = model.family.attention(model, 0, x)
    assert (steps.weights[1, :, :, 3:] == 0).all() and (steps.weights[0] > 0).all()
    np.testing.assert_allclose(steps.weights.sum(-1), 1, atol=1e-6)
