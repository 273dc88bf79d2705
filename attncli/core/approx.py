"""Efficient approximations of softmax attention, and what they cost in accuracy.

Two families of linear-time approximations, both here in pure NumPy:

- ``linformer``: low-rank projection of the keys and values along the
  sequence (Wang et al. 2020, "Linformer"): K and V [n, d] become E K and F V
  [r, d], so the score matrix is [m, r] instead of [m, n].
- ``performer``: positive random features (Choromanski et al. 2021, FAVOR+):
  exp(q . k) = E_w[phi(q) phi(k)], so softmax(Q K^T) V is computed as
  phi(Q) (phi(K)^T V) / phi(Q) (phi(K)^T 1), linear in n.

Each returns ``(weights, out)``: ``out`` [h, m, d_v] is the approximation's
output, and ``weights`` [h, m, n] the attention weights over the *original*
n keys that it implies, so that ``out == weights @ v`` (up to rounding) and
they can be compared cell by cell with exact attention. Both are proper
distributions (non-negative, each row sums to 1), so ``approx_error`` can
report the KL divergence. ``weights`` is the only m x n array either builds;
pass ``return_weights=False`` to skip it (then memory is O((m + n) (r + d))).

Randomness comes only from the explicit ``rng`` argument (a
``np.random.Generator``, or an int seed for ``np.random.default_rng``), and is
shared by all heads. The dtype is kept: float32 in, float32 out. Neither
takes a mask: a causal mask is not expressible in Linformer's projection, and
the Performer here is the bidirectional one.
"""

from __future__ import annotations

import math

import numpy as np

from attncli.core.shapes import prepare_qkv
from attncli.errors import DataError

__all__ = [
    "approx_error",
    "feature_exponents",
    "group_means",
    "linformer",
    "linformer_projection",
    "performer",
    "performer_features",
    "performer_log_scores",
]


def _prepare(q, k, v):
    """Shapes and dtype as in attncli.core.kernels (3-D, or 2-D for one head; one float dtype), and at least one key."""
    # [h, m, d_k] | [m, d_k], ... -> q, k, v 3-D, dtype, squeeze
    q, k, v, dt, squeeze = prepare_qkv(q, k, v)
    if k.shape[1] == 0:
        raise DataError("attention needs at least one key")
    return q, k, v, dt, squeeze


