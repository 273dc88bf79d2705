"""Tests of attncli.core.approx: Linformer, Performer and their error report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncli.core.approx import approx_error, linformer, linformer_projection, performer, performer_features
from attncli.core.kernels import attention_weights
from attncli.errors import DataError
from tests.tolerance import U32, assert_within, softmax_sum_bound

METHODS = {
    "linformer": lambda q, k, v, s, size, rng, **kw: linformer(q, k, v, s, size, rng, **kw),
    "performer": lambda q, k, v, s, size, rng, **kw: performer(q, k, v, s, size, rng, **kw),
}


def make(h, m, n, d, dv, dtype=np.float64, seed=0, mult=1.0):
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((h, m, d)) * mult).astype(dtype)
    k = (rng.standard_normal((h, n, d)) * mult).astype(dtype)
    v = rng.standard_normal((h, n, dv)).astype(dtype)
    return q, k, v


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shapes_dtype_rows_sum_to_one_and_out_is_weights_times_v(method, dtype):
    q, k, v = make(3, 17, 29, 8, 5, dtype)
    w, out = METHODS[method](q, k, v, 0.35, 6, np.random.default_rng(1))
    assert w.shape == (3, 17, 29) and out.shape == (3, 17, 5)
    assert w.dtype == out.dtype == dtype
    assert np.all(w >= 0) and np.isfinite(w).all() and np.isfinite(out).all()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert_within(w.sum(-1), 1, softmax_sum_bound(29, U32 if dtype == np.float32 else 2.0**-53))
    np.testing.assert_allclose(w.astype(np.float64) @ v.astype(np.float64), out, atol=tol * 10, rtol=tol)


@pytest.mark.parametrize("method", METHODS)
def test_same_seed_same_result_other_seed_other_result(method):
    q, k, v = make(2, 10, 12, 4, 4)
    a = METHODS[method](q, k, v, 0.5, 3, np.random.default_rng(7))
    b = METHODS[method](q, k, v, 0.5, 3, np.random.default_rng(7))
    c = METHODS[method](q, k, v, 0.5, 3, np.random.default_rng(8))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    d = METHODS[method](q, k, v, 0.5, 3, 7)  # an int seed is accepted too
    np.testing.assert_array_equal(a[0], d[0])


@pytest.mark.parametrize("method", METHODS)
def test_two_dimensional_inputs_and_no_weights(method):
    q, k, v = make(1, 6, 9, 4, 3)
    w3, o3 = METHODS[method](q, k, v, 0.5, 4, np.random.default_rng(0))
    w2, o2 = METHODS[method](q[0], k[0], v[0], 0.5, 4, np.random.default_rng(0))
    np.testing.assert_array_equal(w2, w3[0])
    np.testing.assert_array_equal(o2, o3[0])
    none, o = METHODS[method](q, k, v, 0.5, 4, np.random.default_rng(0), return_weights=False)
    assert none is None
    np.testing.assert_array_equal(o, o3)


def test_bad_arguments():
    q, k, v = make(1, 4, 5, 3, 3)
    with pytest.raises(TypeError):
        linformer(q, k, v, 1.0, 2, rng=None)
    with pytest.raises(TypeError):
        performer(q, k, v, 1.0, 2, rng=np.random.RandomState(0))
    with pytest.raises(DataError):
        linformer(q, k, v, 1.0, 0, np.random.default_rng(0))
    with pytest.raises(DataError):
        performer(q, k, v, 1.0, 0, np.random.default_rng(0))
    with pytest.raises(DataError):
        linformer(q, k[:, :3], v, 1.0, 2, np.random.default_rng(0))
    with pytest.raises(DataError):
        performer(q, k[:, :0], v[:, :0], 1.0, 2, np.random.default_rng(0))


# ------------------------------------------------------------------ Linformer


def test_linformer_projection_is_a_balanced_partition():
    group, sizes = linformer_projection(10, 3, np.random.default_rng(0))
    assert sorted(sizes.tolist()) == [3, 3, 4] and group.shape == (10,)
    assert np.array_equal(np.bincount(group, minlength=3), sizes)
    group, sizes = linformer_projection(5, 50, np.random.default_rng(0))  # rank clipped to n
    assert sizes.tolist() == [1] * 5 and sorted(group.tolist()) == list(range(5))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linformer_full_rank_is_exact(dtype):
    q, k, v = make(2, 20, 24, 8, 8, dtype)
    exact_w, exact_out = attention_weights(q, k, v, 0.3)
    w, out = linformer(q, k, v, 0.3, 24, np.random.default_rng(0))
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(w, exact_w, atol=tol)
    np.testing.assert_allclose(out, exact_out, atol=tol * 10)
    assert approx_error(exact_w, w)["mean_kl"] < tol


def test_linformer_identical_keys_in_a_group_are_exact():
    """Pooling a group of identical keys and values loses nothing (the ln|group| bias)."""
    rng = np.random.default_rng(3)
    n, r = 23, 4  # groups of 5 and 6: unequal sizes matter
    group, _ = linformer_projection(n, r, np.random.default_rng(9))
    base_k, base_v = rng.standard_normal((r, 8)), rng.standard_normal((r, 3))
    k, v = base_k[group][None], base_v[group][None]  # keys equal within each group
    q = rng.standard_normal((1, 7, 8))
    exact_w, exact_out = attention_weights(q, k, v, 0.4)
    w, out = linformer(q, k, v, 0.4, r, np.random.default_rng(9))
    np.testing.assert_allclose(w, exact_w, atol=1e-12)
    np.testing.assert_allclose(out, exact_out, atol=1e-12)


def test_linformer_error_shrinks_as_rank_grows():
    q, k, v = make(4, 64, 128, 16, 16, seed=11)
    exact_w, _ = attention_weights(q, k, v, 0.25)
    kl = [
        approx_error(exact_w, linformer(q, k, v, 0.25, r, np.random.default_rng(5))[0])["mean_kl"]
        for r in (8, 32, 96, 128)
    ]
    assert kl[0] > kl[1] > kl[2] > kl[3]
    assert kl[3] < 1e-12


# ------------------------------------------------------------------ Performer


@pytest.mark.parametrize("orthogonal", [True, False])
def test_performer_error_shrinks_as_features_grow(orthogonal):
    q, k, v = make(2, 64, 64, 16, 8, seed=12, mult=0.3)
    exact_w, _ = attention_weights(q, k, v, 0.25)
    errs = [
        approx_error(exact_w, performer(q, k, v, 0.25, m, np.random.default_rng(6), orthogonal=orthogonal)[0])
        for m in (16, 256, 4096)
    ]
    kl = [e["mean_kl"] for e in errs]
    assert kl[0] > 2 * kl[1] > 4 * kl[2]
    assert errs[0]["max_abs_error"] > errs[2]["max_abs_error"]


def test_performer_features_orthogonal_blocks():
    w = performer_features(8, 20, np.random.default_rng(0))
    assert w.shape == (20, 8)
    block = w[:8] / np.linalg.norm(w[:8], axis=1, keepdims=True)
    np.testing.assert_allclose(block @ block.T, np.eye(8), atol=1e-12)
    g = performer_features(8, 20, np.random.default_rng(0), orthogonal=False)
    assert g.shape == (20, 8)


def test_performer_orthogonal_blocks_are_uniformly_random():
    """Each row of a block must be a uniformly random direction (Haar QR).

    Householder QR without the sign fix biases the first rows (their first
    coordinate averages about -0.2 for d = 16), and the estimator with them.
    """
    d, blocks = 16, 4000
    w = performer_features(d, d * blocks, np.random.default_rng(1))
    u = w / np.linalg.norm(w, axis=1, keepdims=True)
    for row in (0, 1, d - 1):  # standard error of each mean: 0.25 / sqrt(4000) = 0.004
        assert np.abs(u[row::d].mean(axis=0)).max() < 0.03


@pytest.mark.parametrize("orthogonal", [True, False])
def test_performer_is_unbiased_for_the_softmax_kernel(orthogonal):
    """The mean of phi(x).phi(y) over many features approaches exp(x.y)."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(16) * 0.2, rng.standard_normal(16) * 0.2
    w = performer_features(16, 32_768, np.random.default_rng(1), orthogonal=orthogonal)
    est = np.mean(np.exp(w @ x - x @ x / 2) * np.exp(w @ y - y @ y / 2))
    assert abs(est / np.exp(x @ y) - 1) < 0.01


