"""Tests of attncli.core.kernels against a naive float64 reference.

No test depends on wall-clock time; memory is checked with tracemalloc.
"""

from __future__ import annotations

import contextlib
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attncli.core import kernels, mkl, ops
from attncli.core.attention import softmax
from attncli.core.kernels import attention_outputs, attention_weights
from attncli.errors import DataError
from tests.tolerance import U32, assert_within, gamma, softmax_bound, softmax_sum_bound

F32_TOL = 2e-6  # max |error| / max |reference|, float32 (scores of moderate size)
F64_TOL = 1e-12


def reference(q, k, v, scale, causal=False):
    """Naive float64 attention: ([h, m, n] weights, [h, m, d_v] outputs)."""
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> ([h, m, n], [h, m, d_v])
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    s = q @ k.transpose(0, 2, 1) * scale
    m, n = s.shape[-2:]
    if causal:
        s = np.where(np.arange(n)[None, :] > np.arange(m)[:, None], -np.inf, s)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w /= w.sum(axis=-1, keepdims=True)
    return w, w @ v


def rel_err(got, want):
    """max |got - want| / max |want|."""
    want = np.asarray(want, dtype=np.float64)
    return float(np.abs(np.asarray(got, dtype=np.float64) - want).max() / max(np.abs(want).max(), 1e-300))


def make(h, m, n, dk, dv, dtype, seed=0, q_mult=1.0):
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((h, m, dk)) * q_mult).astype(dtype)
    k = rng.standard_normal((h, n, dk)).astype(dtype)
    v = rng.standard_normal((h, n, dv)).astype(dtype)
    return q, k, v


