"""The attention core: the one shape check, a stable softmax, attend, heads.

Shapes: h heads, m queries, n keys, widths d_k (queries and keys), d_v (values).
Rows are queries, columns are keys, always.

A 2x2 example you can check on paper (scaled dot product, d_k = 1):

    >>> from attncli.core.variants import VARIANTS
    >>> q = np.array([[[1.0], [0.0]]]); k = np.array([[[1.0], [0.0]]]); v = np.array([[[10.0], [20.0]]])
    >>> r = attend(q, k, v, VARIANTS["scaled"])
    >>> np.round(r.weights, 4).tolist()   # row 0: softmax([1, 0]); row 1: softmax([0, 0])
    [[[0.7311, 0.2689], [0.5, 0.5]]]
    >>> np.round(r.out, 4).tolist()       # 0.7311*10 + 0.2689*20; 0.5*10 + 0.5*20
    [[[12.6894], [15.0]]]

The score variants are registered in `attncli.core.variants` and the masks in
`attncli.core.masks`: the registries that the CLI, `attn variants`, the JSON and the
tests all read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attncli.core.masks import Mask, apply_masks
from attncli.core.shapes import check_shapes
from attncli.core.variants import Params, Variant
from attncli.errors import DataError

__all__ = [
    "Attended",
    "MultiHead",
    "Projections",
    "attend",
    "identity_projections",
    "merge_heads",
    "multi_head",
    "random_projections",
    "softmax",
    "softmax_terms",
    "split_heads",
]


# ---- softmax and attend ---------------------------------------------------------------------------


def softmax(scores, masked=None, *, in_place: bool = False):  # [..., n], [..., n] bool or None -> [..., n]
    """Row softmax that subtracts the row maximum; masked cells are exactly 0, a fully masked row all 0.

    The dtype is kept (float32 stays float32). With `in_place` the result is written into `scores`
    (a float array), which is returned: no array of its size is allocated.

    >>> softmax(np.array([[1e4, -1e4], [0.0, 0.0]])).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """
    if in_place:
        if masked is not None:
            np.copyto(scores, -np.inf, where=masked)
        s = scores
    else:
        s = scores if masked is None else np.where(masked, -np.inf, scores)
    row_max = s.max(axis=-1, keepdims=True, initial=-np.inf)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # fully masked (or empty) row: max is -inf
    # In place from here on: one array of the size of `scores` (a 4000-token row set is 128 MB).
    e = np.subtract(s, row_max, out=s if in_place or s is not scores else None)
    np.exp(e, out=e)
    total = e.sum(axis=-1, keepdims=True)  # >= 1 unless the row is fully masked (then e is all 0)
    total[total == 0] = 1.0  # 0 / 1 = 0 there; a plain divide is ~2x faster than one with where=
    return np.divide(e, total, out=e)


def softmax_terms(scores, masked=None) -> tuple[float, np.ndarray, float]:  # [n], [n] bool or None -> (), [n], ()
    """One row of `softmax` spelled out for the screens that show its arithmetic: the maximum of its live
    (unmasked) scores, e^(s − max) of each key (0 where masked) and their sum; the weights are e / sum.
    A fully masked row has no maximum: (nan, all 0, 0).

    >>> top, e, total = softmax_terms(np.array([0.0, 2.0, 5.0]), np.array([False, False, True]))
    >>> top, e.round(4).tolist(), round(total, 4)
    (2.0, [0.1353, 1.0, 0.0], 1.1353)
    """
    s = np.asarray(scores, dtype=float)
    live = np.ones(s.shape, bool) if masked is None else ~np.asarray(masked)
    if not live.any():
        return math.nan, np.zeros_like(s), 0.0
    top = float(s[live].max())
    e = np.where(live, np.exp(np.where(live, s, 0) - top), 0.0)
    return top, e, float(e.sum())


@dataclass(frozen=True)
class Attended:
    """What attending gives: the scores, the mask, the weights (each None when not kept) and the outputs."""

    scores: np.ndarray | None  # [h, m, n] before any mask, finite; None on the outputs-only path
    masked: np.ndarray | None  # [h, m, n] bool, True = masked; None without a mask
    weights: np.ndarray | None  # [h, m, n] after mask and softmax; rows sum to 1 (0 if fully masked); or None
    out: np.ndarray  # [h, m, d_v]


def attend(
    q,
    k,
    v,
    variant: Variant,
    params: Params | None = None,
    masks: tuple[Mask, ...] = (),
    temperature: float = 1.0,
    trace: dict | None = None,
) -> Attended:
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> Attended(scores/weights [h, m, n], out [h, m, d_v])
    """Score, mask, softmax, mix: the whole of single- or multi-head attention on given q, k, v."""
    check_shapes(q, k, v, variant.equal_width, f"variant {variant.name}")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below, as one line
        scores = variant.score(q, k, params or {}, trace)
        scores = scores / temperature if temperature != 1.0 else scores
    if not np.isfinite(scores).all():
        raise DataError(
            f"the {variant.name} scores overflow {scores.dtype} (inputs up to "
            f"{max(np.abs(q).max(), np.abs(k).max()):.3g}"
            + (
                f", temperature {temperature:g}); rescale the inputs or raise --temperature"
                if temperature < 1
                else "); rescale the inputs"
            )
        )
    masked = apply_masks(scores, masks)
    weights = softmax(scores, masked)
    return Attended(scores, masked, weights, np.matmul(weights, v))


# ---- heads ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Projections:
    """The weights of multi-head attention: W_Q, W_K, W_V and W_O (Vaswani et al. 2017, §3.2.2)."""

    w_q: np.ndarray  # [d_model, h * d_k]
    w_k: np.ndarray  # [d_model, h * d_k]
    w_v: np.ndarray  # [d_model, h * d_v]
    w_o: np.ndarray  # [h * d_v, d_model]


def random_projections(rng: np.random.Generator, d_model: int, n_head: int, d_k: int, d_v: int) -> Projections:
    """Seeded N(0, 1/fan_in) weights: random, not trained."""

    def w(fan_in, fan_out):
        return rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)

    return Projections(
        w(d_model, n_head * d_k), w(d_model, n_head * d_k), w(d_model, n_head * d_v), w(n_head * d_v, d_model)
    )


def identity_projections(d_model: int) -> Projections:
    """Q = K = V = X, as in the plain self-attention of Vaswani et al. 2017 before projections are learned;
    with h heads each head sees its own d_model/h columns."""
    eye = np.eye(d_model)
    return Projections(eye, eye, eye, eye)


def split_heads(x, n_head: int):  # [..., n, h * d] -> [..., h, n, d]  (leading axes: a batch of texts)
    *lead, n, hd = x.shape
    return x.reshape(*lead, n, n_head, hd // n_head).swapaxes(-3, -2)


def merge_heads(x):  # [..., h, m, d] -> [..., m, h * d]
    *lead, h, m, d = x.shape
    return x.swapaxes(-3, -2).reshape(*lead, m, h * d)


@dataclass(frozen=True)
class MultiHead:
    """Multi-head attention's intermediates: each head's Q, K, V, what it attended, and the output O."""

    q: np.ndarray  # [h, m, d_k]
    k: np.ndarray  # [h, n, d_k]
    v: np.ndarray  # [h, n, d_v]
    attended: Attended
    output: np.ndarray  # [m, d_model] = concat(O_h) W_O


def multi_head(
    x_q,
    x_kv,
    proj: Projections,
    n_head: int,
    variant: Variant,
    params: Params | None = None,
    masks: tuple[Mask, ...] = (),
    temperature: float = 1.0,
    trace: dict | None = None,
) -> MultiHead:
    # [m, d_model], [n, d_model] -> MultiHead(q [h, m, d_k], k, v, attended, output [m, d_model])
    """Project, split into heads, attend with any variant, merge. Self-attention: x_kv is x_q."""
    q = split_heads(x_q @ proj.w_q, n_head)
    k = split_heads(x_kv @ proj.w_k, n_head)
    v = split_heads(x_kv @ proj.w_v, n_head)
    attended = attend(q, k, v, variant, params, masks, temperature, trace)
    return MultiHead(q, k, v, attended, merge_heads(attended.out) @ proj.w_o)
