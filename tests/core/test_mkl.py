"""Tests of attncli.core.mkl: the optional MKL backend of the blocked kernels.

Where the `mkl` package is not installed, load() must give None (the kernels then use NumPy, which
tests/core/test_kernels.py covers); the tests of MKL's own results are skipped there.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from attncli.core import kernels, mkl, ops
from tests.tolerance import U32, assert_within, matmul_bound


@pytest.fixture
def fast():
    got = mkl.load()
    if got is None:
        pytest.skip("the optional mkl package is not installed")
    return got


def test_load_without_the_package_is_none(tmp_path, monkeypatch):
    monkeypatch.setattr(mkl, "_loaded", None)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert mkl.load() is None
    monkeypatch.setattr(sys, "path", [])
    assert mkl.load() is None  # remembered, not looked up again
    assert mkl._loaded is False


@pytest.mark.parametrize(
    "shape,strides,want",
    [
        ((3, 4), (16, 4), 4),  # C-contiguous float32
        ((3, 4), (40, 4), 10),  # rows of a wider matrix
        ((5, 1), (4, 4), 1),  # a column
        ((1, 4), (999, 4), 4),  # one row: its stride does not matter
        ((3, 4), (4, 12), None),  # column-major
        ((3, 4), (16, 8), None),  # every other column
        ((3, 4), (-16, 4), None),  # rows reversed
        ((3, 4), (8, 4), None),  # overlapping rows
        ((0, 4), (16, 4), None),  # empty
    ],
)
def test_lead(shape, strides, want):
    x = np.lib.stride_tricks.as_strided(np.zeros(64, np.float32)[32:], shape, strides)
    assert mkl._lead(x) == want


def test_layout_reads_a_transposed_view_as_blas_transposed():
    x = np.zeros((3, 5), np.float32)
    assert mkl._layout(x) == (mkl._NO_TRANS, 5)
    assert mkl._layout(x.T) == (mkl._TRANS, 5)  # a weight's .T: stored rows of 5
    assert mkl._layout(x[:, 1:4].T) == (mkl._TRANS, 5)
    assert mkl._layout(x[:, ::2]) is None and mkl._layout(x[:, ::2].T) is None


def test_library_is_found_through_the_record_of_the_mkl_package(tmp_path, monkeypatch):
    site = tmp_path / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "gone"), str(site)])
    assert mkl._library() is None
    (site / "mkl_service-2.4.dist-info").mkdir()  # another package
    assert mkl._library() is None
    info = site / "mkl-2026.2.0.dist-info"
    info.mkdir()
    assert mkl._library() is None  # no RECORD
    (info / "RECORD").write_text("mkl-2026.2.0.dist-info/METADATA,sha256=x,1\n../../libmkl_rt.so.3,sha256=y,2\n")
    assert mkl._library() == str(tmp_path / "lib" / "libmkl_rt.so.3")


def unit_roundoff(dtype) -> float:
    return U32 if dtype == np.float32 else 2.0**-53


def product_bound(a, b, dtype, added=0.0) -> np.ndarray:  # [m, k], [k, n], [m, n] -> [m, n]
    """How far a product in `dtype` may be from the float64 one: γₖ (|a| @ |b|), and one rounding more of the
    result `added` to what `out` held (u |added|); twice for float64, whose reference rounds as much."""
    u = unit_roundoff(dtype)
    return (2 if dtype == np.float64 else 1) * (matmul_bound(a, b, u) + u * added)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
def test_matmul_of_transposed_views_agrees_with_numpy(fast, dtype, ta, tb):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 7)).astype(dtype)
    b = rng.standard_normal((7, 5)).astype(dtype)
    a_, b_ = (a.T.copy().T if ta else a), (b.T.copy().T if tb else b)  # column-major: BLAS reads their transposes
    out = np.empty((9, 5), dtype)
    fast.matmul(a_, b_, out)
    assert_within(out, a.astype(np.float64) @ b, product_bound(a, b, dtype), "transposed views")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cdf_norm_within_one_ulp(fast, dtype):
    x = np.concatenate([np.linspace(-12, 9, 20001), [0.0, -1e-30, 40.0]]).astype(dtype)
    want = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    out = np.empty_like(x)
    fast.cdf_norm(x, out)
    ulp = np.spacing(want.astype(dtype)).astype(np.float64)
    # 1 ulp (VML_HA) of the exact value. In float64 the reference is off itself: glibc documents up to 5 ulp for
    # erfc, and its argument -x/√2 carries two roundings (√2's and the division's, 2u relative), which move
    # erfc(z) by (2z² + 1) 2u relative: up to 2(x² + 1) ulp
    slack = 0.0 if dtype == np.float32 else 5.0 + 2 * (x.astype(np.float64) ** 2 + 1)
    assert float(np.max(np.abs(out - want) / ulp - slack)) <= 1.0
    fast.cdf_norm(x, x)  # in place
    np.testing.assert_array_equal(x, out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 5, 3), (33, 64, 1), (16, 9, 40)])
def test_matmul_agrees_with_numpy(fast, dtype, accumulate, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    big = rng.standard_normal((m, k + 3)).astype(dtype)
    a = big[:, 1 : k + 1]  # rows of a wider matrix: lda > k
    b = rng.standard_normal((k, n)).astype(dtype)
    start = rng.standard_normal((m, n)).astype(dtype)
    want = a.astype(np.float64) @ b + (start if accumulate else 0)
    for backend in (fast, ops.NUMPY_OPS):
        out = start.copy()
        backend.matmul(a, b, out, np.empty_like(out) if accumulate else None)
        added = product_bound(a, b, dtype, np.abs(want)) if accumulate else product_bound(a, b, dtype)
        assert_within(out, want, added, "matmul")


def test_matmul_falls_back_to_numpy_for_what_blas_cannot_take(fast):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 5))
    b = rng.standard_normal((5, 4))
    for a_, b_, dt in [(a[:, ::-1], b, np.float64), (a, b[:, ::-1], np.float64), (a, b, np.float16)]:
        out = np.empty((6, 4), dt)
        fast.matmul(a_.astype(dt, copy=False), b_.astype(dt, copy=False), out)
        np.testing.assert_allclose(out, (a_ @ b_).astype(dt), rtol=1e-2 if dt == np.float16 else 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_in_place_within_one_ulp(fast, dtype):
    x = np.linspace(-80, 80, 10001).astype(dtype)
    want = np.exp(x.astype(np.float64))
    fast.exp(x)
    ulp = np.spacing(want.astype(dtype)).astype(np.float64)
    assert float(np.max(np.abs(x - want) / ulp)) <= 1.0
    tiny = np.finfo(dtype).tiny
    edges = np.array([np.log(tiny) - 3, np.log(tiny) - 20, np.inf, -np.inf, np.nan], dtype)  # subnormal, 0, specials
    want = np.exp(edges.astype(np.float64)).astype(dtype)
    fast.exp(edges)
    np.testing.assert_array_equal(edges, want)
    strided = np.linspace(-5, 5, 20).astype(dtype)[::2]  # not contiguous: NumPy's exp
    want = np.exp(strided.astype(np.float64))
    fast.exp(strided)
    np.testing.assert_allclose(strided, want, rtol=1e-6)


def test_kernels_use_it_for_big_inputs_only(fast, monkeypatch):
    used = []
    monkeypatch.setattr(kernels, "_fast_ops", lambda: used.append(1) or fast)
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 8, 4)) for _ in range(3))
    kernels.attention_outputs(q, k, v, 0.5)  # 1 * 8 * 8 * 8 multiply-adds: NumPy
    assert used == []
    q, k, v = (rng.standard_normal((2, 300, 64)).astype(np.float32) for _ in range(3))
    kernels.attention_outputs(q, k, v, 0.125)
    assert used == [1]