def _generator(rng):
    """An explicit np.random.Generator (an int is taken as a seed)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"rng must be a numpy.random.Generator or an int seed, not {type(rng).__name__}")


def _out(weights, out, squeeze):
    # ([h, m, n] | None, [h, m, d_v]) -> the same, head axis dropped for 2-D inputs
    if squeeze:
        return (None if weights is None else weights[0]), out[0]
    return weights, out


# ------------------------------------------------------------------ Linformer


def linformer_projection(n, rank, rng):
    """The Linformer projection E = F [r, n]: mean-pooling over a random partition.

    The n positions are shuffled (with ``rng``) and cut into ``rank`` groups of
    sizes differing by at most one; row b of the projection averages group b
    (P[b, j] = 1 / |group b| for j in it, else 0), so every row sums to 1.
    Returns ``(group, sizes)``: ``group`` [n] int, the group of each position,
    and ``sizes`` [r] int; the dense matrix is never needed. ``rank`` is
    clipped to n (at rank n every group is one key: exact attention).
    """
    # n, r -> group [n] (int64, values in 0..r-1), sizes [r]
    if rank < 1:
        raise DataError(f"rank must be >= 1, got {rank}")
    r = min(int(rank), n)
    perm = _generator(rng).permutation(n)
    group = np.empty(n, dtype=np.int64)
    group[perm] = np.arange(n) * r // n  # balanced: sizes floor(n/r) or ceil(n/r)
    sizes = np.bincount(group, minlength=r)
    return group, sizes


def linformer(q, k, v, scale, rank, rng, *, return_weights=True):
    """Linformer-style attention: keys and values projected to ``rank`` rows.

    With the pooling projection P [r, n] of ``linformer_projection`` (E = F = P):
    K' = P K, V' = P V [r, d] (group means), and the r group scores get the
    log of their group's size added, so that a group of identical keys weighs
    exactly what its members would:

        A' = softmax(scale * Q K'^T + ln|group|)   [m, r]
        out = A' V'                                 [m, d_v]

    The implied weights over the n original keys spread each group's weight
    evenly over its members (weights[i, j] = A'[i, group(j)] / |group(j)|),
    which is softmax(scale * q_i . mean-of-j's-group) over j: rows sum to 1,
    ``out == weights @ v``, and rank = n gives exact attention.

    Why pooling rather than the Gaussian (JL) matrix of the Linformer theorem:
    an untrained Gaussian E, F gives implied weights with negative entries
    (no distribution, no KL) and no convergence to exact attention at r = n.
    Cost O(m r d + n d) time, O(m r) memory without the weights.
    Returns ``(weights [h, m, n] or None, out [h, m, d_v])``.
    """
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> ([h, m, n] | None, [h, m, d_v])
    q, k, v, dt, squeeze = _prepare(q, k, v)
    group, sizes = linformer_projection(k.shape[1], rank, rng)  # [n], [r]
    order = np.argsort(group, kind="stable")  # positions sorted by group
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))  # [r] (no group is empty)
    inv_size = (1.0 / sizes).astype(dt)  # [r]
    k_proj = np.add.reduceat(k[:, order], starts, axis=1) * inv_size[:, None]  # [h, r, d_k] = P K
    v_proj = np.add.reduceat(v[:, order], starts, axis=1) * inv_size[:, None]  # [h, r, d_v] = P V
    s = np.matmul(q * dt.type(scale), k_proj.transpose(0, 2, 1))  # [h, m, r]
    s += np.log(sizes).astype(dt)
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)  # A' [h, m, r]
    out = np.matmul(s, v_proj)  # [h, m, d_v]
    weights = None
    if return_weights:
        s *= inv_size  # per-member share of the group's weight
        weights = s[:, :, group]  # [h, m, n]
    return _out(weights, out, squeeze)


# ------------------------------------------------------------------ Performer


def performer_features(d, n_features, rng, orthogonal=True):
    """Random feature directions W [n_features, d] for FAVOR+.

    Gaussian rows w ~ N(0, I_d), or (``orthogonal``, the default, lower
    variance) blocks of d exactly orthogonal directions (QR of a Gaussian
    matrix, signs fixed so the block is uniformly random) whose lengths are
    drawn like the lengths of Gaussian vectors (chi with d degrees of freedom),
    so each row is still marginally N(0, I_d).
    """
    # d, M -> [M, d] float64
    if n_features < 1:
        raise DataError(f"n_features must be >= 1, got {n_features}")
    gen = _generator(rng)
    if not orthogonal:
        return gen.standard_normal((n_features, d))
    blocks = []
    for _ in range(math.ceil(n_features / d)):
        qmat, rmat = np.linalg.qr(gen.standard_normal((d, d)))
        # Fix the signs so that qmat is Haar-distributed (uniformly random):
        # without this the Householder QR favours some directions, and the
        # estimator is biased (its error stops falling as features grow).
        qmat *= np.sign(np.diag(rmat))
        blocks.append(qmat.T)  # rows orthonormal
    w = np.concatenate(blocks)[:n_features]
    lengths = np.linalg.norm(gen.standard_normal((n_features, d)), axis=1)
    return w * lengths[:, None]


def performer(q, k, v, scale, n_features, rng, *, orthogonal=True, return_weights=True):
    """Performer (FAVOR+) attention with ``n_features`` positive random features.

    With x' = sqrt(scale) x (so that q' . k' = scale q . k) and random
    directions w_1..w_M (``performer_features``), the positive features

        phi(x) = exp(W x' - |x'|^2 / 2)          [M]

    satisfy E[phi(q) . phi(k)] = exp(scale q . k), the softmax kernel. Then

        out = phi(Q) (phi(K)^T V) / phi(Q) (phi(K)^T 1)     O((m + n) M d)

    and the implied weights are weights[i, j] = phi(q_i) . phi(k_j) / sum_j
    (positive, rows sum to 1, ``out == weights @ v``). For stability each
    query's features are scaled by exp(-its largest exponent) and all key
    features of a head by exp(-their largest exponent): constants that cancel
    in the ratio (as does FAVOR+'s 1 / sqrt(M)). The error falls like
    1 / sqrt(M) but grows quickly with |q| |k| scale (large scores).
    Returns ``(weights [h, m, n] or None, out [h, m, d_v])``.
    """
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> ([h, m, n] | None, [h, m, d_v])
    q, k, v, dt, squeeze = _prepare(q, k, v)
    d = q.shape[2]
    w = performer_features(d, n_features, rng, orthogonal).astype(dt)[None]  # [1, M, d]
    eq = feature_exponents(q, w, scale)
    eq -= eq.max(axis=-1, keepdims=True)  # per query: cancels in the row ratio
    phi_q = np.exp(eq, out=eq)  # [h, m, M]
    ek = feature_exponents(k, w, scale)
    ek -= ek.max(axis=(1, 2), keepdims=True)  # per head: cancels too
    phi_k = np.exp(ek, out=ek)  # [h, n, M]

    kv = np.matmul(phi_k.transpose(0, 2, 1), v)  # [h, M, d_v]
    k_sum = phi_k.sum(axis=1)  # [h, M]
    denom = np.einsum("hmf,hf->hm", phi_q, k_sum)  # [h, m]
    denom[denom == 0] = 1  # everything underflowed: zeros, never NaN
    out = np.matmul(phi_q, kv) / denom[:, :, None]  # [h, m, d_v]
    weights = None
    if return_weights:
        weights = np.matmul(phi_q, phi_k.transpose(0, 2, 1))  # [h, m, n]
        weights /= denom[:, :, None]
    return _out(weights, out, squeeze)


# ------------------------------------------------------------------ as score variants
#
# Registered in attncli.core.variants, the approximations also need *scores*: a matrix S whose row
# softmax is exactly the weights the approximation implies, so that masks, the JSON, `attn steps`
# and the statistics treat them like any other variant (scale 1/√d, as `scaled`).


def group_means(k, group):  # [h, n, d], [h, n] int -> [h, R, d] (R = largest group + 1)
    """k̄_g: the mean of the keys in each group (every group 0..R-1 is non-empty).

    Each group's entries are summed in the order of their values, not of their positions, so that
    moving keys (with their groups) gives the same means to the last bit: in floating point
    (1e30 - 1e30) + 1 is 1 but (1 + 1e30) - 1e30 is 0.
    """
    h, n, d = k.shape
    if group.shape != (h, n):
        raise DataError(f"linformer: the partition covers {group.shape[-1]} keys, but there are {n}")
    r = int(group.max()) + 1
    out = np.empty((h, r, d), dtype=k.dtype)
    for hh in range(h):
        by_value = np.argsort(k[hh], axis=0, kind="stable")  # [n, d]: each column's keys by value
        order = np.take_along_axis(by_value, np.argsort(group[hh][by_value], axis=0, kind="stable"), axis=0)
        sizes = np.bincount(group[hh], minlength=r)  # [R], all > 0
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        out[hh] = np.add.reduceat(np.take_along_axis(k[hh], order, axis=0), starts, axis=0) / sizes[:, None]
    return out


def feature_exponents(x, w, scale):  # [h, L, d], [h or 1, F, d], float -> [h, L, F]
    """a_f = w_f · x' − ‖x'‖²/2 with x' = √scale · x: φ_f(x) = e^{a_f}, so E[φ(q)·φ(k)] = e^{scale q·k}."""
    xs = x * x.dtype.type(math.sqrt(scale))
    e = np.matmul(xs, w.swapaxes(-1, -2))
    e -= (np.einsum("hld,hld->hl", xs, xs) / 2)[:, :, None]
    return e


#: Cells per block when the log-sum-exp is done term by term (bounds a [cells, F] temporary).
_EXACT_CELLS = 1 << 14


def performer_log_scores(q, k, w):  # [h, m, d], [h, n, d], [h, F, d] -> a [h, m, F], b [h, n, F], s [h, m, n]
    """s_ij = ln((1/F) Σ_f e^{a_if + b_jf}): the log of the FAVOR+ estimate of e^{q·k/√d}, and a, b.

    softmax_j(s_ij) = φ(q_i)·φ(k_j) / Σ_j φ(q_i)·φ(k_j) is `performer`'s implied weights. Computed as
    A_i + B_j + ln(φ̂(q_i)·φ̂(k_j)) − ln F, where A_i = max_f a_if, B_j = max_f b_jf and φ̂ = e^{a − A}
    (entries in (0, 1]): one matrix product. Where that product is so small that it lost precision
    (or underflowed to 0: features of q and k that peak in different directions, typical of huge
    inputs), the log-sum-exp is redone term by term, so the scores stay finite.
    """
    w = np.asarray(w).astype(q.dtype, copy=False)  # [h, F, d]
    n_features = w.shape[1]
    scale = 1.0 / math.sqrt(q.shape[-1])
    a = feature_exponents(q, w, scale)  # [h, m, F]
    b = feature_exponents(k, w, scale)  # [h, n, F]
    a_max = a.max(axis=-1, keepdims=True)  # [h, m, 1]
    b_max = b.max(axis=-1, keepdims=True)  # [h, n, 1]
    dots = np.matmul(np.exp(a - a_max), np.exp(b - b_max).swapaxes(-1, -2))  # [h, m, n], in [0, F]
    low = dots < math.sqrt(float(np.finfo(dots.dtype).tiny))  # NaN (an overflow) is not low: attend reports it
    scores = np.log(dots, out=dots, where=~low)
    scores += a_max
    scores += b_max.swapaxes(-1, -2)
    cells = np.nonzero(low)
    for c in range(0, cells[0].size, _EXACT_CELLS):
        hh, ii, jj = (x[c : c + _EXACT_CELLS] for x in cells)
        t = a[hh, ii] + b[hh, jj]  # [cells, F]
        t_max = t.max(axis=-1, keepdims=True)
        scores[hh, ii, jj] = (t_max + np.log(np.exp(t - t_max).sum(axis=-1, keepdims=True)))[:, 0]
    scores -= math.log(n_features)
    return a, b, scores


# ------------------------------------------------------------------ error


def approx_error(exact_weights, approx_weights, *, block_rows=1024):
    """How far approximate attention weights are from the exact ones.

    Returns ``{"max_abs_error": max |exact - approx| over all cells,
    "mean_kl": mean over rows of KL(exact_row || approx_row)}``, the KL in
    nats (natural log), computed in float64. Rows of ``exact`` that are all
    zero (fully masked) are left out of the mean; cells where exact is 0 add
    nothing; an approx cell that is 0 (or negative) where exact is not is
    floored at the smallest normal float64 (2.2e-308), so the KL stays finite
    (about 708 nats per unit of missing mass) -- never inf or NaN, which strict
    JSON could not hold. Shapes [..., n], any leading axes; worked through
    ``block_rows`` rows at a time (bounded float64 temporaries).
    """
    # [..., m, n], [..., m, n] -> {"max_abs_error": float, "mean_kl": float}
    p = np.asarray(exact_weights)
    a = np.asarray(approx_weights)
    if p.shape != a.shape:
        raise DataError(f"weights shapes differ: {list(p.shape)} and {list(a.shape)}")
    if p.size == 0:
        return {"max_abs_error": 0.0, "mean_kl": 0.0}
    n = p.shape[-1]
    p2, a2 = p.reshape(-1, n), a.reshape(-1, n)
    tiny = np.finfo(np.float64).tiny
    max_abs, kl_sum, rows = 0.0, 0.0, 0
    for s in range(0, p2.shape[0], block_rows):
        pb = p2[s : s + block_rows].astype(np.float64)
        ab = a2[s : s + block_rows].astype(np.float64)
        max_abs = max(max_abs, float(np.abs(pb - ab).max()))
        live = pb.sum(axis=1) > 0  # [rows]
        pos = pb > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(pos, pb * (np.log(np.where(pos, pb, 1.0)) - np.log(np.maximum(ab, tiny))), 0.0)
        kl_sum += float(terms[live].sum())
        rows += int(live.sum())
    return {"max_abs_error": max_abs, "mean_kl": kl_sum / rows if rows else 0.0}
