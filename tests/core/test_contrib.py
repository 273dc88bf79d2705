"""The contribution maps' maths (attncli.core.contrib): blocks of rows change nothing, the definitions hold."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attncli.core.contrib import (
    alti_layer,
    alti_out_norm,
    head_vectors,
    manhattan_shares,
    norm_heads,
    norm_layer,
    roll,
)
from attncli.core.measures import CONTRIBUTIONS
from tests.tolerance import U64, gamma


def _layer(seed: int, h: int = 3, n: int = 5, d_k: int = 2, d: int = 6):
    rng = np.random.default_rng(seed)
    a = rng.random((h, n, n))
    a /= a.sum(-1, keepdims=True)
    f = head_vectors(rng.normal(size=(h, n, d_k)), rng.normal(size=(h * d_k, d)))
    return a, f, rng.normal(size=(n, d))


@settings(deadline=None, max_examples=20)
@given(st.integers(0, 2**31), st.integers(1, 6))
def test_a_block_of_rows_at_a_time_is_the_whole(seed, rows):
    """The [rows, n, d] reduction within any budget gives the matrix of one block (8 bytes a float64)."""
    a, f, x = _layer(seed)
    n, d = a.shape[-1], f.shape[-1]
    budget = rows * n * d * 8
    np.testing.assert_allclose(norm_layer(a, f, budget), norm_layer(a, f, 1 << 30), rtol=0, atol=1e-12)
    norm = (np.linspace(0.5, 2.0, d), True)
    np.testing.assert_allclose(
        alti_layer(a, f, x, norm, budget), alti_layer(a, f, x, norm, 1 << 30), rtol=0, atol=1e-12
    )


@settings(deadline=None, max_examples=20)
@given(st.integers(0, 2**31), st.integers(1, 6))
def test_a_norm_on_the_attentions_output_is_linear_at_each_row(seed, rows):
    """x + N(o) with N's scale fixed per row: T_i(x_j) = s_i γ ⊙ Σ_h α f_h(x_j) + [i = j] x_j. Its rows are the shares
    of a pre-norm block whose f carries γ and s_i (the same T, built by the definition), and any block of rows gives
    the whole."""
    a, f, x = _layer(seed)
    n, d = a.shape[-1], f.shape[-1]
    rng = np.random.default_rng(seed + 1)
    gain, scale = rng.uniform(0.5, 2.0, d), rng.uniform(0.1, 3.0, n)
    t = np.einsum("hij,hjd->ijd", a, f) * gain * scale[:, None, None]
    t[np.arange(n), np.arange(n)] += x
    got = alti_out_norm(a, f, x, gain, scale, rows * n * d * 8)
    np.testing.assert_allclose(got, manhattan_shares(t), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got, alti_out_norm(a, f, x, gain, scale, 1 << 30), rtol=0, atol=1e-12)
    assert np.allclose(alti_out_norm(a, f, x, np.ones(d), np.ones(n), 1 << 20), alti_layer(a, f, x, None, 1 << 20))


def test_norm_is_the_length_of_what_each_head_moves():
    a, f, _ = _layer(1)
    want = np.linalg.norm(a[..., None] * f[:, None], axis=-1)  # ‖α_ij f_h(x_j)‖ by its definition
    np.testing.assert_allclose(norm_heads(a, f), want, rtol=1e-12)
    one_head = norm_layer(a[:1], f[:1], 1 << 20)  # one head: the layer's norm is the head's
    np.testing.assert_allclose(one_head, norm_heads(a[:1], f[:1])[0], rtol=1e-12)


def test_alti_gives_a_token_alone_all_of_its_output():
    """Without mixing (each query attends to itself only) every output is its own token's: C = I."""
    _, f, x = _layer(2)
    n = x.shape[0]
    a = np.broadcast_to(np.eye(n), (f.shape[0], n, n))
    np.testing.assert_allclose(alti_layer(a, f, x, None, 1 << 20), np.eye(n), atol=1e-12)
    assert np.array_equal(roll([np.eye(n), np.eye(n)]), np.eye(n))  # identities mix nothing: exactly I


def test_manhattan_shares_are_shares():
    t = np.random.default_rng(3).normal(size=(4, 5, 6))
    c = manhattan_shares(t)
    assert (c >= 0).all()
    np.testing.assert_allclose(c.sum(-1), 1.0, rtol=0, atol=2 * gamma(t.shape[-1], U64))  # n quotients, then summed


def test_every_measure_says_what_it_is():
    for m in CONTRIBUTIONS.values():
        assert m.title and m.formula and m.paper and m.needs
        assert "weights" not in m.title or m.name == "weights"  # a map of another measure never says weights
