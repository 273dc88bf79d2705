"""The matrix product and exp of the blocked kernels (attncli.core.kernels), with NumPy alone.

The interface every backend of the kernels has (attncli.core.mkl.Mkl is the other one):
`matmul(a, b, out, part=None)` and `exp(x)`, both writing in place.

    >>> import numpy as np
    >>> out = np.zeros((1, 1)); NUMPY_OPS.matmul(np.ones((1, 2)), np.ones((2, 1)), out); out
    array([[2.]])
    >>> NUMPY_OPS.matmul(np.ones((1, 2)), np.ones((2, 1)), out, np.empty((1, 1))); out  # out += a @ b
    array([[4.]])
"""

from __future__ import annotations

import numpy as np

__all__ = ["NUMPY_OPS", "NumPyOps"]


class NumPyOps:
    """The kernels' matrix product and exp with NumPy alone (the interface of attncli.core.mkl.Mkl)."""

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


NUMPY_OPS = NumPyOps()
