"""Intel MKL's matrix product, exp and normal CDF for the kernels and a model's forward, when the optional `mkl`
package is installed.

`pip install "attncli[mkl]"` brings Intel's oneAPI Math Kernel Library (the `mkl` wheel, ~220 MB; x86-64 only).
`load()` finds its `libmkl_rt` through the package's file list (its RECORD) and binds, with ctypes (which releases
the GIL during each call, so the kernels' two threads still run side by side):

- `cblas_sgemm` / `cblas_dgemm`: `out = a @ b` (or `out += a @ b`) on row-major views or transposes of them
  (a model's [d_out, d_in] weights read as W^T), but for one column;
- `vmsExp` / `vmdExp` in high-accuracy mode (VML_HA, at most 1 ulp): `exp` in place;
- `vmsCdfNorm` / `vmdCdfNorm` (VML_HA, at most 1 ulp; 0.75 in Intel's accuracy data): Φ(x), the exact GELU's
  x·Φ(x) in two passes (attncli.models.network.blocks) where NumPy, which has no erf, needs ~30.

MKL runs sequentially (its threading layer is set to SEQUENTIAL): the kernels bring their own threads. If the
process already uses this MKL with another threading layer, or anything is missing, `load()` gives None and the
kernels use NumPy (`attncli.core.ops`). Same interface as that one: `matmul(a, b, out, part)`
and `exp(x)`; an argument MKL cannot take as it is (not float32/float64, not unit-stride rows) goes to NumPy,
and so does `exp2`, which the kernels never ask MKL for: its `base2` is False (MKL's exp is fast in base e).

Measured one thread, float32, n = 2048, 12 heads, d 64, in cache-sized tiles (ns per score cell, CPU time):
scores 1.10 -> 0.92, exp 0.49 -> 0.24, weights x V 1.18 -> 1.03; a whole outputs-only pass 2.9 -> 2.3 (torch's
scaled_dot_product_attention, which uses MKL too: 2.33). The results agree with NumPy's to float rounding
(1e-7 relative), and, like the NumPy path, do not depend on the kernels' thread count: MKL's sequential code is
deterministic for the same inputs at the same alignment, and the kernels' scratch buffers are 64-byte aligned.
"""

from __future__ import annotations

import csv
import ctypes
import os
import sys
import threading
from typing import Any

import numpy as np

from attncli.core.ops import NumPyOps

