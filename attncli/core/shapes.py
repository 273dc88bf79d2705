"""The one shape check of q, k and v, for every attention path (exact, kernels, approximations).

>>> import numpy as np
>>> check_shapes(np.zeros((1, 2, 4)), np.zeros((1, 3, 4)), np.zeros((1, 2, 5)))
Traceback (most recent call last):
...
attncli.errors.DataError: keys and values must have the same length: k is [3, 4], v is [2, 5]
"""

from __future__ import annotations

import numpy as np

from attncli.errors import DataError


def check_shapes(q, k, v, equal_width: bool = True, who: str = "attention") -> None:
    # [h, m, d_q], [h, n, d_k], [h, n, d_v] -> None
    """The one shape check: q, k, v all 3-D [heads, len, width] (or all 2-D, one head), the same heads,
    widths equal where `who` (a variant's `equal_width`) needs it, one value per key. DataError naming
    the shapes otherwise."""
    if not (q.ndim == k.ndim == v.ndim) or q.ndim not in (2, 3):
        raise DataError(
            "q, k, v must all be 2-D [len, dim] or all 3-D [heads, len, dim]; "
            f"got shapes {list(q.shape)}, {list(k.shape)}, {list(v.shape)}"
        )
    if q.ndim == 3 and not (q.shape[0] == k.shape[0] == v.shape[0]):
        raise DataError(f"q, k, v have different head counts: {q.shape[0]}, {k.shape[0]}, {v.shape[0]}")
    if equal_width and q.shape[-1] != k.shape[-1]:
        raise DataError(
            f"{who} needs queries and keys of equal width: q is {list(q.shape[-2:])}, k is {list(k.shape[-2:])}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise DataError(
            f"keys and values must have the same length: k is {list(k.shape[-2:])}, v is {list(v.shape[-2:])}"
        )


def _common_dtype(*arrays) -> np.dtype:
    """float32 if every input is float32 (or narrower float), else float64."""
    dt = np.result_type(*arrays)
    return np.dtype(np.float32 if dt in (np.float32, np.float16) else np.float64)


def prepare_qkv(q, k, v):
    # [h, m, d_k] | [m, d_k], [h, n, d_k] | [n, d_k], [h, n, d_v] | [n, d_v] -> q, k, v 3-D, dtype, squeeze
    """`check_shapes`, then everything 3-D (a head axis added to 2-D inputs: `squeeze`) in one float dtype."""
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    check_shapes(q, k, v)
    squeeze = q.ndim == 2
    if squeeze:
        q, k, v = q[None], k[None], v[None]
    dt = _common_dtype(q, k, v)
    return q.astype(dt, copy=False), k.astype(dt, copy=False), v.astype(dt, copy=False), dt, squeeze
