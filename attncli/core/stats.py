"""What attention heads do, from their weights (rows = queries, columns = keys, rows sum to 1).

`head_summaries` describes each head of one run ([h, m, n]: `attn show --stats`, `attn compare`);
`head_stats` gives one number per head and layer of a model ([L, h, n, n]: `attn heads`), with a
label for clear patterns, and `cross_head_stats` the same for a cross-attention ([L, h, m, n], target
rows over source columns: `attn heads --part cross`); over a corpus (`attn heads --lines`), `attncli.core.corpus`;
`rollout` follows attention through the layers, `cross_rollout` through an encoder–decoder. What each
statistic is called and means lives in the registry `attncli.core.statistics`. Entropies are in bits,
and 0 · log 0 counts as 0:

    >>> row_entropy(np.array([[0.5, 0.5], [1.0, 0.0]])).tolist()
    [1.0, 0.0]
    >>> s = head_summaries(np.array([[[0.5, 0.5], [0.25, 0.75]]]))[0]
    >>> s["mean_entropy_bits"], s["diagonal_mass"], s["mean_distance"]
    (0.9056390622295665, 0.625, 0.375)

A row that a mask empties completely (all weights 0) has no distribution: it is left out of every
mean of `head_summaries`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from attncli.core.statistics import PATTERNS, SINK_EPSILON, SINK_POSITIONS, SINKS, STATISTICS
from attncli.errors import DataError

# ---- one run: a summary per head ------------------------------------------------------------------

TOP_K = 3


def row_entropy(weights: np.ndarray) -> np.ndarray:  # [..., n] -> [...]
    """Shannon entropy of each row, in bits: -Σ_j a_j log2 a_j (0 for an all-zero row)."""
    w = np.asarray(weights, dtype=float)
    # log2 of max(a_j, the least positive float64): log2 a_j itself wherever a_j > 0, and -1074 where a_j = 0, whose
    # a_j log2 a_j is then exactly 0 (as 0 log 0 is taken to be); plain passes, not a masked one (`where=`)
    logs = np.log2(np.maximum(w, np.finfo(np.float64).smallest_subnormal))
    logs *= w
    return -logs.sum(axis=-1) + 0.0  # + 0.0 turns -0.0 into 0.0


def entropy_scale(mean_entropy: float | None, n: int) -> tuple[float, float | None]:
    """The largest entropy of a row over n keys, log2 n bits, and `mean_entropy` as a share of it (None when
    there is no mean, or one key: log2 1 = 0).

    >>> entropy_scale(1.5, 4)
    (2.0, 0.75)
    """
    top = math.log2(n)
    return top, None if mean_entropy is None or n == 1 else mean_entropy / top


def _live(weights: np.ndarray) -> np.ndarray:  # [m, n] -> [m] bool
    """Rows that hold a distribution (not emptied by a mask)."""
    return weights.sum(axis=-1) > 0


def _mean(values: np.ndarray) -> float | None:  # [k] -> float, None when empty
    return float(values.mean()) if values.size else None


def top_keys(weights: np.ndarray, k: int = TOP_K) -> np.ndarray:  # [m, n] -> [m, min(k, n)]
    """The indices of the k largest weights of each row, largest first; ties go to the lower key index.

    >>> top_keys(np.array([[0.2, 0.5, 0.3], [0.4, 0.2, 0.4]]), 2).tolist()
    [[1, 2], [0, 2]]
    """
    return np.argsort(-weights, axis=-1, kind="stable")[:, :k]


def head_summaries(
    weights: np.ndarray, self_attention: bool = True, k: int = TOP_K, masked: np.ndarray | None = None
) -> list[dict]:  # [h, m, n], [h, m, n] bool -> one dict per head
    """Per head: mean row entropy (bits, and over its maximum log2 n), the largest weight and where it is,
    the mean mass on the diagonal (self-attention only: a_ii, each token's weight on itself), the mean
    attended distance Σ_j a_ij |i - j| (in positions), and the top k keys of each query (never a `masked`
    key: a row of a causal mask lists at most its own and earlier keys).

        >>> s = head_summaries(np.array([[[1.0, 0.0], [0.4, 0.6]]]), masked=np.array([[[False, True], [False, False]]]))
        >>> s[0]["top_keys"], s[0]["top_weights"]
        ([[0], [1, 0]], [[1.0], [0.6, 0.4]])
    """
    h, m, n = weights.shape
    distance = np.abs(np.arange(m)[:, None] - np.arange(n)[None, :])  # [m, n]
    out = []
    for head in range(h):
        w = weights[head]  # [m, n]
        live = _live(w)
        entropy = row_entropy(w)  # [m]
        i, j = np.unravel_index(int(np.argmax(w)), w.shape)
        mean_entropy = _mean(entropy[live])
        max_entropy, ratio = entropy_scale(mean_entropy, n)
        top = top_keys(w, k).tolist()
        keys = top if masked is None else [[j for j in row if not masked[head, r, j]] for r, row in enumerate(top)]
        out.append(
            {
                "head": head,
                "mean_entropy_bits": mean_entropy,
                "max_entropy_bits": max_entropy,
                "entropy_ratio": ratio,
                "largest_weight": float(w[i, j]),
                "largest_at": [int(i), int(j)],
                "diagonal_mass": _mean(np.diagonal(w)[live]) if self_attention and m == n else None,
                "mean_distance": _mean((w * distance).sum(axis=-1)[live]),
                "mean_row_max": _mean(w.max(axis=-1)[live]),
                "top_keys": keys,
                "top_weights": [[float(w[r, j]) for j in row] for r, row in enumerate(keys)],
            }
        )
    return out


# ---- a model: one number per head and layer ------------------------------------------------------

PATTERN_MASS = 0.5  # a head earns the label of a mass of PATTERNS (previous-token, diagonal, first-token) >= 0.5
BROAD = 0.8  # a head is "broad" if its broadness >= 0.8 (and no pattern above applies)


def head_stats(weights, causal: bool = False) -> dict[str, np.ndarray]:  # [L, h, n, n] -> {stat: [L, h]}
    """Every statistic of `attn heads` (statistics.SELF, by column) for every head, as float64 [L, n_head] arrays.

    Each is the mean over query rows. With `causal`, row 0 is left out whenever n > 1: it can see
    only itself, so it would count as diagonal and first-token mass in every head. `previous`
    always uses rows 1..n-1 (0 when n = 1).
    """
    a = np.asarray(weights, dtype=np.float64)  # [L, h, n, n]
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise DataError(f"head_stats wants weights [layers, heads, n, n], got shape {list(a.shape)}")
    n = a.shape[-1]
    rows = slice(1, None) if causal and n > 1 else slice(None)
    entropy = row_entropy(a)  # [L, h, n]
    keys = np.arange(1, n + 1) if causal else np.full(n, n)  # keys each query row may see
    seen = keys > 1
    broad = (entropy[..., seen] / np.log2(keys[seen])).mean(axis=-1) if seen.any() else np.zeros(a.shape[:2])
    previous = np.diagonal(a, offset=-1, axis1=-2, axis2=-1)  # [L, h, n-1]: a[i, i-1] for i >= 1
    return {
        "entropy": entropy[..., rows].mean(axis=-1),
        "max": a.max(axis=-1)[..., rows].mean(axis=-1),
        "diagonal": np.diagonal(a, axis1=-2, axis2=-1)[..., rows].mean(axis=-1),
        "previous": previous.mean(axis=-1) if n > 1 else np.zeros(a.shape[:2]),
        "first-token": a[..., :, 0][..., rows].mean(axis=-1),
        "broadness": broad,
    }


def sink_stats(weights, positions: int = SINK_POSITIONS, epsilon: float = SINK_EPSILON) -> dict:
    # [L, h, n, n] -> {"first": [L, h, k], "sink": [L, h] bool, "sink_rate": float}
    """Attention sinks as Gu et al. 2025 measure them ('When attention sink emerges in language models', §3):
    α_k = mean over the queries i >= k of a[i, k], the mean weight on key k of the queries that may see it (all
    of an encoder's see it too: the mean runs over i >= k either way, as the paper's); a head is a sink head when
    α_0 > ε; Sink^ε, the sink rate, is the share of the model's heads that are.

    >>> a = np.array([[[[1.0, 0.0], [0.5, 0.5]], [[1.0, 0.0], [0.0, 1.0]]]])  # 1 layer, 2 causal heads
    >>> s = sink_stats(a, positions=2)
    >>> s["first"].tolist(), s["sink"].tolist(), s["sink_rate"]
    ([[[0.75, 0.5], [0.5, 1.0]]], [[True, True]], 1.0)
    """
    a = np.asarray(weights, dtype=np.float64)
    n = a.shape[-1]
    k = min(positions, n)
    first = np.stack([a[..., j:, j].mean(axis=-1) for j in range(k)], axis=-1)  # [L, h, k]
    return sink_heads(first, epsilon)


def sink_heads(first, epsilon: float = SINK_EPSILON) -> dict:
    # [L, h, k] -> {"first": [L, h, k], "sink": [L, h] bool, "sink_rate": float}
    """Gu et al. 2025's sink heads (α_0 > ε) and sink rate Sink^ε from each head's α_k, `first`.

    >>> s = sink_heads(np.array([[[0.9, 0.1], [0.2, 0.5]]]))
    >>> s["sink"].tolist(), s["sink_rate"]
    ([[True, False]], 0.5)
    """
    first = np.asarray(first, dtype=np.float64)
    sink = first[..., 0] > epsilon
    return {"first": first, "sink": sink, "sink_rate": float(sink.mean())}


def massive_activations(hidden) -> np.ndarray:  # [L, n, d] -> [L, n]
    """‖h_l[i]‖ / median_j ‖h_l[j]‖: each position's residual stream norm over the layer's median (Sun et al.
    2024, 'Massive activations in large language models', §2: a few streams, often the first token's, are
    hundreds of times the median).

    >>> massive_activations(np.array([[[30.0, 40.0], [3.0, 4.0], [0.0, 5.0]]])).tolist()
    [[10.0, 1.0, 1.0]]
    """
    return massive_activations_of(np.linalg.norm(np.asarray(hidden, dtype=np.float64), axis=-1))


def massive_activations_of(norms) -> np.ndarray:  # [L, n] -> [L, n]
    """Each position's residual norm over the median of its layer's (`massive_activations` from the norms)."""
    norms = np.asarray(norms, dtype=np.float64)
    return norms / np.median(norms, axis=-1, keepdims=True)


def sinks_section(weights, hidden, tokens: list[str]) -> dict:  # [L, h, n, n], [L, n, d] -> `attn heads`' "sinks"
    """`attn heads -f json`'s "sinks": per head the mean weight on each of the first positions and whether it is a
    sink head (`sink_stats`), the model's sink rate, and per layer each position's residual norm over the median
    (`massive_activations`); with what each measures (statistics.SINKS)."""
    s = sink_stats(weights)
    return sinks_document(s, massive_activations(hidden), tokens[: s["first"].shape[-1]])


def sinks_document(s: dict, massive, positions: list) -> dict:
    # sink_heads' {"first": [L, h, k], "sink": [L, h]}, [L, n] -> `attn heads`' "sinks"
    """The sinks section from `sink_heads`' numbers, the residual norms over the median `massive` and the tokens
    at the first `positions` (a corpus's: None where its texts differ), one text's or a corpus's alike."""
    L, h = s["sink"].shape
    return {
        "epsilon": SINK_EPSILON,
        "positions": positions,
        "stats": {name: STATISTICS[name].sinks for name in SINKS},
        "first": s["first"].tolist(),
        "sink": s["sink"].tolist(),
        "sink_rate": s["sink_rate"],
        "sink_heads": [[l, k] for l in range(L) for k in range(h) if s["sink"][l, k]],
        "massive_activation": np.asarray(massive).tolist(),
    }


def head_rows(weights, causal: bool = False) -> list[dict]:  # [L, h, n, n] -> one dict per head
    """Every head's `head_stats` by column and its label, layer after layer: the rows of `attn heads -f json`."""
    stats = head_stats(weights, causal)
    labels = label_heads(stats)
    n_layer, n_head = len(labels), len(labels[0])
    return [
        {"layer": l, "head": h, **{k: float(v[l, h]) for k, v in stats.items()}, "label": labels[l][h]}
        for l in range(n_layer)
        for h in range(n_head)
    ]


def label_head(values: Mapping[str, float], patterns: tuple[str, ...] = PATTERNS) -> str:
    """One head's pattern label from its statistics (column -> value): "previous-token" | "diagonal" |
    "first-token/sink" | "broad" | "" for self-attention, "diagonal-alignment" | "first-token/sink" |
    "last-token/sink" | "broad" | "" with `patterns=CROSS_PATTERNS`.

    The mass of `patterns` (all but the last) that is >= PATTERN_MASS (0.5) and largest wins (ties in that
    order); otherwise the last, broadness, if it is >= BROAD (0.8), i.e. the rows are close to uniform; else "".

    >>> label_head({"previous": 0.5, "diagonal": 0.5, "first-token": 0.0, "broadness": 1.0})
    'previous-token'
    """
    *masses, broad = (STATISTICS[name] for name in patterns)
    best = max(masses, key=lambda s: values[s.key])  # first of the order on ties
    if values[best.key] >= PATTERN_MASS:
        return best.label
    return broad.label if values[broad.key] >= BROAD else ""


def label_heads(stats: dict[str, np.ndarray], patterns: tuple[str, ...] = PATTERNS) -> list[list[str]]:
    # {stat: [L, h]} -> [L][h] labels
    """label_head for every head of `head_stats(...)` (or of `cross_head_stats(...)`, with CROSS_PATTERNS)."""
    n_layer, n_head = next(iter(stats.values())).shape
    return [
        [label_head({k: v[l, h] for k, v in stats.items()}, patterns) for h in range(n_head)] for l in range(n_layer)
    ]


# ---- cross-attention: rows are the target's tokens, columns the source's ---------------------------


def cross_head_stats(weights) -> dict[str, np.ndarray]:  # [L, h, m, n] -> {stat: [L, h]}
    """Every statistic of statistics.CROSS for every head of a cross-attention, as float64 [L, n_head] arrays.

    >>> a = np.array([[[[0.75, 0.25, 0.0], [0.0, 0.25, 0.75]]]])  # one head, 2 target rows over 3 source tokens
    >>> s = cross_head_stats(a)
    >>> float(s["diagonality"][0, 0]), float(s["monotonic"][0, 0]), float(s["last-token"][0, 0])
    (0.75, 1.0, 0.375)
    """
    a = np.asarray(weights, dtype=np.float64)  # [L, h, m, n]
    if a.ndim != 4:
        raise DataError(f"cross_head_stats wants weights [layers, heads, m, n], got shape {list(a.shape)}")
    m, n = a.shape[-2:]
    centre = np.arange(m) * ((n - 1) / (m - 1) if m > 1 else 0.0)  # [m]: the proportional diagonal
    band = np.abs(np.arange(n)[None, :] - centre[:, None]) < 1  # [m, n]: the keys either side of it
    entropy = row_entropy(a)  # [L, h, m]
    strongest = a.argmax(axis=-1)  # [L, h, m]
    forward = (np.diff(strongest, axis=-1) >= 0).mean(axis=-1) if m > 1 else np.ones(a.shape[:2])
    return {
        "entropy": entropy.mean(axis=-1),
        "max": a.max(axis=-1).mean(axis=-1),
        "diagonality": (a * band).sum(axis=-1).mean(axis=-1),
        "monotonic": forward,
        "first-token": a[..., 0].mean(axis=-1),
        "last-token": a[..., -1].mean(axis=-1),
        "broadness": (entropy / math.log2(n)).mean(axis=-1) if n > 1 else np.zeros(a.shape[:2]),
    }


def _with_residual(a) -> np.ndarray:  # [n_head, m, n] -> [m, n]
    """Abnar & Zuidema's Â: the mean of the heads plus the identity for the residual, rows renormalised."""
    a_hat = np.asarray(a, dtype=np.float64).mean(axis=0) + np.eye(*np.shape(a)[-2:])
    return a_hat / a_hat.sum(axis=-1, keepdims=True)


def cross_rollout(
    encoder: Sequence[np.ndarray], decoder: Sequence[np.ndarray], cross: Sequence[np.ndarray], upto_layer: int
) -> tuple[np.ndarray, np.ndarray]:
    # L_enc x [h, n, n], L_dec x [h, m, m], L_dec x [h, m, n] -> [m, m], [m, n]
    """Attention rollout through an encoder–decoder: how much of each target input token (T) and each source
    token (S) has flowed into each target position after decoder layer `upto_layer`; rows of [T | S] sum to 1.

    Abnar & Zuidema's (2020) rollout, carried through the cross-attention after the encoder–decoder rule of
    Chefer, Gur & Wolf (2021) (there with gradient-weighted heads, here plain head means): the source's flows
    are the encoder's rollout E (every encoder layer: the decoder reads the encoder's last); per decoder layer
    the self-attention mixes the target positions, T, S <- Â T, Â S, and the cross-attention (heads averaged,
    C) adds the source through its residual half and half, T, S <- ½ T, ½ S + ½ C E. T starts as the
    identity and S at 0.

    >>> t, s = cross_rollout([np.eye(2)[None]], [np.eye(1)[None]], [np.array([[[0.25, 0.75]]])], 0)
    >>> t.tolist(), s.tolist()
    ([[0.5]], [[0.125, 0.375]])
    """
    if not 0 <= upto_layer < len(decoder) == len(cross):
        raise DataError(f"rollout layer {upto_layer} is out of range: a decoder of {len(decoder)} layers")
    e = rollout(encoder)  # [n, n]
    m, n = np.shape(cross[0])[-2:]
    t, s = np.eye(m), np.zeros((m, n))
    for a, c in zip(decoder[: upto_layer + 1], cross[: upto_layer + 1]):
        a_hat = _with_residual(a)  # [m, m]
        t, s = 0.5 * (a_hat @ t), 0.5 * (a_hat @ s) + 0.5 * (np.asarray(c, dtype=np.float64).mean(axis=0) @ e)
    return t, s


def rollout(weights: Sequence[np.ndarray], upto_layer: int | None = None) -> np.ndarray:
    # L x [n_head, n, n] -> [n, n]
    """Attention rollout (Abnar & Zuidema 2020) through layers 0..upto_layer (default: all given).

    Per layer: average the heads, add the identity for the residual connection, renormalise the
    rows (= ½A + ½I); then multiply from layer 0 up, R_l = Â_l R_(l-1). Row i of the result says
    how much each input token flows into position i after that layer; rows sum to 1.
    """
    if len(weights) == 0:
        raise DataError("rollout needs the weights of at least one layer")
    last = len(weights) - 1 if upto_layer is None else upto_layer
    if not 0 <= last < len(weights):
        raise DataError(
            f"rollout layer {upto_layer} is out of range: weights of {len(weights)} layers, 0..{len(weights) - 1}"
        )
    r = np.eye(np.shape(weights[0])[-1])
    for a in weights[: last + 1]:
        r = _with_residual(a) @ r  # [n, n]
    return r
