"""One layer's self-attention, shared by every family: project, split, (rotate), score, (cap), mask, softmax, mix.

Grouped-query attention (Ainslie et al. 2023) keeps fewer key/value heads than query heads; each
key/value head serves `n_head // n_kv_head` consecutive query heads, and is repeated here so that
every array is per query head, as transformers' `repeat_kv` does before its scores.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from attncli.core.attention import merge_heads, softmax, split_heads


@dataclass(frozen=True)
class LayerSteps:
    """Every stage of one layer's self-attention, the model's own numbers (for `attn steps`).

    Projection matrices are [in, out] views of the checkpoint (BERT's nn.Linear weights transposed,
    GPT-2's c_attn split in three), so that Q = x W_Q + b_Q. With grouped-query attention, w_k and
    w_v have n_kv_head * d_k columns while k and v are given per query head.
    """

    layer: int
    x: np.ndarray  # [n, d_model] the attention's input (GPT-2: after ln_1)
    w_q: np.ndarray  # [d_model, n_head * d_k]
    b_q: np.ndarray  # [n_head * d_k]
    w_k: np.ndarray  # [d_model, n_kv_head * d_k]
    b_k: np.ndarray  # [n_kv_head * d_k]
    w_v: np.ndarray  # [d_model, n_kv_head * d_k]
    b_v: np.ndarray  # [n_kv_head * d_k]
    w_o: np.ndarray  # [n_head * d_k, d_model]
    b_o: np.ndarray  # [d_model]
    scale: float  # 1/√d_k (GPT-2 with scale_attn_by_inverse_layer_idx: also / (layer + 1))
    q: np.ndarray  # [n_head, n, d_k] (rotated, for RoPE families)
    k: np.ndarray  # [n_head, n, d_k] each query head's key head (rotated, for RoPE families)
    v: np.ndarray  # [n_head, n, d_k] each query head's value head
    scores: np.ndarray  # [n_head, n, n]  Q Kᵀ · scale (then soft-capped, Gemma 2), before the mask, finite
    masked: np.ndarray | None  # [n_head, n, n] bool, True = masked (causal, sliding window); None for BERT
    weights: np.ndarray  # [n_head, n, n]  softmax rows, sum 1
    out: np.ndarray  # [n_head, n, d_k]  A_h V_h
    output: np.ndarray  # [n, d_model]  concat_h(A_h V_h) W_O + b_O, before the residual
    n_kv_head: int  # key/value heads; query head h reads key/value head h // (n_head // n_kv_head)


def attention_mask(n: int, causal: bool, window: int | None):  # -> [n, n] bool or None, True = masked
    """Causal: key j after query i; sliding window W: also keys with i - j >= W (transformers' overlay)."""
    if not causal:
        return None
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return (j > i) | (j <= i - window) if window is not None else j > i


_PADDING: contextvars.ContextVar = contextvars.ContextVar("padding", default=None)  # [B, n] bool or None


@contextlib.contextmanager
def padding(pad) -> Iterator[None]:  # [B, n] bool, True = a padding token
    """Within it, every `attend` takes x [B, n, d_model], a batch of texts padded to n tokens, and
    masks the padding keys (attncli.models.batch). The families' blocks work per token or over the last
    axes, so that they run a batch unchanged."""
    token = _PADDING.set(pad)
    try:
        yield
    finally:
        _PADDING.reset(token)


def attend(
    layer: int,
    x,
    p: dict,
    n_head: int,
    scale: float,
    causal: bool,
    *,
    memory=None,
    bias=None,
    n_kv_head: int | None = None,
    window: int | None = None,
    softcap: float | None = None,
    rotate: Callable | None = None,
) -> LayerSteps:
    # [m, d_model] (, memory [n, d_model]) -> LayerSteps (weights [n_head, m, n], output [m, d_model])
    """Multi-head attention of one layer with projections p (w_q, b_q, ..., w_o, b_o): self-attention, or with
    `memory` cross-attention (queries from x, keys and values from memory: an encoder–decoder's source).

    `bias` [n_head, m, n] is added to the scaled scores (T5's relative positions); in `padding`: a leading B axis.

    `rotate(q, k) -> (q, k)` ([h, n, d_k], [h_kv, n, d_k]) runs between the split into heads and the
    scores (RoPE; Qwen 3's q/k RMSNorm); `softcap` is Gemma 2's cap · tanh(S / cap) before the mask.
    Inside `padding(pad)`, x is [B, n, d_model] and the padding keys of each text are masked too.

    >>> rng = np.random.default_rng(0)
    >>> p = {f"w_{k}": rng.normal(size=(4, 4)).astype(np.float32) for k in "qkvo"}
    >>> p |= {f"b_{k}": np.zeros(4, np.float32) for k in "qkvo"}
    >>> s = attend(0, np.ones((2, 4), np.float32), p, 2, 0.5, False, memory=np.ones((3, 4), np.float32))
    >>> s.weights.shape, s.output.shape  # 2 heads, 2 queries over 3 keys of the memory
    ((2, 2, 3), (2, 4))
    """
    n_kv = n_kv_head or n_head
    q = split_heads(x @ p["w_q"] + p["b_q"], n_head)  # [n_head, n, d_k]
    source = x if memory is None else memory  # [n, d_model]: what the keys and values are made of
    k = split_heads(source @ p["w_k"] + p["b_k"], n_kv)  # [n_kv, n, d_k]
    v = split_heads(source @ p["w_v"] + p["b_v"], n_kv)  # [n_kv, n, d_k]
    if rotate is not None:
        q, k = rotate(q, k)
    if n_kv != n_head:
        k, v = np.repeat(k, n_head // n_kv, axis=-3), np.repeat(v, n_head // n_kv, axis=-3)  # [n_head, n, d_k]
    scores = (q @ k.swapaxes(-1, -2)) * np.float32(scale)  # [n_head, m, n]
    if bias is not None:
        scores = scores + bias
    if softcap is not None:
        scores = np.tanh(scores / np.float32(softcap)) * np.float32(softcap)
    n = x.shape[-2]
    cells, pad = attention_mask(n, causal, window), _PADDING.get()
    if pad is not None:
        keys = np.asarray(pad, dtype=bool)[:, None, None, :]  # [B, 1, 1, n]
        cells = keys if cells is None else cells | keys
    masked = None if cells is None else np.broadcast_to(cells, scores.shape)
    weights = softmax(scores, masked)  # [n_head, n, n]
    out = weights @ v  # [n_head, n, d_k]
    output = merge_heads(out) @ p["w_o"] + p["b_o"]  # [n, d_model]
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
        n_kv_head=n_kv,
        **p,
    )
