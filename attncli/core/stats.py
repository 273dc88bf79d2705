"""What attention heads do, from their weights (rows = queries, columns = keys, rows sum to 1).

`head_summaries` describes each head of one run ([h, m, n]: `attn show --stats`, `attn compare`);
`head_stats` gives one number per head and layer of a model ([L, h, n, n]: `attn heads`), with a
label for clear patterns, and `cross_head_stats` the same for a cross-attention ([L, h, m, n], target
rows over source columns: `attn heads --part cross`); `rollout` follows attention through the layers,
`cross_rollout` through an encoder–decoder. Entropies are in bits,
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
from collections.abc import Sequence

import numpy as np

from attncli.errors import DataError

# ---- one run: a summary per head ------------------------------------------------------------------

TOP_K = 3


def row_entropy(weights: np.ndarray) -> np.ndarray:  # [..., n] -> [...]
    """Shannon entropy of each row, in bits: -Σ_j a_j log2 a_j (0 for an all-zero row)."""
    w = np.asarray(weights, dtype=float)
    logs = np.log2(w, out=np.zeros_like(w), where=w > 0)
    return -(w * logs).sum(axis=-1) + 0.0  # + 0.0 turns -0.0 into 0.0


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
        top = top_keys(w, k).tolist()
        keys = top if masked is None else [[j for j in row if not masked[head, r, j]] for r, row in enumerate(top)]
        out.append(
            {
                "head": head,
                "mean_entropy_bits": mean_entropy,
                "max_entropy_bits": math.log2(n),
                "entropy_ratio": None if mean_entropy is None or n == 1 else mean_entropy / math.log2(n),
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

HEAD_STATS = {  # name -> what the number in a cell means (all are means over query rows)
    "entropy": "entropy of each row in bits: 0 = one key, log2(keys) = uniform",
    "max": "largest weight of each row: how peaked the head is",
    "diagonal": "weight on the query itself (key i for query i)",
    "previous": "weight on the token just before the query (key i-1 for query i; rows i >= 1)",
    "first-token": "weight on the first token ([CLS] in BERT): an 'attention sink'",
    "broadness": "row entropy divided by its maximum log2(keys): 1 = uniform over the keys it may see",
}

PATTERN_MASS = 0.5  # a head is "previous-token", "diagonal" or "first-token/sink" if that mass >= 0.5
BROAD = 0.8  # a head is "broad" if its broadness >= 0.8 (and no pattern above applies)
LABELS = ("previous-token", "diagonal", "first-token/sink", "broad")


def head_stats(weights, causal: bool = False) -> dict[str, np.ndarray]:  # [L, h, n, n] -> {stat: [L, h]}
    """Every statistic of HEAD_STATS for every head, as float64 [L, n_head] arrays.

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


def label_head(diagonal: float, previous: float, first_token: float, broadness: float) -> str:
    """One head's pattern: "previous-token" | "diagonal" | "first-token/sink" | "broad" | "".

    The pattern whose mass is >= PATTERN_MASS (0.5) and largest wins (ties in that order);
    otherwise "broad" if broadness >= BROAD (0.8), i.e. the rows are close to uniform; else "".
    """
    masses = {"previous-token": previous, "diagonal": diagonal, "first-token/sink": first_token}
    best = max(masses, key=lambda label: masses[label])  # first of the order on ties
    if masses[best] >= PATTERN_MASS:
        return best
    return "broad" if broadness >= BROAD else ""


def label_heads(stats: dict[str, np.ndarray]) -> list[list[str]]:  # {stat: [L, h]} -> [L][h] labels
    """label_head for every head of `head_stats(...)`."""
    d, p, f, b = stats["diagonal"], stats["previous"], stats["first-token"], stats["broadness"]
    return [[label_head(d[l, h], p[l, h], f[l, h], b[l, h]) for h in range(d.shape[1])] for l in range(d.shape[0])]


# ---- cross-attention: rows are the target's tokens, columns the source's ---------------------------

CROSS_STATS = {  # name -> what the number means for cross-attention [target x source] (means over target rows)
    "entropy": "entropy of each row over the source tokens in bits: 0 = one source token, log2(source) = uniform",
    "max": "largest weight of each row: how sharp the alignment is",
    "diagonality": "weight on the one or two source tokens nearest the proportional diagonal j = i (n-1)/(m-1) "
    "(row i of m target tokens, column j of n source tokens): an alignment that keeps the word order",
    "monotonic": "share of consecutive target tokens whose strongest source token does not move left: 1 = a "
    "monotonic alignment (1 for a single target token)",
    "first-token": "weight on the first source token",
    "last-token": "weight on the last source token (the </s>, or mBART's language code, that ends a source)",
    "broadness": "row entropy divided by its maximum log2(source tokens): 1 = uniform over the source",
}
CROSS_UNDEFINED = {  # the self-attention statistics that mean nothing across two sequences, and why
    "diagonal": "a[i, i] would pair target token i with source token i of another sentence; see diagonality, "
    "the weight near the proportional diagonal",
    "previous": "the token before a target token is in the target, not among the source keys; see monotonic",
}
CROSS_LABELS = ("diagonal-alignment", "first-token/sink", "last-token/sink", "broad")


def cross_head_stats(weights) -> dict[str, np.ndarray]:  # [L, h, m, n] -> {stat: [L, h]}
    """Every statistic of CROSS_STATS for every head of a cross-attention, as float64 [L, n_head] arrays.

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


def label_cross_head(diagonality: float, first_token: float, last_token: float, broadness: float) -> str:
    """One cross-attention head's pattern: "diagonal-alignment" | "first-token/sink" | "last-token/sink" | "broad" | "".

    As label_head: the mass >= PATTERN_MASS that is largest (ties in that order), else "broad" if broadness >= BROAD.
    """
    masses = dict(zip(CROSS_LABELS[:3], (diagonality, first_token, last_token)))
    best = max(masses, key=lambda label: masses[label])
    if masses[best] >= PATTERN_MASS:
        return best
    return "broad" if broadness >= BROAD else ""


def label_cross_heads(stats: dict[str, np.ndarray]) -> list[list[str]]:  # {stat: [L, h]} -> [L][h] labels
    """label_cross_head for every head of `cross_head_stats(...)`."""
    d, f, e, b = (stats[k] for k in ("diagonality", "first-token", "last-token", "broadness"))
    return [
        [label_cross_head(d[l, h], f[l, h], e[l, h], b[l, h]) for h in range(d.shape[1])] for l in range(d.shape[0])
    ]


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
