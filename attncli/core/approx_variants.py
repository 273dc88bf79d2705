"""Linformer and Performer as attention variants: the scores they imply, and their seeded random state.

`attncli.core.approx` computes each approximation's outputs (and the weights it implies over the n
original keys) from q, k, v and a random generator. Registered in `attention.VARIANTS`, they also
need *scores*: a matrix S whose row softmax is exactly the weights the approximation implies, so
that masks, the JSON, `attn steps`, the statistics and the property tests treat them like any other
variant (shapes: h heads, m queries, n keys, width d = d_k; scale 1/√d, as `scaled`):

- linformer: s_ij = q_i · k̄_g(j) / √d, where k̄_g is the mean of the keys of key j's group g(j), a
  random partition of the n keys into R groups of nearly equal size (--rank R). softmax_j(s_ij) is
  approx.linformer's implied weights: group g gets |g| e^{q·k̄_g/√d} / Z, spread evenly over its
  members. R >= n makes every group one key: exact `scaled` attention.
- performer: s_ij = ln((1/F) Σ_f e^{a_if + b_jf}), with a_if = w_f·q_i' − ‖q_i'‖²/2 (and b for the
  keys), x' = x / d^{1/4} and F random feature directions w_f (--features F): the logarithm of the
  FAVOR+ estimate φ(q)·φ(k) of e^{q·k/√d}. softmax_j(s_ij) = φ(q_i)·φ(k_j) / Σ_j φ(q_i)·φ(k_j) is
  approx.performer's implied weights; as F grows s_ij tends to q_i·k_j/√d.

The random state (the partition, the features) is drawn by approx's own functions from the
generator every variant's parameters come from (np.random.default_rng([seed, 2])), and is the same
for every head, as in approx.linformer and approx.performer: given a generator in the same state,
they draw the same and compute the outputs alone in O((m + n)·(R or F)·d) (`--no-weights`,
attncli.core.efficient).

NumPy only; attncli.core.approx is imported when parameters are made. Dtype-preserving (float32 stays
float32). attention.py imports this module lazily, so `attn` starts without it.
"""

from __future__ import annotations

import math

import numpy as np

from attncli.errors import DataError

DEFAULT_RANK = 8
DEFAULT_FEATURES = 64


# ---- seeded random state (the variants' "params") ---------------------------------------------------


def linformer_params(rng, n_head, d_q, d_k, d_a, *, n_keys, rank=DEFAULT_RANK):  # -> {"group": [h, n]}
    """The partition of the n keys into min(R, n) groups, the same for every head."""
    from attncli.core.approx import linformer_projection

    group, _ = linformer_projection(n_keys, rank, rng)  # [n] in 0..R-1
    return {"group": np.tile(group, (n_head, 1))}


def performer_params(rng, n_head, d_q, d_k, d_a, *, n_keys=None, features=DEFAULT_FEATURES):  # -> {"W": [h, F, d_k]}
    """F orthogonal random feature directions (rows marginally N(0, I)), the same for every head."""
    from attncli.core.approx import performer_features

    w = performer_features(d_k, features, rng)  # [F, d_k]
    return {"W": np.tile(w, (n_head, 1, 1))}


# ---- scores ---------------------------------------------------------------------------------------


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


def linformer_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s_ij = q_i · k̄_g(j) / √d: each key scored through the mean of its group."""
    group = np.asarray(params["group"])
    k_bar = group_means(k, group)  # [h, R, d]
    s = np.matmul(q, k_bar.swapaxes(-1, -2)) / math.sqrt(q.shape[-1])  # [h, m, R]: R scores per query
    scores = np.stack([s[hh][:, group[hh]] for hh in range(s.shape[0])])  # [h, m, n]
    if trace is not None:
        trace["group"] = group
        trace["k_bar"] = np.stack([k_bar[hh][group[hh]] for hh in range(k_bar.shape[0])])  # [h, n, d]
    return scores


def feature_exponents(x, w):  # [h, L, d], [h, F, d] -> [h, L, F]
    """a_f = w_f · x' − ‖x'‖²/2 with x' = x / d^{1/4}: φ_f(x) = e^{a_f}, so E[φ(q)·φ(k)] = e^{q·k/√d}."""
    root = x.dtype.type(math.sqrt(1.0 / math.sqrt(x.shape[-1])))
    xs = x * root
    e = np.matmul(xs, w.swapaxes(-1, -2))
    e -= (np.einsum("hld,hld->hl", xs, xs) / 2)[:, :, None]
    return e


Q_EXPONENTS, K_EXPONENTS = "Wq' - |q'|^2/2", "Wk' - |k'|^2/2"  # performer's trace terms (attn steps)

#: Cells per block when the log-sum-exp is done term by term (bounds a [cells, F] temporary).
_EXACT_CELLS = 1 << 14


def performer_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s_ij = ln((1/F) Σ_f e^{a_if + b_jf}): the log of the FAVOR+ estimate of e^{q·k/√d}.

    Computed as A_i + B_j + ln(φ̂(q_i)·φ̂(k_j)) − ln F, where A_i = max_f a_if, B_j = max_f b_jf and
    φ̂ = e^{a − A} (entries in (0, 1]): one matrix product. Where that product is so small that it
    lost precision (or underflowed to 0: features of q and k that peak in different directions,
    typical of huge inputs), the log-sum-exp is redone term by term, so the scores stay finite.
    """
    w = np.asarray(params["W"]).astype(q.dtype, copy=False)  # [h, F, d]
    n_features = w.shape[1]
    a = feature_exponents(q, w)  # [h, m, F]
    b = feature_exponents(k, w)  # [h, n, F]
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
    if trace is not None:
        trace[Q_EXPONENTS] = a
        trace[K_EXPONENTS] = b
    return scores