__all__ = ["load"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS_LAYOUT, CBLAS_TRANSPOSE
_SEQUENTIAL = 1  # MKL_THREADING_SEQUENTIAL
_VML_HA = 0x2  # high-accuracy vector maths: <= 1 ulp

_loaded: Any = None  # the Mkl once loaded, False when it cannot be
_lock = threading.Lock()


class Mkl(NumPyOps):
    """MKL's gemm and exp on NumPy arrays (see the module doc); NumPy for anything they cannot take."""

    def __init__(self, lib: ctypes.CDLL):
        ptr, i32, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        self._gemm, self._exp, self._cdf = {}, {}, {}
        for dt, scalar, gemm, exp, cdf in (
            (np.dtype(np.float32), ctypes.c_float, lib.cblas_sgemm, lib.vmsExp, lib.vmsCdfNorm),
            (np.dtype(np.float64), ctypes.c_double, lib.cblas_dgemm, lib.vmdExp, lib.vmdCdfNorm),
        ):
            gemm.argtypes = [i32, i32, i32, i32, i32, i32, scalar, ptr, i32, ptr, i32, scalar, ptr, i32]
            exp.argtypes = cdf.argtypes = [i32, ptr, ptr, i64]
            gemm.restype = exp.restype = cdf.restype = None
            self._gemm[dt], self._exp[dt], self._cdf[dt] = gemm, exp, cdf

    def matmul(self, a, b, out, part=None):
        """out = a @ b, or out += a @ b when `part` (NumPy's scratch for a @ b) is given.

        A product with one column (the row sums) stays with NumPy: OpenBLAS's gemv took 0.26 ns a cell out of
        cache against 0.29 for MKL's gemv, and 0.08 in cache against 0.16 for MKL's gemm."""
        # [m, k], [k, n], [m, n] -> None (out written)
        gemm = self._gemm.get(out.dtype)
        la, lb, ldc = _layout(a), _layout(b), _lead(out)
        if (
            gemm is None
            or la is None
            or lb is None
            or ldc is None
            or b.shape[1] == 1
            or not a.dtype == b.dtype == out.dtype
        ):
            super().matmul(a, b, out, part)
            return
        (m, k), n = a.shape, b.shape[1]
        beta = 0.0 if part is None else 1.0
        gemm(_ROW_MAJOR, la[0], lb[0], m, n, k, 1.0, a.ctypes.data, la[1], b.ctypes.data, lb[1], beta,
             out.ctypes.data, ldc)  # fmt: skip

    def base2(self, dtype):
        """False: the kernels keep MKL's own exp (vmsExp, measured above) in base e."""
        # dtype -> bool
        return False

    def exp(self, x):
        """x = exp(x), in place."""
        # [...] -> None
        exp = self._exp.get(x.dtype)
        if exp is None or not x.flags.c_contiguous or x.size >= 1 << 31:
            super().exp(x)
        else:
            exp(x.size, x.ctypes.data, x.ctypes.data, _VML_HA)

    def cdf_norm(self, x, out):
        """out = Φ(x), the standard normal distribution function, within 1 ulp; x and out C-contiguous float32 or
        float64 arrays of one shape and dtype (out may be x)."""
        # [...], [...] -> None (out written)
        assert x.flags.c_contiguous and out.flags.c_contiguous and x.shape == out.shape and x.dtype == out.dtype
        self._cdf[x.dtype](x.size, x.ctypes.data, out.ctypes.data, _VML_HA)


def _layout(x):
    """(CBLAS_TRANSPOSE, leading dimension) with which BLAS reads a 2-D view: as it is when its rows are
    row-major (`_lead`), transposed when its transpose's are (a weight matrix's `.T`), or None (NumPy then)."""
    # [r, c] -> (int, int) | None
    ld = _lead(x)
    if ld is not None:
        return _NO_TRANS, ld
    ld = _lead(x.T) if x.ndim == 2 else None
    return None if ld is None else (_TRANS, ld)


def _lead(x):
    """The leading dimension of a 2-D row-major view (its row stride in elements), or None if BLAS cannot take it."""
    # [r, c] -> int | None
    size = x.dtype.itemsize
    if x.ndim != 2 or 0 in x.shape or (x.shape[1] > 1 and x.strides[1] != size):
        return None
    if x.shape[0] == 1:
        return max(1, x.shape[1])
    ld, rem = divmod(x.strides[0], size)
    return ld if rem == 0 and ld >= max(1, x.shape[1]) else None


def load():
    """The Mkl, or None when the `mkl` package is not installed or cannot run sequentially here (then: NumPy)."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = _open() or False
    return _loaded or None


def _open():
    # () -> Mkl | None
    path = _library()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        if lib.MKL_Set_Threading_Layer(_SEQUENTIAL) != _SEQUENTIAL:
            return None
        return Mkl(lib)
    except (OSError, AttributeError):  # a library that does not load, or lacks a function
        return None


def _library():
    """The `libmkl_rt` the `mkl` package installed, from the RECORD of the first `mkl-*.dist-info` on sys.path
    (where importlib.metadata finds it, without its ~17 ms import: a forward without the extra pays well under a
    millisecond for looking), or None."""
    # () -> str | None
    for place in sys.path:
        try:
            with os.scandir(place or ".") as entries:
                info = next(
                    (e.path for e in entries if e.name.startswith("mkl-") and e.name.endswith(".dist-info")), None
                )
            if info is None:
                continue
            with open(os.path.join(info, "RECORD"), newline="", encoding="utf-8") as f:
                libs = [r[0] for r in csv.reader(f) if r and os.path.basename(r[0]).startswith("libmkl_rt.so")]
        except OSError:  # a zip file, a directory that is gone, no RECORD
            continue
        return os.path.normpath(os.path.join(place or ".", libs[0])) if libs else None
    return None
