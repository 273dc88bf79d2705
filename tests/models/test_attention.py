"""`attend`'s weights are the softmax of the scores it reports (computed again on first read), for every kind
of score: scaled, biased (T5), soft-capped and windowed (Gemma 2), grouped-query (Llama), a batch's padding."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncli.core.attention import softmax
from attncli.models import encode, forward, load_model
from attncli.models.network.attention import padding
from tests.models.test_golden import GOLDEN
from tests.tolerance import U32, assert_within, matmul_bound, softmax_bound, softmax_sum_bound


@pytest.mark.parametrize("name", ["bert", "gpt2", "t5", "gemma2", "llama"])
def test_weights_are_the_softmax_of_the_scores(name):
    model = load_model(GOLDEN / name)
    text = json.loads((GOLDEN / name / "texts.json").read_text())["long"]
    steps = forward(model, encode(model, text).ids, steps_layer=-1).steps
    assert steps is not None and steps.scores.shape == steps.weights.shape
    assert np.isfinite(steps.scores).all() and steps.scores is steps.scores  # computed once, then kept
    # two float32 softmaxes of the same scores, and two float32 products of the same q and k (tests/tolerance.py)
    assert_within(softmax(steps.scores, steps.masked), steps.weights, 2 * softmax_bound(steps.weights, steps.scores))
    qs, kt = steps.q * np.float32(steps.scale), steps.k.swapaxes(-1, -2)
    bias = 0 if steps.bias is None else steps.bias
    raw, bound = qs @ kt + bias, 2 * (matmul_bound(qs, kt) + U32 * (np.abs(qs @ kt) + np.abs(bias)))
    cap = steps.softcap  # cap·tanh(x / cap) moves by at most its argument's move, plus its own roundings
    if cap is not None:
        raw, bound = cap * np.tanh(raw / cap), bound + 8 * U32 * cap
    assert_within(steps.scores, raw, bound)


def test_padding_keys_get_exactly_zero():
    model = load_model(GOLDEN / "bert")
    ids = encode(model, "time flies like an arrow").ids
    x = np.stack([model.family.embed(model, ids)] * 2)  # [2, n, d]
    pad = np.zeros((2, len(ids)), bool)
    pad[1, 3:] = True
    with padding(pad):
        _, steps = model.family.attention(model, 0, x)
    assert (steps.weights[1, :, :, 3:] == 0).all() and (steps.weights[0] > 0).all()
    assert_within(steps.weights.sum(-1), 1, softmax_sum_bound(len(ids)))
