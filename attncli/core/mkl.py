"""Intel MKL's matrix product and exp for the blocked kernels, when the optional `mkl` package is installed.

`pip install "attncli[mkl]"` brings Intel's oneAPI Math Kernel Library (the `mkl` wheel, ~220 MB; x86-64 only).
`load()` finds its `libmkl_rt` through the package's file list and binds, with ctypes (which releases the GIL
during each call, so the kernels' two threads still run side by side):

- `cblas_sgemm` / `cblas_dgemm`: `out = a @ b` (or `out += a @ b`) on row-major views (but for one column);
- `vmsExp` / `vmdExp` in high-accuracy mode (VML_HA, at most 1 ulp): `exp` in place.

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

import ctypes
import threading
from typing import Any

import numpy as np

from attncli.core.ops import NumPyOps

__all__ = ["load"]

_ROW_MAJOR, _NO_TRANS = 101, 111  # CBLAS_LAYOUT, CBLAS_TRANSPOSE
_SEQUENTIAL = 1  # MKL_THREADING_SEQUENTIAL
_VML_HA = 0x2  # high-accuracy vector maths: <= 1 ulp

_loaded: Any = None  # the Mkl once loaded, False when it cannot be
_lock = threading.Lock()


class Mkl(NumPyOps):
    """MKL's gemm and exp on NumPy arrays (see the module doc); NumPy for anything they cannot take."""

    def __init__(self, lib: ctypes.CDLL):
        ptr, i32, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        self._gemm, self._exp = {}, {}
        for dt, scalar, gemm, exp in (
            (np.dtype(np.float32), ctypes.c_float, lib.cblas_sgemm, lib.vmsExp),
            (np.dtype(np.float64), ctypes.c_double, lib.cblas_dgemm, lib.vmdExp),
        ):
            gemm.argtypes = [i32, i32, i32, i32, i32, i32, scalar, ptr, i32, ptr, i32, scalar, ptr, i32]
            exp.argtypes = [i32, ptr, ptr, i64]
            gemm.restype = exp.restype = None
            self._gemm[dt], self._exp[dt] = gemm, exp

    def matmul(self, a, b, out, part=None):
        """out = a @ b, or out += a @ b when `part` (NumPy's scratch for a @ b) is given.

        A product with one column (the row sums) stays with NumPy: OpenBLAS's gemv took 0.26 ns a cell out of
        cache against 0.29 for MKL's gemv, and 0.08 in cache against 0.16 for MKL's gemm."""
        # [m, k], [k, n], [m, n] -> None (out written)
        gemm = self._gemm.get(out.dtype)
        lda, ldb, ldc = _lead(a), _lead(b), _lead(out)
        if (
            gemm is None
            or lda is None
            or ldb is None
            or ldc is None
            or b.shape[1] == 1
            or not a.dtype == b.dtype == out.dtype
        ):
            super().matmul(a, b, out, part)
            return
        (m, k), n = a.shape, b.shape[1]
        beta = 0.0 if part is None else 1.0
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, m, n, k, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb, beta,
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
    from importlib import metadata  # late: start-up (only when MKL is looked for)

    try:
        files = metadata.distribution("mkl").files or []
    except metadata.PackageNotFoundError:
        return None
    libs = [f for f in files if f.name.startswith("libmkl_rt.so")]
    if not libs:
        return None
    try:
        lib = ctypes.CDLL(str(libs[0].locate()))
        if lib.MKL_Set_Threading_Layer(_SEQUENTIAL) != _SEQUENTIAL:
            return None
        return Mkl(lib)
    except (OSError, AttributeError):  # a library that does not load, or lacks a function
        return None
