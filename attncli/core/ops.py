"""The matrix product and exp of the blocked kernels (attncli.core.kernels), with NumPy alone.

The interface every backend of the kernels has (attncli.core.mkl.Mkl is the other one):
`matmul(a, b, out, part=None)`, `exp(x)` and `exp2(x)`, all writing in place, and `base2(dtype)`: whether
the outputs-only kernel should take its exponentials in base 2 (`exp2` of the scores times log2 e, the
factor folded into the scale of the keys) because this backend's exp2 is the faster of the two.

    >>> import numpy as np
    >>> out = np.zeros((1, 1)); NUMPY_OPS.matmul(np.ones((1, 2)), np.ones((2, 1)), out); out
    array([[2.]])
    >>> NUMPY_OPS.matmul(np.ones((1, 2)), np.ones((2, 1)), out, np.empty((1, 1))); out  # out += a @ b
    array([[4.]])
    >>> x = np.float32([3.0]); NUMPY_OPS.exp2(x); x
    array([8.], dtype=float32)
    >>> NUMPY_OPS.base2(np.dtype(np.float64))  # float64 keeps exp, whatever the CPU
    False

NumPy's float32 exp2 is Intel's SVML where NumPy dispatches its AVX-512 (SKX) loops: 0.20-0.22 ns a value
in cache, within 1 ulp, against 0.36-0.45 ns and 2.4 ulp for its float32 exp (measured on a Xeon with
AVX-512, one thread, CPU time). Without AVX-512 the exp2 loop is the scalar one (1.6 ns against exp's 0.75 on
AVX2), so base 2 is taken only where `numpy.lib.introspect` (NumPy >= 2.0) names a SIMD target for it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["NUMPY_OPS", "NumPyOps"]


class NumPyOps:
    """The kernels' matrix product and exp with NumPy alone (the interface of attncli.core.mkl.Mkl)."""

    def __init__(self):
        self._base2: bool | None = None  # float32 exp2 dispatched to SIMD: looked up on first use

    def matmul(self, a, b, out, part=None):
        """out = a @ b, or out += a @ b through the scratch `part` (shaped like out)."""
        # [m, k], [k, n], [m, n] -> None (out written)
        if part is None:
            np.matmul(a, b, out=out)
        else:
            out += np.matmul(a, b, out=part)

    def exp(self, x):
        """x = exp(x), in place."""
        # [...] -> None
        np.exp(x, out=x)

    def exp2(self, x):
        """x = 2**x, in place."""
        # [...] -> None
        np.exp2(x, out=x)

    def base2(self, dtype):
        """True when exp2 is the faster exponential for `dtype` here: float32 with a SIMD exp2 loop (module doc)."""
        # dtype -> bool
        if dtype != np.float32:
            return False
        if self._base2 is None:
            self._base2 = _simd_exp2_float32()
        return self._base2


def _simd_exp2_float32():
    """Whether NumPy runs float32 exp2 through a SIMD loop on this CPU (False when NumPy cannot say)."""
    # () -> bool
    try:
        from numpy.lib import introspect  # late: optional (numpy.lib.introspect, NumPy >= 2.0 only)
    except ImportError:
        return False
    loop = introspect.opt_func_info(func_name="^exp2$", signature="^float32$").get("exp2", {})
    current = next(iter(loop.values()), {}).get("current", "baseline")
    return not current.startswith("baseline")


NUMPY_OPS = NumPyOps()
