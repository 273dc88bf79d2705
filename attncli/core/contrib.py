"""Contribution maps: how much each input token moves each output of a layer, beyond the attention weights.

The weights α_ij say how a query mixes the value vectors, not how much of each token reaches the output: a large
weight on a token whose transformed vector is tiny moves nothing (Kobayashi et al. 2020), and the residual
connection and the layer norm carry each token's own information past the heads (Ferrando et al. 2022).
attncli.core.measures' `CONTRIBUTIONS` is the one registry of measures (`--contrib`); here is their maths, in
NumPy, float64 throughout (the model's float32 arrays are read once, exactly widened).
"""

from __future__ import annotations

import numpy as np


def head_vectors(v, w_o) -> np.ndarray:  # [h, n, d_k], [h · d_k, d_model] -> [h, n, d_model] float64
    """f_h(x_j) = v^h_j W_O^h: each head's value vector of token j (bias b_V included: v = x W_V + b_V) through that
    head's rows of the output projection (Kobayashi et al. 2020, §3; b_O belongs to no token).

    >>> f = head_vectors(np.ones((2, 1, 1)), np.array([[1.0, 0.0], [0.0, 2.0]]))  # 2 heads of width 1, d_model 2
    >>> f[:, 0].tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    v = np.asarray(v, np.float64)
    h, _, d_k = v.shape
    w = np.asarray(w_o, np.float64).reshape(h, d_k, -1)  # [h, d_k, d_model]
    return np.matmul(v, w)


def norm_heads(weights, f) -> np.ndarray:  # [h, m, n], [h, n, d] -> [h, m, n]
    """‖α^h_ij f_h(x_j)‖ = α^h_ij ‖f_h(x_j)‖ (α >= 0): each head's weights scaled by the length of what they move.

    >>> norm_heads(np.array([[[0.5, 0.5]]]), np.array([[[3.0, 4.0], [0.0, 0.0]]])).tolist()
    [[[2.5, 0.0]]]
    """
    return np.asarray(weights, np.float64) * np.linalg.norm(f, axis=-1)[:, None, :]


#: The most bytes a block of [rows, n, d] vectors takes whatever the budget: past a few tens of MiB a larger block
#: only adds fresh pages to fault in (MiniLM's 219 tokens: 147 MB in one block, 5x the time of 32 MiB blocks).
BLOCK_BYTES = 32 * 2**20


def rows_per_block(n: int, d: int, budget: int) -> int:
    """Query rows whose [rows, n, d] float64 vectors fit in `budget` bytes and BLOCK_BYTES (at least one)."""
    return max(1, min(budget, BLOCK_BYTES) // max(1, n * d * 8))


def mixed(weights, f, rows: slice) -> np.ndarray:  # [h, m, n], [h, n, d] -> [r, n, d]
    """Σ_h α^h_ij f_h(x_j) for the query rows `rows`: what token j sends to output i through every head.

    One product per key j, [r, h] @ [h, d], all n of them in one batched BLAS call (einsum would loop in C)."""
    a = np.asarray(weights, np.float64)[:, rows]  # [h, r, n]
    return np.matmul(a.transpose(2, 1, 0), np.asarray(f).transpose(1, 0, 2)).transpose(1, 0, 2)


def norm_layer(weights, f, budget: int) -> np.ndarray:  # [h, m, n], [h, n, d] -> [m, n]
    """‖Σ_h α^h_ij f_h(x_j)‖ (Kobayashi et al. 2020, §3, the whole multi-head layer), a block of query rows at a
    time so that the [rows, n, d] vectors stay within `budget` bytes.

    >>> a = np.array([[[1.0, 0.0]], [[1.0, 0.0]]])  # 2 heads, 1 query, 2 keys
    >>> f = np.array([[[1.0, 0.0], [9.0, 9.0]], [[-1.0, 0.0], [9.0, 9.0]]])  # the heads cancel on key 0
    >>> norm_layer(a, f, 1 << 20).tolist()
    [[0.0, 0.0]]
    """
    m, n = np.shape(weights)[-2:]
    out = np.empty((m, n))
    step = rows_per_block(n, np.shape(f)[-1], budget)
    for start in range(0, m, step):
        rows = slice(start, start + step)
        out[rows] = np.linalg.norm(mixed(weights, f, rows), axis=-1)
    return out


def layer_norm_part(u, gamma, centred: bool) -> np.ndarray:  # [..., d], [d] -> [..., d]
    """P(u) = γ ⊙ (u - mean(u)): a layer norm's linear part, but for its scale (Ferrando et al. 2022, §3:
    LN(Σ_j u_j) = Σ_j L_i(u_j) + β, L_i(u) = P(u) / s_i with s_i the standard deviation, or RMSNorm's root mean
    square, of the whole sum at output i, held fixed); β belongs to no token and is left out; `centred` False for
    RMSNorm (no mean). P is linear, so it is applied to each f_h(x_j) and x_j once; the positive 1/s_i scales a whole
    output row, which ALTI's row normalization cancels (`manhattan_shares` of c·T is that of T for c > 0).

    >>> layer_norm_part(np.array([1.0, 3.0]), np.array([2.0, 1.0]), True).tolist()
    [-2.0, 1.0]
    """
    u = np.asarray(u, np.float64)
    u = u - u.mean(axis=-1, keepdims=True) if centred else u
    return u * np.asarray(gamma, np.float64)


def manhattan_shares(t) -> np.ndarray:  # [r, n, d] -> [r, n]
    """ALTI's contributions from the transformed vectors T_i(x_j) (Ferrando et al. 2022, §3): y_i = Σ_j T_i(x_j),
    c_ij = max(0, ‖y_i‖₁ - ‖y_i - T_i(x_j)‖₁), rows normalized to sum 1.

    >>> manhattan_shares(np.array([[[1.0, 0.0], [0.0, 3.0]]])).tolist()  # y = (1, 3): 4 - 3 = 1, 4 - 1 = 3
    [[0.25, 0.75]]
    """
    y = t.sum(axis=1)  # [r, d]
    closeness = np.abs(y).sum(axis=-1)[:, None] - np.abs(y[:, None, :] - t).sum(axis=-1)  # [r, n]
    return normalize_rows(np.maximum(closeness, 0.0))


def alti_layer(weights, f, residual, norm, budget: int) -> np.ndarray:
    # [h, m, n], [h, n, d], [m, d] or None, (γ [d], centred) or None -> [m, n]
    """One layer's ALTI contributions: T_i(x_j) = L_i(Σ_h α^h_ij f_h(x_j) + [i = j] x_j), a block of rows at a time.

    `residual` x_j: what the residual adds (the layer's input stream; None for an attention without one, as
    a cross-attention). `norm`: the layer norm after the sum, as (γ, centred), or None when no norm follows within
    the block (a pre-norm decoder: the block is x + Attn(Norm(x)), whose norm before the attention is a function of
    x_j alone, inside f_h). Biases (b_O, β) are left out: they belong to no token. The norm's linear part is applied
    to f and x first (`layer_norm_part`: its scale 1/s_i cancels in each row's normalization).
    """
    m, n = np.shape(weights)[-2:]
    out = np.empty((m, n))
    f = np.asarray(f, np.float64) if norm is None else layer_norm_part(f, *norm)
    x = None if residual is None else np.asarray(residual, np.float64)
    if x is not None and norm is not None:
        x = layer_norm_part(x, *norm)
    step = rows_per_block(n, f.shape[-1], budget)
    for start in range(0, m, step):
        rows = slice(start, min(m, start + step))
        t = mixed(weights, f, rows)  # [r, n, d]
        if x is not None:
            i = np.arange(rows.start, rows.stop)
            t[i - rows.start, i + (n - m)] += x[i]  # the query's own key: the last m of n (m == n but decoding)
        out[rows] = manhattan_shares(t)
    return out


def alti_out_norm(weights, f, residual, gamma, scale, budget: int) -> np.ndarray:
    # [h, n, n], [h, n, d], [n, d], [d], [n] -> [n, n]
    """One layer's ALTI contributions where a norm acts on the attention's output alone, inside the residual:
    y_i = x_i + N(o_i), o_i = Σ_j Σ_h α^h_ij f_h(x_j) + b_O (Gemma 2 and 3's, OLMo 2's post_attention_layernorm).

    N is RMSNorm, N(o) = γ ⊙ o / rms(o), rms(o) = √(mean(o²) + eps): linear in o once its scale s_i = 1 / rms(o_i)
    at output row i is held fixed, as Ferrando et al. 2022 (§3) linearize a LayerNorm over the whole sum. So

        y_i = Σ_j T_i(x_j) + γ ⊙ b_O s_i,   T_i(x_j) = s_i γ ⊙ (Σ_h α^h_ij f_h(x_j)) + [i = j] x_j,

    the bias term belonging to no token and left out. Unlike a norm after the residual, s_i scales the attention's
    part of row i and not its residual, so it does not cancel in the row's normalization: the caller gives the
    scales of the whole o_i, bias included (`scale`). The Manhattan shares as `alti_layer`, a block of rows at a time.

    >>> a = np.array([[[1.0, 0.0], [0.5, 0.5]]])  # 1 head, 2 tokens
    >>> f = np.array([[[2.0, 0.0], [0.0, 2.0]]])
    >>> x = np.array([[1.0, 0.0], [0.0, 1.0]])  # row 1: T = (1, 0) and (0, 1) + (0, 1); y = (1, 2): 3 - 2, 3 - 1
    >>> alti_out_norm(a, f, x, np.ones(2), np.array([0.5, 1.0]), 1 << 20).tolist()
    [[1.0, 0.0], [0.3333333333333333, 0.6666666666666666]]
    """
    m, n = np.shape(weights)[-2:]
    out = np.empty((m, n))
    f = layer_norm_part(f, gamma, False)
    x, s = np.asarray(residual, np.float64), np.asarray(scale, np.float64)
    step = rows_per_block(n, f.shape[-1], budget)
    for start in range(0, m, step):
        rows = slice(start, min(m, start + step))
        t = mixed(weights, f, rows) * s[rows, None, None]  # [r, n, d]
        i = np.arange(rows.start, rows.stop)
        t[i - rows.start, i] += x[i]
        out[rows] = manhattan_shares(t)
    return out


def alti_cross(weights, f, residual, norm, budget: int) -> np.ndarray:
    # [h, m, n], [h, n, d], [m, d], (γ [d], centred) or None -> [m, n + 1]
    """One cross-attention block's ALTI contributions (ALTI+, Ferrando et al. 2022b, 'Towards Opening the Black
    Box of Neural Machine Translation', §3): the output of decoder token i decomposed into what each source token j
    sends through the heads, T_i(s_j) = L_i(Σ_h α^h_ij f_h(s_j)), f_h of the encoder's output, and what the residual
    carries, T_i(r) = L_i(y_i), the decoder's own stream at i (one vector: the target side, as a last column).
    `norm` and the Manhattan shares as `alti_layer`; each row of the n + 1 columns sums to 1.

    >>> a = np.array([[[1.0, 0.0]]])  # 1 head, 1 decoder token, 2 source tokens
    >>> alti_cross(a, np.array([[[1.0, 0.0], [5.0, 5.0]]]), np.array([[0.0, 3.0]]), None, 1 << 20).tolist()
    [[0.25, 0.0, 0.75]]
    """
    m, n = np.shape(weights)[-2:]
    out = np.empty((m, n + 1))
    f = np.asarray(f, np.float64) if norm is None else layer_norm_part(f, *norm)
    y = np.asarray(residual, np.float64) if norm is None else layer_norm_part(residual, *norm)
    step = rows_per_block(n + 1, f.shape[-1], budget)
    for start in range(0, m, step):
        rows = slice(start, min(m, start + step))
        t = np.concatenate([mixed(weights, f, rows), y[rows, None, :]], axis=1)  # [r, n + 1, d]
        out[rows] = manhattan_shares(t)
    return out


def normalize_rows(c) -> np.ndarray:  # [..., m, n] >= 0 -> [..., m, n], rows sum to 1 (a zero row stays zero)
    """Each row divided by its sum: the share of each input in the output.

    >>> normalize_rows(np.array([[1.0, 3.0], [0.0, 0.0]])).tolist()
    [[0.25, 0.75], [0.0, 0.0]]
    """
    total = c.sum(axis=-1, keepdims=True)
    return np.divide(c, total, out=np.zeros_like(c, dtype=np.float64), where=total > 0)


def cosine_distance(a, b) -> np.ndarray:  # [..., d], [..., d] -> [...] float64
    """1 - cos(a, b), in float64 (Mohebbi et al. 2023's distance between an output and its value-zeroed self).

    >>> cosine_distance(np.array([1.0, 0.0]), np.array([[1.0, 0.0], [0.0, 2.0]])).tolist()
    [0.0, 1.0]
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    cos = (a * b).sum(axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return 1.0 - cos


def roll(layers) -> np.ndarray:  # L x [n, n] -> [n, n]
    """Contributions rolled out across layers, R_l = C_l R_(l-1), R_0 = C_0 (Ferrando et al. 2022, §3, as
    attention rollout's product of Abnar & Zuidema 2020, without its added identity: C already holds the residual).

    >>> roll([np.array([[1.0, 0.0], [0.5, 0.5]])] * 2).tolist()
    [[1.0, 0.0], [0.75, 0.25]]
    """
    return rollouts(layers)[-1]


def rollouts(layers) -> list[np.ndarray]:  # L x [n, n] -> L x [n, n]
    """Every layer's rollout R_0, R_1, ..., R_(L-1) of `roll`, each product made once (L - 1 products for all).

    >>> [r.tolist() for r in rollouts([np.array([[1.0, 0.0], [0.5, 0.5]])] * 2)]
    [[[1.0, 0.0], [0.5, 0.5]], [[1.0, 0.0], [0.75, 0.25]]]
    """
    out = [np.asarray(layers[0], np.float64)]
    for c in layers[1:]:
        out.append(np.asarray(c, np.float64) @ out[-1])
    return out
