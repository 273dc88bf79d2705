"""The lens and the written tokens' probabilities, computed a few rows at a time (models.lens.CHUNK_BYTES), are
those of the whole array at once (models.lens.lens_arrays, checked against transformers in test_behaviour).

A chunk of other rows may take another BLAS kernel (one row is a matrix-vector product), so the float32 logits
may differ by twice the bound of a product of length d_model (tests/tolerance.py); a probability then moves by
at most the factor e^(±2δ) for logits each within δ, and the order of two tokens closer than that may swap.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attncli.models import forward, load_model
from attncli.models.interpret import lens as lens_module
from attncli.models.interpret.lens import lens_arrays, lens_top, written_probabilities
from attncli.models.network.unembed import probabilities, unembedding
from attncli.models.runs.tokens import encode
from tests.tolerance import matmul_bound

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("family", ["llama", "gemma2", "gpt2"])
def test_the_lens_a_row_at_a_time_is_the_lens_of_the_whole_array(family, monkeypatch):
    model = load_model(GOLDEN / family)
    ids = encode(model, "the cat sat on the mat").ids
    run = forward(model, ids)
    assert run.final is not None
    whole = probabilities(lens_arrays(model, ids))  # [L + 1, n, vocab]
    w = model.weights[unembedding(model)]
    normed = np.stack([model.family.final(model, x) for x in run.hidden] + [run.final])  # [L + 1, n, d]
    delta = 2 * matmul_bound(normed, w.T).max()  # |Δ logit| of two kernels (Gemma 2's soft-cap only shrinks it)
    rtol = np.expm1(2 * delta) + 1e-12
    monkeypatch.setattr(lens_module, "CHUNK_BYTES", 1)  # one row a chunk
    ids_k, probs_k = lens_top(model, run, 5)
    expected = np.take_along_axis(whole, ids_k, axis=-1)
    np.testing.assert_allclose(probs_k, expected, rtol=rtol, atol=0)
    best = -np.sort(-whole, axis=-1)[..., :5]  # the five largest, whichever tokens they are
    np.testing.assert_allclose(probs_k, best, rtol=rtol, atol=0)
    start = 3
    got = written_probabilities(model, ids, start, run=run)
    np.testing.assert_allclose(got, whole[-1, start - 1 : -1][np.arange(len(ids) - start), ids[start:]], rtol=rtol)


def test_the_lens_prices_its_logits_beside_the_pass(monkeypatch):
    """A budget with room for the pass and not for a group of layers' logits and the lens' chunk of rows refuses the
    lens in one line before its pass; with room for both, it runs and keeps the weights in what is left."""
    from attncli.errors import AttnError
    from attncli.models.interpret.lens import check_lens, lens_document

    model = load_model(GOLDEN / "llama")
    text = "the cat sat on the mat"
    n = len(encode(model, text).ids)
    vocab = model.weights.shape(unembedding(model))[0]
    pass_ = model.weights.least() + model.n_layer * (3 * model.n_head * n * n + 8 * n * model.d_model) * 4
    beside = 4 * vocab * n * (model.n_layer + 1) + lens_module.CHUNK_BYTES  # the tiny vocabulary: one group
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(pass_ + beside - 1))
    with pytest.raises(AttnError, match="the lens of"):
        check_lens(model, n)
    with pytest.raises(AttnError, match="the lens of"):
        lens_document(model, text)
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(pass_ + beside))
    assert len(lens_document(model, text)["rows"]) == (model.n_layer + 1) * n
