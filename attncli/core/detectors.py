"""What heads do over a corpus: per-row statistics and head detectors, kept as mergeable moments.

One text gives, for every layer and head, one value per query row of each statistic; a corpus is
the rows of all its texts. `Moments` keeps count, sum and sum of squares per head, so partial
results of any split of the corpus merge exactly (map: one partition's `CorpusStats`; reduce:
`merge`), whatever runs them: one process, a worker pool, or a Dask cluster.

The detectors, each a mean weight in [0, 1] (TransformerLens's head detectors are the model):

- previous-token: a[i, i-1], rows i >= 1;
- duplicate-token: the weight on earlier copies of the query's own token, Σ_{j<i, t_j = t_i} a[i, j],
  rows whose token occurred before;
- first-token sink: a[i, 0];
- induction: on a random token sequence repeated twice (r r), the weight on the token after the
  earlier copy, a[i, i - P + 1] for rows i in the second copy (P = the period; see `induction_rows`).

and the statistics: row entropy (bits), attention distance Σ_j a[i, j] |i - j|, diagonal mass a[i, i].

    >>> import numpy as np
    >>> a = np.array([[[[1.0, 0, 0], [0.9, 0.1, 0], [0.1, 0.8, 0.1]]]])  # [L=1, h=1, n=3, n=3]
    >>> rows = text_rows(a, np.array([5, 7, 5]), causal=True)
    >>> rows["previous-token"].round(2).tolist(), rows["duplicate-token"].round(2).tolist()
    ([[[0.9, 0.8]]], [[[0.1]]])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # NumPy is imported by the functions that compute: `attn heads --help` prints DETECTORS without it
    import numpy as np

DETECTORS = {  # name -> its definition, for --help, the README and the JSON
    "previous-token": "weight on the token just before the query, a[i, i-1] (rows i >= 1)",
    "duplicate-token": "weight on earlier copies of the query's own token (rows whose token came before)",
    "induction": "on a random sequence repeated twice, weight on the token after the query's earlier copy",
    "first-token": "weight on the first token, a[i, 0]: an attention sink",
}
STATISTICS = {
    "entropy": "row entropy in bits (0: all weight on one key)",
    "distance": "attention distance Σ_j a[i, j] |i - j|, in tokens",
    "diagonal": "weight on the query itself, a[i, i]",
}


def text_rows(weights: np.ndarray, ids: np.ndarray, causal: bool) -> dict[str, np.ndarray]:
    # [L, h, n, n], [n] -> {name: [L, h, rows]}
    """The per-row values of every statistic and detector but induction for one text (`batch_rows` of one)."""
    import numpy as np

    ids = np.asarray(ids)
    return batch_rows(np.asarray(weights)[None], ids[None], np.array([len(ids)]), causal)


def batch_rows(weights: np.ndarray, ids: np.ndarray, lengths: np.ndarray, causal: bool) -> dict[str, np.ndarray]:
    # [B, L, h, n, n], [B, n], [B] -> {name: [L, h, rows]}
    """The per-row values of every statistic and detector but induction for a padded batch of texts: text b
    is its first lengths[b] tokens (its padding keys carry no weight; padding rows and ids are ignored). The
    rows of every text, text after text. With `causal`, row 0 (which can see only itself) is left out of
    the statistics and of the first-token sink."""
    import numpy as np

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
            -np.einsum("bhij,bhij->bhi", a, np.log2(a + 1e-300)),  # 0 log 0 = 0
            np.einsum("bhij,ij->bhi", a, far),
            np.diagonal(a, axis1=-2, axis2=-1),
            a[..., 0],
            np.diagonal(a, offset=-1, axis1=-2, axis2=-1),
            np.einsum("bhij,bij->bhi", a, copies),
        )
        for name, value in zip(names, values):
            layers[name].append(value)
    masks = {"previous-token": real[:, 1:], "duplicate-token": earlier.any(axis=-1)}
    # [B, L, h, m] -> [L, h, B, m] -> the masked rows, text after text
    return {name: np.moveaxis(np.stack(v, axis=1), 0, 2)[..., masks.get(name, rows)] for name, v in layers.items()}


def induction_rows(weights: np.ndarray, start: int, period: int) -> np.ndarray:  # [L, h, n, n] -> [L, h, rows]
    """On tokens `prefix + r + r` (r of length `period` starting at `start`), the weight each query of the
    second copy puts on the token after its earlier copy: row i, key i - period + 1."""
    import numpy as np

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
        import numpy as np

        return None if not self.count else np.asarray(self.total) / self.count

    def std(self) -> np.ndarray | None:  # -> [L, h], the population standard deviation over rows
        import numpy as np

        mean = self.mean()
        if mean is None:
            return None
        return np.sqrt(np.maximum(np.asarray(self.squares) / self.count - mean * mean, 0.0))


@dataclass
class CorpusStats:
    """The moments of every statistic and detector over the texts seen so far (one partition, or all)."""

    texts: int = 0
    tokens: int = 0
    moments: dict[str, Moments] = field(default_factory=dict)
    skipped: int = 0  # texts the model could not take (too long, no tokens)
    overflowed: int = 0  # texts on which the model's numbers overflowed (non-finite weights): left out

    def add(self, name: str, values: np.ndarray) -> None:  # [L, h, rows]
        self.moments.setdefault(name, Moments()).add(values)

    def add_text(self, weights: np.ndarray, ids: np.ndarray, causal: bool) -> None:  # [L, h, n, n], [n]
        self.texts += 1
        self.tokens += len(ids)
        for name, values in text_rows(weights, ids, causal).items():
            self.add(name, values)

    def add_batch(self, weights: np.ndarray, ids: np.ndarray, lengths: np.ndarray, causal: bool) -> None:
        # [B, L, h, n, n], [B, n], [B]
        """The texts of a padded batch (`batch_rows`), in one pass over all of them."""
        self.texts += len(lengths)
        self.tokens += int(sum(lengths))
        for name, values in batch_rows(weights, ids, lengths, causal).items():
            self.add(name, values)

    def merge(self, other: CorpusStats) -> CorpusStats:
        names = self.moments.keys() | other.moments.keys()
        return CorpusStats(
            self.texts + other.texts,
            self.tokens + other.tokens,
            {k: self.moments.get(k, Moments()).merge(other.moments.get(k, Moments())) for k in sorted(names)},
            self.skipped + other.skipped,
            self.overflowed + other.overflowed,
        )