@pytest.fixture(params=["numpy", "mkl"])
def force_threads(request, monkeypatch):
    """Make even small inputs take the threaded, BLAS-limited, key-tiled path, with each backend.

    Without threadpoolctl installed, a no-op limiter stands in for it, so that
    the blocks still really run on several threads. The "mkl" run is skipped
    where the optional `mkl` package is not installed.
    """
    if request.param == "numpy":
        monkeypatch.setattr(kernels, "_fast_ops", lambda: None)
    elif mkl.load() is None:
        pytest.skip("the optional mkl package is not installed")
    monkeypatch.setattr(kernels, "_PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(kernels, "_BLAS_LIMIT_MIN_WORK", 0)
    monkeypatch.setattr(kernels, "_KEY_TILE_BYTES", 1)  # key tiles of 8: many tiles, ragged last one
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        monkeypatch.setattr(kernels, "_blas_limiter", contextlib.nullcontext)


@pytest.fixture(params=["e", "2"])
def exp_base(request, monkeypatch):
    """The float32 outputs path in both bases, whichever this CPU's NumPy makes the faster (ops.base2)."""
    monkeypatch.setattr(ops.NumPyOps, "base2", lambda self, dtype: request.param == "2" and dtype == np.float32)


SHAPES = [
    # h, m, n, d_k, d_v
    (1, 1, 1, 4, 4),
    (2, 7, 7, 8, 8),
    (3, 50, 50, 16, 8),  # d_v != d_k
    (2, 37, 91, 16, 16),  # cross-attention, m < n
    (2, 91, 37, 16, 16),  # cross-attention, m > n
    (1, 300, 300, 64, 64),
]


# ---------------------------------------------------------------- softmax in place (the kernels' blocks)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_matches_reference_in_place(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 5, 9)) * 10).astype(dtype)
    want = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    x_before = x.copy()
    got = softmax(x, in_place=True)
    assert got is x
    assert got.dtype == dtype
    if dtype == np.float32:  # each weight within γₙ + 5u of its exact value, relatively (tests/tolerance.py)
        assert_within(got, want, softmax_bound(want, x_before))
        assert_within(got.sum(-1), 1, softmax_sum_bound(x.shape[-1]))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
        np.testing.assert_allclose(got.sum(-1), 1, rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_masked_cells_zero_and_fully_masked_rows_zero(dtype):
    x = np.arange(12, dtype=dtype).reshape(3, 4)
    masked = np.array([[False, True, False, True], [True, True, True, True], [False, False, False, False]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no invalid-value / divide warnings
        softmax(x, masked, in_place=True)
    assert x.dtype == dtype
    assert np.all(x[masked] == 0)
    assert np.all(x[1] == 0) and not np.isnan(x).any()
    u = U32 if dtype == np.float32 else 2.0**-53
    assert_within(x[[0, 2]].sum(-1), 1, softmax_sum_bound(4, u))
    w = np.exp(np.array([0.0, 2.0]) - 2.0)
    assert_within(x[0, [0, 2]], w / w.sum(), softmax_bound(w / w.sum(), u))


def test_softmax_broadcast_mask_huge_scores_and_empty():
    x = np.array([[1e30, 1e30, -1e30], [3.0, 1.0, 2.0]], dtype=np.float32)
    softmax(x, masked=np.array([False, False, True]), in_place=True)  # broadcast over rows
    np.testing.assert_array_equal(x[0], np.array([0.5, 0.5, 0], np.float32))
    assert x[1, 2] == 0 and x.dtype == np.float32
    e = np.empty((2, 0), np.float32)
    assert softmax(e, in_place=True) is e


# ---------------------------------------------------------------- agreement


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
def test_agreement_with_reference(shape, dtype, causal, force_threads, exp_base):
    h, m, n, dk, dv = shape
    q, k, v = make(h, m, n, dk, dv, dtype)
    scale = 1 / np.sqrt(dk)
    w_ref, o_ref = reference(q, k, v, scale, causal)
    tol = F32_TOL if dtype == np.float32 else F64_TOL
    for block in (1, 16, 256):  # 16 divides none of the m above except by luck
        w, o = attention_weights(q, k, v, scale, causal, block=block)
        o2 = attention_outputs(q, k, v, scale, causal, block=block)
        assert w.shape == (h, m, n) and o.shape == o2.shape == (h, m, dv)
        assert w.dtype == o.dtype == o2.dtype == dtype
        assert rel_err(w, w_ref) <= tol
        assert rel_err(o, o_ref) <= tol
        assert rel_err(o2, o_ref) <= tol


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_agreement_without_forcing_threads(dtype):
    """The default, untouched thresholds: small calls run serially."""
    q, k, v = make(4, 129, 130, 32, 16, dtype, seed=3)
    w_ref, o_ref = reference(q, k, v, 0.2)
    tol = F32_TOL if dtype == np.float32 else F64_TOL
    w, o = attention_weights(q, k, v, 0.2)
    assert rel_err(w, w_ref) <= tol and rel_err(o, o_ref) <= tol
    assert rel_err(attention_outputs(q, k, v, 0.2), o_ref) <= tol


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("q_mult", [30.0, 1000.0])
def test_large_scores_take_the_shifted_path(dtype, causal, q_mult, force_threads, exp_base):
    """Scores far beyond exp's range: the row maxima must be subtracted."""
    q, k, v = make(2, 40, 60, 16, 8, dtype, seed=5, q_mult=q_mult)
    w_ref, o_ref = reference(q, k, v, 1.0, causal)
    w, o = attention_weights(q, k, v, 1.0, causal, block=7)
    o2 = attention_outputs(q, k, v, 1.0, causal, block=7)
    assert np.isfinite(w).all() and np.isfinite(o).all() and np.isfinite(o2).all()
    # float32 scores of size ~1e3-1e4 carry absolute errors ~1e-4..1e-3 in the
    # exponent: compare at the precision the inputs allow.
    tol = 1e-3 if dtype == np.float32 else 1e-9
    assert rel_err(w, w_ref) <= tol and rel_err(o, o_ref) <= tol and rel_err(o2, o_ref) <= tol
    assert_within(w.sum(-1), 1, softmax_sum_bound(w.shape[-1], U32 if dtype == np.float32 else 2.0**-53))


@pytest.mark.parametrize("v_scale", [1e-30, 1e30])
def test_extreme_value_magnitudes_float32(v_scale, force_threads, exp_base):
    """Tiny or huge values must not under/overflow in the unshifted fast path."""
    q, k, v = make(1, 30, 50, 8, 4, np.float64, seed=6)
    q = q * 3.0  # row maxima around +-10: inside the fast window for V = 1
    v = v * v_scale
    _, o_ref = reference(q, k, v, 1.0)
    q32, k32, v32 = (x.astype(np.float32) for x in (q, k, v))
    o = attention_outputs(q32, k32, v32, 1.0, block=8)
    assert o.dtype == np.float32 and np.isfinite(o).all()
    assert rel_err(o, o_ref) <= 1e-5


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "q_mult,bases",
    [(1.0, {"exp2"}), (9.0, {"exp2", "exp"}), (30.0, {"exp"})],  # both heads bounded; one of two; none
)
def test_base_two_on_the_float32_outputs_path_of_the_bounded_heads(q_mult, bases, causal, monkeypatch):
    """exp2 of the scores times log2 e is exp of the scores: within float32's bound of the reference.

    Only a head whose every score lies inside the shift-free window takes exp2 (its results are then normal
    numbers: SVML's exp2 is 10-300x slower on -inf, on underflow and on subnormal results), so a causal mask
    is applied after it (zeros), never before it (-inf).

    Each score is a d_k-term dot product with the scale and log2 e folded into the keys (two roundings more),
    so it moves by at most γ(d_k + 2) Σ|q_l k_l| scale; exp2 adds its ulp and the row sum and product γₙ and
    a few u. A row's weights then move by at most 2 max |δs| in total (tests/tolerance.py, weights_bound),
    and the output by that times max |v|, plus the rounding of the sums, relative to max |v| too."""
    calls = []

    class Counting(ops.NumPyOps):
        def base2(self, dtype):
            return dtype == np.float32

        def exp(self, x):
            calls.append("exp")
            super().exp(x)

        def exp2(self, x):
            calls.append("exp2")
            assert x.min() >= -126 and x.max() < 128  # 2**x normal: the fast path of exp2
            super().exp2(x)

    monkeypatch.setattr(kernels, "_fast_ops", Counting)
    monkeypatch.setattr(kernels, "_BLAS_LIMIT_MIN_WORK", 0)
    q, k, v = make(2, 40, 60, 16, 8, np.float32, seed=4, q_mult=q_mult)
    _, o_ref = reference(q, k, v, 0.25, causal)
    o = attention_outputs(q, k, v, 0.25, causal, block=16)
    assert set(calls) == bases
    q64, k64 = np.abs(q.astype(np.float64)), np.abs(k.astype(np.float64))
    magnitude = (q64 @ k64.transpose(0, 2, 1)).max(axis=2, keepdims=True) * 0.25  # [h, m, 1]
    v_max = np.abs(v).max(axis=(1, 2)).astype(np.float64)[:, None, None]  # [h, 1, 1]
    assert_within(o, o_ref, (2 * gamma(16 + 3) * magnitude + gamma(60) + 6 * U32) * v_max, "base 2")
    calls.clear()
    attention_weights(q, k, v, 0.25, causal, block=16)
    attention_outputs(q.astype(np.float64), k, v, 0.25, causal, block=16)
    assert set(calls) == {"exp"}


# ---------------------------------------------------------------- masks, dtype


@pytest.mark.parametrize("m,n", [(20, 20), (12, 30), (30, 12)])
def test_causal_zeros_exact_and_rows_sum_to_one(m, n, force_threads):
    q, k, v = make(2, m, n, 8, 8, np.float32, seed=2)
    w, _ = attention_weights(q, k, v, 0.5, causal=True, block=5)
    i, j = np.indices((m, n))
    assert np.all(w[:, j > i] == 0)
    assert np.all(w[:, j <= i] > 0)
    assert_within(w.sum(-1), 1, softmax_sum_bound(n))


def test_dtype_preservation_and_promotion():
    q, k, v = make(1, 5, 6, 4, 3, np.float32)
    for fn in (lambda *a: attention_weights(*a)[0], lambda *a: attention_weights(*a)[1], attention_outputs):
        assert fn(q, k, v, 0.5).dtype == np.float32
        assert fn(q, k, v, np.float64(0.5)).dtype == np.float32  # a NumPy float64 scale does not promote
        assert fn(q.astype(np.float64), k, v, 0.5).dtype == np.float64
        assert fn(q.astype(np.int64), k.astype(np.int64), v.astype(np.int64), 0.5).dtype == np.float64
        assert fn(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16), 0.5).dtype == np.float32


def test_two_dimensional_inputs_are_one_head():
    q, k, v = make(1, 9, 11, 4, 5, np.float64)
    w3, o3 = attention_weights(q, k, v, 0.5)
    w2, o2 = attention_weights(q[0], k[0], v[0], 0.5)
    assert w2.shape == (9, 11) and o2.shape == (9, 5)
    np.testing.assert_array_equal(w2, w3[0])
    np.testing.assert_array_equal(o2, o3[0])
    np.testing.assert_array_equal(attention_outputs(q[0], k[0], v[0], 0.5), attention_outputs(q, k, v, 0.5)[0])


def test_empty_inputs():
    w, o = attention_weights(np.zeros((2, 0, 4)), np.zeros((2, 3, 4)), np.zeros((2, 3, 5)), 1.0)
    assert w.shape == (2, 0, 3) and o.shape == (2, 0, 5)
    w, o = attention_weights(np.ones((1, 3, 4)), np.zeros((1, 0, 4)), np.zeros((1, 0, 5)), 1.0)
    assert w.shape == (1, 3, 0) and o.shape == (1, 3, 5) and np.all(o == 0)


@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 3, 4), (2, 5, 4), (2, 6, 4)),
        ((2, 3, 4), (2, 5, 3), (2, 5, 4)),
        ((2, 3, 4), (3, 5, 4), (3, 5, 4)),
        ((3, 4), (1, 5, 4), (1, 5, 4)),
    ],
)
def test_shape_errors(shapes):
    q, k, v = (np.zeros(s) for s in shapes)
    with pytest.raises(DataError):
        attention_outputs(q, k, v, 1.0)
    with pytest.raises(DataError):
        attention_weights(q, k, v, 1.0)


