"""Attention whose keys and values may come from another sequence, and the blocks of a decoder that uses it.

The one attention of the encoder–decoder families (families/bart.py, families/t5.py): with
`memory` = x it is self-attention (T5 adds its relative position bias to the scores), with
`memory` = the encoder's output it is cross-attention (Bahdanau et al. 2015; Vaswani et al. 2017):
queries from the decoder, keys and values from the source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attncli.core.attention import merge_heads, softmax, split_heads

from .attention import LayerSteps, attention_mask


@dataclass(frozen=True)
class Decoder:
    """An encoder–decoder family's decoder blocks. y is the decoder's residual stream [m, d_model]."""

    embed: Callable  # (m, ids [m]) -> y [m, d_model]
    self_attention: Callable  # (m, layer, y) -> (y, LayerSteps of the causal self-attention)
    cross_attention: Callable  # (m, layer, y, memory [n, d_model]) -> (y, LayerSteps: queries y, keys memory)
    mlp: Callable  # (m, layer, y) -> y
    input_note: Callable[[int, str], str]  # (layer, "decoder" or "cross") -> what X, the attention's input, is


def attend(layer: int, x, memory, p: dict, n_head: int, scale: float, causal: bool, bias=None) -> LayerSteps:
    # [m, d_model], [n, d_model] -> LayerSteps (weights [n_head, m, n], output [m, d_model])
    """Multi-head attention of the queries x over the keys and values of `memory`, projections p (w_q, b_q, ...).

    S = Q Kᵀ · scale (+ bias [n_head, m, n]); causal masks key j > query i (self-attention only).

    >>> rng = np.random.default_rng(0)
    >>> p = {f"w_{k}": rng.normal(size=(4, 4)).astype(np.float32) for k in "qkvo"}
    >>> p |= {f"b_{k}": np.zeros(4, np.float32) for k in "qkvo"}
    >>> s = attend(0, np.ones((2, 4), np.float32), np.ones((3, 4), np.float32), p, 2, 0.5, False)
    >>> s.weights.shape, s.output.shape
    ((2, 2, 3), (2, 4))
    """
    q = split_heads(x @ p["w_q"] + p["b_q"], n_head)  # [n_head, m, d_k]
    k = split_heads(memory @ p["w_k"] + p["b_k"], n_head)  # [n_head, n, d_k]
    v = split_heads(memory @ p["w_v"] + p["b_v"], n_head)  # [n_head, n, d_k]
    scores = q @ k.transpose(0, 2, 1)  # [n_head, m, n]
    if scale != 1.0:
        scores = scores * np.float32(scale)
    if bias is not None:
        scores = scores + bias
    cells = attention_mask(x.shape[0], causal, None)
    masked = None if cells is None else np.broadcast_to(cells, scores.shape)
    weights = softmax(scores, masked)  # [n_head, m, n]
    out = weights @ v  # [n_head, m, d_k]
    output = merge_heads(out) @ p["w_o"] + p["b_o"]  # [m, d_model]
    return LayerSteps(
        layer=layer,
        x=x,
        scale=scale,
        q=q,
        k=k,
        v=v,
        scores=scores,
        masked=masked,
        weights=weights,
        out=out,
        output=output,
        n_kv_head=n_head,
        **p,
    )