def test_performer_huge_scores_stay_finite():
    q, k, v = make(1, 10, 12, 8, 4, np.float32, mult=20.0)
    w, out = performer(q, k, v, 1.0, 32, np.random.default_rng(0))
    assert np.isfinite(w).all() and np.isfinite(out).all()
    assert np.all((np.abs(w.sum(-1) - 1) < 1e-4) | (w.sum(-1) == 0))


# ------------------------------------------------------------------ approx_error


def test_approx_error_identical_is_zero_and_known_value():
    p = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    assert approx_error(p, p) == {"max_abs_error": 0.0, "mean_kl": 0.0}
    a = np.array([[0.25, 0.75, 0.0], [0.2, 0.3, 0.5]])
    err = approx_error(p, a)
    want_kl = (0.5 * np.log(0.5 / 0.25) + 0.5 * np.log(0.5 / 0.75)) / 2  # nats, mean over 2 rows
    assert err["max_abs_error"] == pytest.approx(0.25)
    assert err["mean_kl"] == pytest.approx(want_kl)


def test_approx_error_guards_zeros_and_fully_masked_rows():
    p = np.array([[1.0, 0.0], [0.0, 0.0], [0.5, 0.5]], dtype=np.float32)
    a = np.array([[0.0, 1.0], [0.5, 0.5], [0.5, 0.5]], dtype=np.float32)  # misses all mass in row 0
    err = approx_error(p, a)
    assert np.isfinite(err["mean_kl"]) and err["mean_kl"] > 300  # ~708 nats / 2 live rows
    assert err["max_abs_error"] == 1.0
    json.dumps(err, allow_nan=False)  # strict JSON
    assert all(type(x) is float for x in err.values())


def test_approx_error_blocks_and_shapes():
    rng = np.random.default_rng(0)
    p = rng.random((3, 50, 7))
    p /= p.sum(-1, keepdims=True)
    a = rng.random((3, 50, 7))
    a /= a.sum(-1, keepdims=True)
    assert approx_error(p, a, block_rows=7) == pytest.approx(approx_error(p, a))
    with pytest.raises(DataError):
        approx_error(p, a[:, :3])
    assert approx_error(np.zeros((0, 4)), np.zeros((0, 4))) == {"max_abs_error": 0.0, "mean_kl": 0.0}
