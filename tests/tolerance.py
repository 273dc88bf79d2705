"""Float32 (and, with u = U64, float64) tolerances from error analysis, never from what one machine printed.

How far a float32 result may be from the exact one depends on the computation, not on the CPU. The standard
bounds (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., 2002, §2.2, §3.1):

- one rounding: |fl(x) - x| <= u |x|, with u = 2⁻²⁴ (float32's unit roundoff, half an ulp of 1);
- a sum of k terms, or a dot product of length k, added in ANY order, with or without FMA:
  |fl(Σ aᵢ bᵢ) - Σ aᵢ bᵢ| <= γₖ Σ |aᵢ bᵢ|, with γₖ = k u / (1 - k u).

OpenBLAS picks its kernels by CPU (Haswell, SkylakeX, Sandybridge, Prescott ...): they add in different orders
(blocking, SIMD lanes, FMA or not), so float32 results differ in their last bits from one machine to the next.
Each is within the bound of the exact value, so two of them (attn's and a reference's, or attn's on two
machines) are within twice it of each other. The bounds are elementwise: (|A| @ |B|)[i, j] is the Σ |aᵢ bᵢ| of
cell [i, j], computed here in float64, where its own rounding is ~10⁻¹⁶ relative and never matters.

    >>> float(gamma(1)) == 2.0**-24 / (1 - 2.0**-24)
    True
    >>> a = np.float32([[1.0, 2.0]]); b = np.float32([[3.0], [-4.0]])
    >>> matmul_bound(a, b).tolist() == [[11 * gamma(2)]]  # γ₂ (|1·3| + |2·(-4)|)
    True
"""

from __future__ import annotations

import numpy as np

U32 = 2.0**-24  # float32's unit roundoff
U64 = 2.0**-53  # float64's: every bound below takes u, and a float64 computation passes u=U64


def gamma(k: int, u: float = U32) -> float:
    """γₖ = k u / (1 - k u): the relative error bound of a k-term sum or dot product, in any order."""
    assert k * u < 1
    return k * u / (1 - k * u)


def matmul_bound(a: np.ndarray, b: np.ndarray, u: float = U32) -> np.ndarray:  # [..., m, k], [..., k, n] -> [..., m, n]
    """|fl(a @ b) - a @ b| <= γₖ (|a| @ |b|), elementwise, for a float32 product computed in any order."""
    a64, b64 = np.abs(np.asarray(a, np.float64)), np.abs(np.asarray(b, np.float64))
    return gamma(a64.shape[-1], u) * (a64 @ b64)


def affine_bound(x: np.ndarray, w: np.ndarray, b: np.ndarray, u: float = U32) -> np.ndarray:  # [n, k] [k, d] [d]
    """|fl(x @ w + b) - (x @ w + b)|: the product's bound, the bias's one more rounding of a (k+1)-term sum."""
    return matmul_bound(np.concatenate([x, np.ones((len(x), 1), x.dtype)], 1), np.concatenate([w, b[None]]), u)


def softmax_sum_bound(n: int, u: float = U32) -> float:
    """|Σⱼ fl(wⱼ) - 1| for one float32 softmax row of n weights, summed in float32.

    wⱼ = exp(sⱼ - max) / Σₖ exp(sₖ - max): exp within 4 u (NumPy's float32 exp is within 1-4 ulp), the n-term
    sum of the denominator γₙ, the division u, so each weight is within (γₙ + 5u) of its exact value
    relatively, and the exact weights sum to 1; adding the n computed weights in float32 is γₙ more:

    >>> 2e-6 < softmax_sum_bound(16) < 3e-6  # more than the 1e-6 that a 16-token row often, not always, meets
    True
    >>> 4e-15 < softmax_sum_bound(16, U64) < 5e-15  # float64: ten orders tighter than np.allclose's 1e-5
    True
    """
    return gamma(n, u) + 5 * u + gamma(n, u) * (1 + gamma(n, u) + 5 * u)


def assert_rows_sum_to_one(weights, u: float = U32, what: str = "rows") -> None:  # [..., n]
    """Every softmax row of `weights` sums to 1 within softmax_sum_bound(n, u): u=U32 for float32 weights
    (also when a JSON document carries them as float64), U64 for weights computed in float64.

    >>> assert_rows_sum_to_one(np.full((2, 3), 1 / 3), U64)
    >>> assert_rows_sum_to_one(np.full((2, 3), 0.334), U64)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    AssertionError: rows: |Δ| 0.002 ...
    """
    w = np.asarray(weights, np.float64)
    assert_within(w.sum(-1), 1.0, softmax_sum_bound(w.shape[-1], u), what)


