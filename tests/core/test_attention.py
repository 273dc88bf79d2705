"""The attention core: a 2x2 example checked on paper, softmax stability, masks, heads."""

import math

import numpy as np
import pytest

from attncli.core.attention import (
    attend,
    identity_projections,
    merge_heads,
    multi_head,
    random_projections,
    softmax,
    split_heads,
)
from attncli.core.masks import Mask, causal_mask, parse_masks
from attncli.core.variants import VARIANTS, variant_params
from attncli.errors import ConfigError, DataError


def params_for(variant, n_head, d, seed=0, n_keys=4):
    return variant_params(variant, np.random.default_rng(seed), n_head, d, d, d, n_keys, {"rank": 2})


def test_two_tokens_by_hand():
    # q1 = k1 = [1, 0], q2 = k2 = [0, 1], d_k = 2: S = I / √2, so each row is softmax([1/√2, 0]) in some order.
    q = k = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    v = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    r = attend(q, k, v, VARIANTS["scaled"])
    a = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)  # 0.6698...
    assert np.allclose(r.scores[0], [[1 / math.sqrt(2), 0], [0, 1 / math.sqrt(2)]], rtol=0, atol=1e-15)
    assert np.allclose(r.weights[0], [[a, 1 - a], [1 - a, a]], rtol=0, atol=1e-15)
    # o1 = a·v1 + (1 - a)·v2
    assert np.allclose(
        r.out[0],
        [[a * 1 + (1 - a) * 3, a * 2 + (1 - a) * 4], [(1 - a) * 1 + a * 3, (1 - a) * 2 + a * 4]],
        rtol=0,
        atol=1e-14,
    )
    assert round(a, 4) == 0.6698


def test_softmax_is_stable_for_huge_scores():
    w = softmax(np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [1e4, 1e4, 1e4]]))
    assert np.isfinite(w).all()
    assert w.tolist() == [[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3]]


def test_fully_masked_row_is_all_zeros_not_nan():
    w = softmax(np.array([[1.0, 2.0], [3.0, 4.0]]), masked=np.array([[True, True], [False, True]]))
    assert w.tolist() == [[0.0, 0.0], [1.0, 0.0]]


def test_causal_upper_triangle_is_exactly_zero():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((3, 2, 6, 4))
    r = attend(q, k, v, VARIANTS["scaled"], masks=(Mask("causal"),))
    upper = np.triu(np.ones((6, 6), dtype=bool), 1)
    assert (r.weights[:, upper] == 0.0).all()
    assert r.masked[:, upper].all() and not r.masked[:, ~upper].any()
    assert causal_mask(2, 3).tolist() == [[False, True, True], [False, False, True]]


def test_parse_masks():
    assert parse_masks("causal,window:2,topk:3") == (Mask("causal"), Mask("window", 2), Mask("topk", 3))
    assert parse_masks("") == () == parse_masks("none")
    for bad in ("diagonal", "window", "window:x", "topk:0", "causal:3"):
        with pytest.raises(ConfigError, match="mask"):
            parse_masks(bad)


def test_one_head_equals_the_single_head_formula():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 8))
    proj = random_projections(rng, 8, 1, 8, 8)
    mh = multi_head(x, x, proj, 1, VARIANTS["scaled"])
    q, k, v = x @ proj.w_q, x @ proj.w_k, x @ proj.w_v
    s = q @ k.T / math.sqrt(8)
    a = np.exp(s - s.max(1, keepdims=True))
    a /= a.sum(1, keepdims=True)
    assert np.allclose(mh.attended.weights[0], a, atol=1e-14)
    assert np.allclose(mh.output, a @ v @ proj.w_o, atol=1e-13)


def test_heads_split_and_merge_round_trip():
    x = np.arange(24.0).reshape(3, 8)
    assert split_heads(x, 2).shape == (2, 3, 4)
    assert (merge_heads(split_heads(x, 2)) == x).all()
    assert (split_heads(x, 2)[1] == x[:, 4:]).all()


def test_identity_projection_is_q_k_v_equal_x():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6))
    mh = multi_head(x, x, identity_projections(6), 2, VARIANTS["dot"])
    assert (merge_heads(mh.q) == x).all() and (merge_heads(mh.v) == x).all()
    assert np.array_equal(mh.output, merge_heads(mh.attended.out))  # exact: W_O = I, each x·1 plus zeros


def test_cross_attention_has_m_rows_and_n_columns():
    rng = np.random.default_rng(4)
    x_q, x_kv = rng.standard_normal((3, 8)), rng.standard_normal((7, 8))
    mh = multi_head(x_q, x_kv, random_projections(rng, 8, 2, 4, 4), 2, VARIANTS["scaled"])
    assert mh.attended.weights.shape == (2, 3, 7)
    assert mh.output.shape == (3, 8)


def test_width_and_length_mismatches_are_data_errors():
    q, k, v = np.ones((1, 2, 3)), np.ones((1, 2, 4)), np.ones((1, 2, 4))
    with pytest.raises(DataError, match="equal width"):
        attend(q, k, v, VARIANTS["scaled"])
    with pytest.raises(DataError, match="same length"):
        attend(q, q, np.ones((1, 3, 4)), VARIANTS["scaled"])


def test_cosine_is_true_cosine_similarity():
    q = np.array([[[3.0, 4.0]]])
    k = np.array([[[4.0, 3.0], [0.0, 0.0], [-6.0, -8.0]]])
    s = attend(q, k, k, VARIANTS["cosine"]).scores[0, 0]
    assert s.tolist() == pytest.approx([24 / 25, 0.0, -1.0])


@pytest.mark.parametrize("scale", [1e-170, 5e-324, 1e200, 1e300])
def test_cosine_does_not_underflow_or_overflow(scale):
    # np.linalg.norm squares the entries: (1e-170)² is 0 and (1e200)² is inf, which used to score 0 here.
    q = np.array([[[3.0, 4.0]]]) * scale
    k = np.array([[[4.0, 3.0], [0.0, 0.0], [-6.0, -8.0]]]) * scale
    s = attend(q, k, k, VARIANTS["cosine"]).scores[0, 0]
    assert s.tolist() == pytest.approx([24 / 25, 0.0, -1.0], abs=1e-15)  # subnormal multiples are exact


# Properties over every registered variant and mask (finite, rows sum to 1, masked cells 0, top-k, permutation
# invariance) and each variant against a slow reference: tests/test_variants.py.


@pytest.mark.parametrize("name", list(VARIANTS))
def test_same_seed_same_bytes(name):
    variant = VARIANTS[name]
    rng = np.random.default_rng(5)
    q, k, v = rng.standard_normal((3, 2, 4, 4))
    a = attend(q, k, v, variant, params_for(variant, 2, 4, seed=7))
    b = attend(q, k, v, variant, params_for(variant, 2, 4, seed=7))
    assert a.weights.tobytes() == b.weights.tobytes() and a.out.tobytes() == b.out.tobytes()
