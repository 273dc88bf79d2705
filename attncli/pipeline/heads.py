"""The head statistics of one run, as the views show them: computed here, drawn by `attncli.render`.

`summaries` are `attn show --stats`' per-head numbers (and `stats_document` their JSON); `text_heads_document`
is the explorer's heads overview of a text run, shaped as `attn heads -f json`; `mean_of_heads` is what
`--mean` shows. The statistics themselves are
computed by `attncli.core.stats` and named by the registry `attncli.core.statistics`.

    >>> from attncli.pipeline.config import RunConfig
    >>> from attncli.pipeline.run import run
    >>> r = run("time flies", RunConfig(heads=2))
    >>> [round(s["max_entropy_bits"], 2) for s in summaries(r)]
    [1.0, 1.0]
"""

from __future__ import annotations

import numpy as np

from attncli.core.statistics import LABELS
from attncli.core.stats import head_rows, head_summaries
from attncli.pipeline.result import AttentionResult


def mean_of_heads(result: AttentionResult) -> tuple[np.ndarray, np.ndarray | None]:
    # [h, m, n] weights, masked -> [m, n], [m, n] bool or None
    """The mean of the heads' weights, and the keys every head masks (None without a mask): what `--mean`
    shows; a mean of weights, never of scores."""
    masked = None if result.masked is None else np.asarray(result.masked.all(axis=0))
    return result.attention()[1].mean(axis=0), masked


def without_sink(result: AttentionResult) -> tuple[np.ndarray, np.ndarray]:
    # [h, m, n] weights -> [h, m, n - 1] weights, [h, m, n - 1] bool masked
    """The weights without key 0 (the first token: a decoder's attention sink), each row renormalized over the
    keys left: what `--drop-sink` shows (`sinkless` of the result's weights and mask)."""
    return sinkless(result.attention()[1], result.masked)


def sinkless(weights, masked=None) -> tuple[np.ndarray, np.ndarray]:
    # [..., m, n] weights, [..., m, n] bool or None -> [..., m, n - 1] weights, [..., m, n - 1] bool masked
    """Weights without key 0, each row renormalized over the keys left. A row that had weight on key 0 alone (a
    causal model's first query) has nothing left to share: its cells are masked.

    >>> w, masked = sinkless(np.array([[[1.0, 0.0], [0.6, 0.4]]]))
    >>> w.tolist(), masked.tolist()
    ([[[0.0], [1.0]]], [[[True], [False]]])
    """
    w = np.asarray(weights)[..., 1:]
    total = w.sum(axis=-1, keepdims=True)
    kept = np.divide(w, total, out=np.zeros(w.shape), where=total > 0)
    left = np.broadcast_to(total <= 0, w.shape)
    if masked is not None:
        left = left | np.asarray(masked)[..., 1:]
    return kept, np.ascontiguousarray(left)


def summaries(result: AttentionResult) -> list[dict]:  # [h, m, n] weights -> one dict per head
    """`head_summaries` of the result's heads; a masked key is never among a query's top keys."""
    return head_summaries(result.attention()[1], result.context is None, masked=result.masked)


def stats_document(result: AttentionResult, precision: int | None = None) -> list[dict]:
    """The same numbers for JSON (`attn show --stats -f json` adds them under "stats"), rounded if asked."""
    rows = [
        {**row, "head": result.head_index(row["head"])}  # the model's own head number with --head
        for row in summaries(result)
    ]
    if precision is None:
        return rows
    return [{k: round(v, precision) if isinstance(v, float) else v for k, v in row.items()} for row in rows]


def text_heads_document(result: AttentionResult, causal: bool) -> dict:  # [h, n, n] weights -> one layer's doc
    """Every head's statistics and pattern label of a text run (one layer), as `attn heads -f json` has them."""
    rows = head_rows(result.attention()[1][None], causal=causal)
    tokens = list(result.tokens.strings)
    n_head = len(rows)
    return {"n_layer": 1, "n_head": n_head, "causal": causal, "tokens": tokens, "rows": rows, "labels": LABELS}