def test_bad_block_or_threads():
    q = np.zeros((1, 2, 2))
    with pytest.raises(DataError):
        attention_outputs(q, q, q, 1.0, block=0)
    with pytest.raises(DataError):
        attention_outputs(q, q, q, 1.0, threads=0)


# ---------------------------------------------------------------- threads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
def test_threads_1_and_2_identical(dtype, causal, force_threads):
    q, k, v = make(3, 203, 190, 16, 12, dtype, seed=4)
    o1 = attention_outputs(q, k, v, 0.25, causal, block=32, threads=1)
    o2 = attention_outputs(q, k, v, 0.25, causal, block=32, threads=2)
    o3 = attention_outputs(q, k, v, 0.25, causal, block=32, threads=3)
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(o1, o3)
    w1, p1 = attention_weights(q, k, v, 0.25, causal, block=32, threads=1)
    w2, p2 = attention_weights(q, k, v, 0.25, causal, block=32, threads=2)
    np.testing.assert_array_equal(w1, w2)
    np.testing.assert_array_equal(p1, p2)


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_blocks_really_run_on_threads(monkeypatch, force_threads, threads):
    seen = []
    real_run = kernels._run
    monkeypatch.setattr(kernels, "_run", lambda w, t, k: seen.append(k) or real_run(w, t, k))
    q, k, v = make(2, 40, 40, 8, 8, np.float64)
    attention_outputs(q, k, v, 0.5, block=16, threads=threads)
    attention_weights(q, k, v, 0.5, block=16, threads=threads)
    assert seen == [min(threads, 6)] * 2  # 2 heads x 3 blocks = 6 tasks


