"""Head statistics over a corpus (`attn heads --lines`): per-row values, kept as mergeable moments.

One text gives, for every layer and head, one value per query row of each statistic and head detector
(statistics.CORPUS and DETECTED; TransformerLens's head detectors are the model); a corpus is the rows of all
its texts. `Moments` keeps count, sum and sum of squares per head, so partial results of any split of the
corpus merge exactly (map: one partition's `CorpusStats`; reduce: `merge`), whatever runs them: one process,
a worker pool, or a Dask cluster. Induction is measured on a random token sequence repeated twice (r r):
the weight on the token after the earlier copy, a[i, i - P + 1] for rows i in the second copy (P = the
period; see `induction_rows`).

What each row's value means is `attncli.core.stats`' (one text) and the registry `attncli.core.statistics`'.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attncli.core.statistics import SINK_POSITIONS, STATISTICS
from attncli.core.stats import massive_activations_of, row_entropy, sink_heads


def text_rows(weights: np.ndarray, ids: np.ndarray, causal: bool) -> dict[str, np.ndarray]:
    # [L, h, n, n], [n] -> {name: [L, h, rows]}
    """The per-row values of every statistic and detector but induction for one text (`batch_rows` of one).

    >>> a = np.array([[[[1.0, 0, 0], [0.9, 0.1, 0], [0.1, 0.8, 0.1]]]])  # [L=1, h=1, n=3, n=3]
    >>> rows = text_rows(a, np.array([5, 7, 5]), causal=True)
    >>> rows["previous-token"].round(2).tolist(), rows["duplicate-token"].round(2).tolist()
    ([[[0.9, 0.8]]], [[[0.1]]])
    """
    ids = np.asarray(ids)
    return batch_rows(np.asarray(weights)[None], ids[None], np.array([len(ids)]), causal)


def batch_rows(weights: np.ndarray, ids: np.ndarray, lengths: np.ndarray, causal: bool) -> dict[str, np.ndarray]:
    # [B, L, h, n, n], [B, n], [B] -> {name: [L, h, rows]}
    """The per-row values of every statistic and detector but induction for a padded batch of texts: text b
    is its first lengths[b] tokens (its padding keys carry no weight; padding rows and ids are ignored). The
    rows of every text, text after text. With `causal`, row 0 (which can see only itself) is left out of
    the statistics and of the first-token sink. Also, under `sink_key(k)`, the weight on key k of every query
    i >= k, row 0 too (`sink_stats`' α_k, whose mean over a corpus is over all those rows of all its texts)."""
    n = weights.shape[-1]
    lengths = np.asarray(lengths)
    at = np.arange(n)
    real = at[None, :] < lengths[:, None]  # [B, n]
    rows = real & (at[None, :] >= np.where(causal & (lengths > 1), 1, 0)[:, None])
    ids = np.where(real, ids, -1)
    earlier = (ids[:, :, None] == ids[:, None, :]) & np.tri(n, n, -1, dtype=bool) & real[:, :, None]  # [B, n, n]
    far, copies = np.abs(at[:, None] - at[None, :]).astype(np.float64), earlier.astype(np.float64)
    names = ("entropy", "distance", "diagonal", "first-token", "previous-token", "duplicate-token")
    layers: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for l in range(weights.shape[1]):  # a layer at a time: its [B, h, n, n] stays in the caches
        a = np.asarray(weights[:, l], dtype=np.float64)
        values = (
            row_entropy(a),
            np.einsum("bhij,ij->bhi", a, far),
            np.diagonal(a, axis1=-2, axis2=-1),
            a[..., 0],
            np.diagonal(a, offset=-1, axis1=-2, axis2=-1),
            np.einsum("bhij,bij->bhi", a, copies),
        )
        for name, value in zip(names, values):
            layers[name].append(value)
        for k in range(min(SINK_POSITIONS, n)):  # Gu et al.'s α_k: key k's weight from every query i >= k
            layers.setdefault(sink_key(k), []).append(a[..., k])
    masks = {"previous-token": real[:, 1:], "duplicate-token": earlier.any(axis=-1)}
    masks |= {sink_key(k): real & (at[None, :] >= k) for k in range(min(SINK_POSITIONS, n))}
    # [B, L, h, m] -> [L, h, B, m] -> the masked rows, text after text
    out = {name: np.moveaxis(np.stack(v, axis=1), 0, 2)[..., masks.get(name, rows)] for name, v in layers.items()}
    none = np.zeros((*weights.shape[1:3], 0))  # [L, h, 0]: a key k no text of the batch reaches has no rows
    return out | {sink_key(k): none for k in range(n, SINK_POSITIONS)}


def sink_key(k: int) -> str:
    """The name of α_k's moments in a corpus's `CorpusStats` (the weight on key k of each query i >= k)."""
    return f"{STATISTICS['sink'].name}:{k}"


def induction_rows(weights: np.ndarray, start: int, period: int) -> np.ndarray:  # [L, h, n, n] -> [L, h, rows]
    """On tokens `prefix + r + r` (r of length `period` starting at `start`), the weight each query of the
    second copy puts on the token after its earlier copy: row i, key i - period + 1."""
    a = np.asarray(weights, dtype=np.float64)
    rows = np.arange(start + period, start + 2 * period - 1)  # the last query has no "next" token to find
    return a[..., rows, rows - period + 1]


@dataclass
class Moments:
    """Count, sum and sum of squares of one value per head: merge by adding; mean and spread at the end."""

    count: int = 0
    total: np.ndarray | float = 0.0  # [L, h]
    squares: np.ndarray | float = 0.0  # [L, h]

    def add(self, values: np.ndarray) -> None:  # [L, h, rows]
        self.count += values.shape[-1]
        self.total = self.total + values.sum(axis=-1)
        self.squares = self.squares + (values * values).sum(axis=-1)

    def merge(self, other: Moments) -> Moments:
        return Moments(self.count + other.count, self.total + other.total, self.squares + other.squares)

    def mean(self) -> np.ndarray | None:  # -> [L, h]
        return None if not self.count else np.asarray(self.total) / self.count

    def std(self) -> np.ndarray | None:  # -> [L, h], the population standard deviation over rows
        mean = self.mean()
        if mean is None:
            return None
        return np.sqrt(np.maximum(np.asarray(self.squares) / self.count - mean * mean, 0.0))


@dataclass
class Streams:
    """Sun et al.'s massive activations over a corpus: per layer and position, the sum over the texts of the
    residual norm over its text's median (`massive_activations`), and how many texts reach each position; merged
    by adding (the longer's positions kept), their mean the corpus's ratio at each position.

    >>> a, b = Streams(), Streams()
    >>> a.add(np.array([[1.0, 3.0]])); b.add(np.array([[3.0, 1.0, 5.0]]))
    >>> a.merge(b).mean().tolist()
    [[2.0, 2.0, 5.0]]
    """

    total: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # [L, N]
    count: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # [N]

    def add(self, ratios: np.ndarray) -> None:  # [L, n] one text's
        merged = self.merge(Streams(np.asarray(ratios, dtype=np.float64), np.ones(np.shape(ratios)[-1], np.int64)))
        self.total, self.count = merged.total, merged.count

    def merge(self, other: Streams) -> Streams:
        if not self.count.size or not other.count.size:
            return other if not self.count.size else self
        layers, n = self.total.shape[0], max(self.count.size, other.count.size)
        total, count = np.zeros((layers, n)), np.zeros(n, dtype=np.int64)
        for part in (self, other):
            total[:, : part.count.size] += part.total
            count[: part.count.size] += part.count
        return Streams(total, count)

    def mean(self) -> np.ndarray:  # -> [L, N]
        return self.total / self.count


def leading(a: tuple, b: tuple) -> tuple:
    """The tokens at the first positions that two sets of texts share: the id where both have the same one (or
    one set has none there: None), -1 where they differ.

    >>> leading((1, 5, 7), (1, 6)), leading((), (2,))
    ((1, -1, 7), (2,))
    """
    n = max(len(a), len(b))
    a, b = a + (None,) * (n - len(a)), b + (None,) * (n - len(b))
    return tuple(x if y is None or x == y else y if x is None else -1 for x, y in zip(a, b))


@dataclass
class CorpusStats:
    """The moments of every statistic and detector over the texts seen so far (one partition, or all), the
    residual norms over the median at each position (`streams`), and the ids the texts share at their first
    positions (`first_ids`, as `leading` merges them)."""

    texts: int = 0
    tokens: int = 0
    moments: dict[str, Moments] = field(default_factory=dict)
    skipped: int = 0  # texts the model could not take (too long, no tokens)
    overflowed: int = 0  # texts on which the model's numbers overflowed (non-finite weights): left out
    streams: Streams = field(default_factory=Streams)
    first_ids: tuple = ()

    def add(self, name: str, values: np.ndarray) -> None:  # [L, h, rows]
        self.moments.setdefault(name, Moments()).add(values)

    def add_text(self, weights: np.ndarray, ids: np.ndarray, causal: bool, norms=None) -> None:
        # [L, h, n, n], [n], [L, n] or None
        self.add_batch(np.asarray(weights)[None], np.asarray(ids)[None], np.array([len(ids)]), causal,
                       None if norms is None else np.asarray(norms)[None])  # fmt: skip

    def add_batch(self, weights: np.ndarray, ids: np.ndarray, lengths: np.ndarray, causal: bool, norms=None) -> None:
        # [B, L, h, n, n], [B, n], [B], [B, L, n] or None
        """The texts of a padded batch (`batch_rows`), in one pass over all of them; `norms`: each text's residual
        stream norms entering each layer (Sun et al.'s massive activations)."""
        self.texts += len(lengths)
        self.tokens += int(sum(lengths))
        for name, values in batch_rows(weights, ids, lengths, causal).items():
            self.add(name, values)
        for b, n in enumerate(lengths):
            self.first_ids = leading(self.first_ids, tuple(int(i) for i in ids[b, : min(n, SINK_POSITIONS)]))
            if norms is not None:
                self.streams.add(massive_activations_of(norms[b, :, :n]))

    def merge(self, other: CorpusStats) -> CorpusStats:
        names = self.moments.keys() | other.moments.keys()
        return CorpusStats(
            self.texts + other.texts,
            self.tokens + other.tokens,
            {k: self.moments.get(k, Moments()).merge(other.moments.get(k, Moments())) for k in sorted(names)},
            self.skipped + other.skipped,
            self.overflowed + other.overflowed,
            self.streams.merge(other.streams),
            leading(self.first_ids, other.first_ids),
        )

    def sinks(self) -> dict | None:
        """Gu et al.'s α_k of every head over every row i >= k of the texts, its sink heads and sink rate
        (`sink_heads`), and the streams' mean ratio at each position: `attn heads`' sinks numbers over the corpus
        (None before any text)."""
        alphas = [np.asarray(self.moments[sink_key(k)].total) / self.moments[sink_key(k)].count
                  for k in range(SINK_POSITIONS) if self.moments.get(sink_key(k), Moments()).count]  # fmt: skip
        if not alphas:
            return None
        return sink_heads(np.stack(alphas, axis=-1)) | {"massive_activation": self.streams.mean()}