def rollout_sum_bound(n: int, layers: int, u: float = U64) -> float:
    """|Σⱼ Rᵢⱼ - 1| for a row of an attention rollout of `layers` layers over n tokens, summed by the test.

    Each layer's Â = (mean of heads + I) / its row sums is renormalised in float64 (an n-term sum and a division:
    its rows sum to 1 within 2 γₙ₊₁ whatever the weights' own float32 sums); Â R is an n-term product of
    non-negative numbers (γₙ more), and the test's own sum of the row γₙ:

    >>> rollout_sum_bound(7, 1) == (1 + 3 * gamma(8, U64)) * (1 + gamma(7, U64)) - 1
    True
    """
    return (1 + 3 * gamma(n + 1, u)) ** layers * (1 + gamma(n, u)) - 1


def moments_bound(count: int, squares, mean, u: float = U64):  # [...], [...] -> mean's [...], std's [...]
    """What the mean and standard deviation of a Moments (count, Σv², Σv/count) of one set of values may differ
    by between two orders of summing them (one pass, or parts merged): each sum is within γ(count) of exact.

    Σ|vᵢ| <= √(count Σvᵢ²) (Cauchy–Schwarz), so each mean within γ(count+1) √(Σv²/count); the variance
    Σv²/count - mean² within γ(count+5)(Σv²/count + mean²) (squares, sum, division, the mean's square, the
    subtraction); |√a - √b| <= |a - b| / √b, and the square root one rounding more:

    >>> mean_b, std_b = moments_bound(4, np.float64(4.0), np.float64(1.0))  # four values of 1
    >>> bool(mean_b == 2 * gamma(5, U64)) and bool(std_b == np.sqrt(4 * gamma(9, U64)))  # std 0: √(var_b)
    True
    """
    squares, mean = np.asarray(squares, np.float64), np.asarray(mean, np.float64)
    mean_b = 2 * gamma(count + 1, u) * np.sqrt(squares / count)
    var_b = 2 * gamma(count + 5, u) * (squares / count + mean * mean)
    std = np.sqrt(np.maximum(squares / count - mean * mean, 0.0))
    std_b = np.minimum(np.sqrt(var_b), var_b / np.maximum(std, np.finfo(np.float64).tiny)) + 2 * u * std
    return mean_b, std_b


def weights_bound(magnitude: float, terms: int, depth: int = 1, u: float = U32) -> float:
    """|δw| of float32 attention weights whose scores are sums of about `magnitude` (Σ |qₗ kₗ| · scale, or the
    largest |score| where q and k align) and reach a score through `terms` roundings in each of `depth` blocks.

    One block's roundings reach a score through q = x W_Q and k = x W_K (d_model terms each) and q·k (d_k
    terms): `terms` = 2 d_model + d_k, a relative error γ(terms) of the magnitude. A block reads the errors of
    the blocks before it; to first order they add, D of them after D blocks. A row's weights move by
    wⱼ(δsⱼ - Σₖ wₖ δsₖ) = wⱼ((1 - wⱼ) δsⱼ - Σₖ≠ⱼ wₖ δsₖ) when its scores move by δs, at most
    2 wⱼ(1 - wⱼ) max |δs| <= ½ max |δs|:

    >>> weights_bound(1.0, 2 * 32 + 8) == 0.5 * gamma(72)
    True
    """
    return 0.5 * depth * gamma(terms, u) * magnitude


def softmax_bound(weights: np.ndarray, scores: np.ndarray | None = None, u: float = U32) -> np.ndarray:  # [..., n]
    """|fl(wⱼ) - wⱼ| of float32 softmax weights: relative γₙ + 5u (see softmax_sum_bound), and, given the
    scores, u |sⱼ - max s| more: the rounding of the shifted score sⱼ - max s is exp's relative error."""
    w = np.abs(np.asarray(weights, np.float64))
    spread = 0 if scores is None else np.abs(scores - np.max(scores, axis=-1, keepdims=True)).astype(np.float64)
    return (gamma(weights.shape[-1], u) + 5 * u + u * spread) * w


def assert_within(actual, expected, bound, what: str = "") -> None:
    """|actual - expected| <= bound, elementwise (`bound` broadcasts), naming the worst cell and its ratio."""
    err = np.abs(np.asarray(actual, np.float64) - np.asarray(expected, np.float64))
    ratio = err / np.maximum(bound, np.finfo(np.float64).tiny)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.ndim else ()
    assert (err <= bound).all(), f"{what}: |Δ| {err[worst]:.3g} at {worst} is {ratio[worst]:.2f}x its bound"