def test_threads_identical_at_default_thresholds():
    """Big enough for the real threaded path (and the real BLAS limiter)."""
    q, k, v = make(2, 600, 600, 64, 64, np.float32, seed=8)
    o1 = attention_outputs(q, k, v, 0.125, threads=1)
    o2 = attention_outputs(q, k, v, 0.125, threads=2)
    np.testing.assert_array_equal(o1, o2)
    assert rel_err(o2, reference(q, k, v, 0.125)[1]) <= F32_TOL


@pytest.mark.parametrize("env", [None, "1"])
def test_without_threadpoolctl(monkeypatch, force_threads, env):
    """No BLAS limiter: still correct, with one worker or, when the env pins BLAS, several."""
    monkeypatch.setattr(kernels, "_blas_limiter", lambda: None)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    if env:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", env)
    q, k, v = make(2, 70, 80, 8, 8, np.float64, seed=9)
    _, o_ref = reference(q, k, v, 0.3, True)
    assert rel_err(attention_outputs(q, k, v, 0.3, True, block=9, threads=2), o_ref) <= F64_TOL


def test_blas_limit_is_shared_and_restored(force_threads):
    """Concurrent calls: BLAS is limited while any runs, restored after all."""
    import threadpoolctl  # a dependency of attncli

    def blas_threads():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    seen = []
    outer = kernels._blas_limiter()
    with outer:
        seen.append(blas_threads())
        inner = kernels._blas_limiter()
        with inner:
            seen.append(blas_threads())
        seen.append(blas_threads())  # still limited: the outer caller is inside
    assert all(t == 1 for ts in seen for t in ts)
    assert blas_threads() == before
    q, k, v = make(2, 64, 64, 8, 8, np.float64)
    import threading as th

    outs = [None, None]

    def call(i):
        outs[i] = attention_outputs(q, k, v, 0.3, block=8, threads=2)

    workers = [th.Thread(target=call, args=(i,)) for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    np.testing.assert_array_equal(outs[0], outs[1])
    assert blas_threads() == before


def test_worker_exception_reaches_the_caller(monkeypatch, force_threads):
    q, k, v = make(2, 64, 64, 8, 8, np.float64)

    class Boom(ops.NumPyOps):
        def exp(self, x):
            raise FloatingPointError("boom")

    monkeypatch.setattr(kernels, "_fast_ops", Boom)
    with pytest.raises(FloatingPointError):
        attention_outputs(q, k, v, 0.3, block=8, threads=2)


# ---------------------------------------------------------------- memory


def _peak(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_outputs_never_hold_an_m_by_n_matrix():
    n, d = 4096, 16
    q, k, v = make(1, n, n, d, d, np.float32, seed=7)
    full = n * n * 4  # one float32 n x n matrix: 64 MiB
    peak = _peak(lambda: attention_outputs(q, k, v, 0.25, block=128, threads=2))
    # 2 threads x [128, n] float32 scratch = 4 MiB, plus O(n d) copies
    assert peak < full / 8, peak
    assert peak < 2 * 128 * n * 4 + 8 * n * d * 4 + (1 << 20)


def test_weights_materialised_once():
    n, d = 2048, 16
    q, k, v = make(1, n, n, d, d, np.float32, seed=7)
    full = n * n * 4
    peak = _peak(lambda: attention_weights(q, k, v, 0.25, threads=2))
    assert full <= peak < full + full / 8, peak


# ---------------------------------------------------------------- property


@settings(deadline=None, max_examples=60)
@given(
    h=st.integers(1, 3),
    m=st.integers(1, 40),
    n=st.integers(1, 40),
    dk=st.integers(1, 9),
    dv=st.integers(1, 9),
    block=st.integers(1, 50),
    causal=st.booleans(),
    threads=st.integers(1, 3),
    tile_bytes=st.sampled_from([1, 64, 1 << 20]),
    seed=st.integers(0, 2**31),
)
def test_property_matches_reference(h, m, n, dk, dv, block, causal, threads, tile_bytes, seed):
    old = kernels._PARALLEL_MIN_WORK, kernels._BLAS_LIMIT_MIN_WORK, kernels._KEY_TILE_BYTES
    kernels._PARALLEL_MIN_WORK = kernels._BLAS_LIMIT_MIN_WORK = 0
    kernels._KEY_TILE_BYTES = tile_bytes
    try:
        q, k, v = make(h, m, n, dk, dv, np.float64, seed=seed)
        w_ref, o_ref = reference(q, k, v, 0.7, causal)
        w, o = attention_weights(q, k, v, 0.7, causal, block=block, threads=threads)
        o2 = attention_outputs(q, k, v, 0.7, causal, block=block, threads=threads)
    finally:
        kernels._PARALLEL_MIN_WORK, kernels._BLAS_LIMIT_MIN_WORK, kernels._KEY_TILE_BYTES = old
    assert rel_err(w, w_ref) <= F64_TOL
    assert rel_err(o, o_ref) <= F64_TOL
    assert rel_err(o2, o_ref) <= F64_TOL
    np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-12)
