"""One layer's self-attention, shared by every family: project, split, (rotate), score, (cap), mask, softmax, mix.

Grouped-query attention (Ainslie et al. 2023) keeps fewer key/value heads than query heads; each
key/value head serves `n_head // n_kv_head` consecutive query heads, and is repeated here so that
every array is per query head, as transformers' `repeat_kv` does before its scores.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from attncli.core.attention import softmax, split_heads
from attncli.models.network.blocks import dense
from attncli.models.network.parallel import split


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
    masked: np.ndarray | None  # [n_head, n, n] bool, True = masked (causal, sliding window); None for BERT
    weights: np.ndarray  # [n_head, n, n]  softmax rows, sum 1
    out: np.ndarray  # [n_head, n, d_k]  A_h V_h
    output: np.ndarray  # [n, d_model]  concat_h(A_h V_h) W_O + b_O, before the residual
    n_kv_head: int  # key/value heads; query head h reads key/value head h // (n_head // n_kv_head)
    bias: np.ndarray | None = None  # [n_head, n, n] added to the scaled scores (T5's relative positions)
    softcap: float | None = None  # Gemma 2's cap of the scores

    @cached_property
    def scores(self) -> np.ndarray:  # [n_head, n, n]  Q Kᵀ · scale (+ bias, then soft-capped), before the mask
        """The scores the weights are the softmax of, computed again on first read: the forward pass never keeps
        them whole (only the layer `attn steps` shows is asked for them)."""
        out = np.empty(self.weights.shape, self.weights.dtype)
        return make_scores(self.q * np.float32(self.scale), self.k, self.bias, self.softcap, out)


#: What LayerSteps keeps of an attention's projections p (p may also have "w_qkv", "b_qkv": see `attend`).
PROJECTIONS = ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o")


def attention_mask(n: int, causal: bool, window: int | None, m: int | None = None):
    # -> [m, n] bool or None, True = masked
    """Causal: key j after query i; sliding window W: also keys with i - j >= W (transformers' overlay).
    An encoder's sliding window W (ModernBERT's local layers): keys with |i - j| >= W, on both sides.
    The queries are the last m of the n positions (default all; decoding with a KVCache: the new ones)."""
    i, j = np.arange(n - (n if m is None else m), n)[:, None], np.arange(n)[None, :]
    if not causal:
        return None if window is None else np.abs(i - j) >= window
    return (j > i) | (j <= i - window) if window is not None else j > i


_PADDING: contextvars.ContextVar = contextvars.ContextVar("padding", default=None)  # [B, n] bool or None


@contextlib.contextmanager
def padding(pad) -> Iterator[None]:  # [B, n] bool, True = a padding token
    """Within it, every `attend` takes x [B, n, d_model], a batch of texts padded to n tokens, and
    masks the padding keys (attncli.models.runs.batch). The families' blocks work per token or over the last
    axes, so that they run a batch unchanged."""
    token = _PADDING.set(pad)
    try:
        yield
    finally:
        _PADDING.reset(token)


_EDIT: contextvars.ContextVar = contextvars.ContextVar("edit", default=None)  # (layer, edit) or None


@contextlib.contextmanager
def editing(layer: int, edit: Callable) -> Iterator[None]:  # edit(merged [..., m, n_head · d_v]) -> None, in place
    """Within it, `attend` of `layer` hands the heads' outputs, merged as W_O reads them, to `edit` before W_O
    (attncli.models.interpret.ablate switches heads off there; the LayerSteps' `out` is a view of what it edits)."""
    token = _EDIT.set((layer, edit))
    try:
        yield
    finally:
        _EDIT.reset(token)


_BLOCK: contextvars.ContextVar = contextvars.ContextVar("block", default=None)  # layer -> [B, 1, m, n] bool or None


@contextlib.contextmanager
def blocking(cells: Callable) -> Iterator[None]:  # cells(layer) -> [B, 1, m, n] bool (True = blocked) or None
    """Within it, `attend` of each layer also masks the cells `cells(layer)` marks, as the causal mask does (their
    scores -inf before the softmax): attention knockout (attncli.models.interpret.knockout) blocks chosen query -> key
    edges in chosen layers, a batch of copies each with its own (inside `padding`)."""
    token = _BLOCK.set(cells)
    try:
        yield
    finally:
        _BLOCK.reset(token)


_VALUES: contextvars.ContextVar = contextvars.ContextVar("values", default=None)  # (layer, edit) or None


@contextlib.contextmanager
def editing_values(layer: int, edit: Callable) -> Iterator[None]:  # edit(v [..., n_kv_head, n, d_v]) -> None, in place
    """Within it, `attend` of `layer` hands its value vectors (x W_V + b_V, per key/value head, before the weights
    mix them) to `edit` (attncli.models.interpret.contrib zeroes one token's there: value zeroing, Mohebbi et al.
    2023)."""
    token = _VALUES.set((layer, edit))
    try:
        yield
    finally:
        _VALUES.reset(token)


_CACHE: contextvars.ContextVar = contextvars.ContextVar("cache", default=None)  # attncli.models.runs.generate.KVCache


@contextlib.contextmanager
def cached(cache) -> Iterator[None]:
    """Within it, every self-attention extends `cache` (attncli.models.runs.generate's KVCache: `extend(layer, k, v)`
    appends a layer's new keys and values and gives back all of them; `start` counts the positions cached before
    this pass) and attends over all: x holds the positions from `offset()` on. A cross-attention's keys and values,
    made of a memory that does not change, are made on its first pass and kept (`memory(layer, make)`)."""
    token = _CACHE.set(cache)
    try:
        yield
    finally:
        _CACHE.reset(token)


def offset() -> int:
    """The position of x's first row: 0, or while decoding with a KVCache the positions already cached (for
    the blocks that place tokens: learned positions, RoPE)."""
    cache = _CACHE.get()
    return 0 if cache is None else cache.start


def text_lengths():  # -> [B] int64, or None outside `padding`
    """Inside `padding`, each text's own length (its padding sits after it): what a block whose numbers depend on
    the length (longrope's factors) reads instead of the padded one."""
    pad = _PADDING.get()
    return None if pad is None else (~np.asarray(pad, dtype=bool)).sum(axis=-1)


#: Score cells a block of heads holds (1 MiB of float32): scores, mask, exp and normalisation run on a block
#: while it sits in a core's L2 cache (2 MiB here); MiniLM at 512 tokens: one head a block, at 128: all 12.
BLOCK_CELLS = 1 << 18
#: Score cells from which a block's softmax is shared among threads (`attncli.models.network.parallel`), by query rows.
PART_CELLS = 1 << 15


def make_scores(qs, k, bias, softcap: float | None, out):  # [..., h, m, d_k], [..., h, n, d_k] -> out [..., h, m, n]
    """Q Kᵀ of queries already scaled (+ bias, then Gemma 2's cap · tanh(S / cap)), written into `out`.

    Scaling Q (m · d_k values) instead of the scores (m · n) changes a score by at most a float32 rounding.
    """
    np.matmul(qs, k.swapaxes(-1, -2), out=out)
    if bias is not None:
        out += bias
    if softcap is not None:
        out *= np.float32(1 / softcap)
        np.tanh(out, out=out)
        out *= np.float32(softcap)
    return out


def _softmax_rows(block, start: int, stop: int) -> None:  # [..., m, n]: rows start..stop turned into weights
    softmax(block[..., start:stop, :], in_place=True)


def _project(x, p: dict, key: str):  # [n, d_in] -> [n, d_out]
    """x W + b of projection `key` ("q", "k", "v", "o", or "qkv": the three side by side), the bias added in place."""
    out = dense(x, p["w_" + key])
    out += p["b_" + key]
    return out


def _project_qkv(layer: int, x, p: dict, memory, cache):  # [m, d_model] (, memory [n, d]) -> [m, d_q], [n, d_kv] ×2
    """Project: q from x, k and v from x (self-attention) or from `memory` (cross-attention); in one product when
    p has w_qkv; while decoding with a cache, the memory's keys and values only once, on the first pass."""
    if memory is None and "w_qkv" in p:  # q, k, v in one product, then its column blocks
        qkv = _project(x, p, "qkv")  # [m, d_q + 2 d_kv]
        d_q, d_kv = p["w_q"].shape[1], p["w_k"].shape[1]
        return qkv[..., :d_q], qkv[..., d_q : d_q + d_kv], qkv[..., d_q + d_kv :]
    if memory is not None and cache is not None:  # decoding: the memory's keys and values once, on the first pass
        k, v = cache.memory(layer, lambda: (_project(memory, p, "k"), _project(memory, p, "v")))
        return _project(x, p, "q"), k, v
    source = x if memory is None else memory  # [n, d_model]: what the keys and values are made of
    return _project(x, p, "q"), _project(source, p, "k"), _project(source, p, "v")


def _heads(layer: int, qkv, n_head: int, n_kv: int, rotate: Callable | None, cache, memory):
    # [m, d_q], [n, d_kv], [n, d_kv] -> q [n_head, m, d_k], k, v [n_head, n, d_k] (the cache's earlier keys too)
    """Split into heads, rotate (RoPE, q/k norms), let `editing_values` edit the values, extend a self-attention's
    cache, and repeat each key/value head for its group of query heads (grouped-query attention)."""
    q_, k_, v_ = qkv
    q, k, v = split_heads(q_, n_head), split_heads(k_, n_kv), split_heads(v_, n_kv)  # [h, m or n, d_k]
    if rotate is not None:
        q, k = rotate(q, k)
    if (values := _VALUES.get()) is not None and values[0] == layer:
        values[1](v)
    if cache is not None and memory is None:
        k, v = cache.extend(layer, k, v)  # [h_kv, start + m, d_k]: the earlier positions' too
    if n_kv != n_head:
        k, v = np.repeat(k, n_head // n_kv, axis=-3), np.repeat(v, n_head // n_kv, axis=-3)  # [n_head, n, d_k]
    return q, k, v


def _masked_cells(layer: int, m: int, n: int, causal: bool, window: int | None):
    # -> [..., m, n] bool (True = masked) or None: broadcastable to the weights
    """Mask: the cells no query may see: later keys (causal; the queries are the last m keys), keys outside the
    window, each text's padding keys (in `padding`) and the cells `blocking` blocks in this layer."""
    cells, pad = attention_mask(n, causal, window, m), _PADDING.get()
    if pad is not None:
        keys = np.asarray(pad, dtype=bool)[:, None, None, :]  # [B, 1, 1, n]
        cells = keys if cells is None else cells | keys
    if (block := _BLOCK.get()) is not None and (blocked := block(layer)) is not None:
        cells = blocked if cells is None else cells | blocked
    return cells


def _weights(q, k, bias, scale: float, softcap: float | None, cells):
    # [..., n_head, m, d_k], [..., n_head, n, d_k], bias [..., n_head, m, n] or None, cells [..., m, n] or None
    # -> weights [..., n_head, m, n]
    """Score, cap, mask and softmax a block of heads at a time (`BLOCK_CELLS`), in the weights' own array: the
    scaled queries' Q Kᵀ (+ bias, then the soft-cap), the mask added as 0 / −∞, the one softmax by rows."""
    *lead, n_head, m, _ = q.shape
    n = k.shape[-2]
    dtype = np.result_type(q, k)
    # the mask as an additive 0 / -inf, broadcast like the cells: exp(-inf) is exactly 0, as softmax's own mask
    shut = None if cells is None else np.where(cells, dtype.type(-np.inf), dtype.type(0))
    qs = q * dtype.type(scale)  # [n_head, m, d_k]
    weights = np.empty((*lead, n_head, m, n), dtype)  # [n_head, m, n]
    group = max(1, BLOCK_CELLS // (weights.size // n_head))
    for h in range(0, n_head, group):
        heads = slice(h, h + group)
        block, b = weights[..., heads, :, :], None if bias is None else bias[..., heads, :, :]
        make_scores(qs[..., heads, :, :], k[..., heads, :, :], b, softcap, block)
        if shut is not None:
            block += shut
        split(functools.partial(_softmax_rows, block), m, max(1, PART_CELLS * m // block.size))  # rows of every head
    return weights


def _mix(layer: int, weights, v):  # [..., n_head, m, n], [..., n_head, n, d_v] -> merged [..., m, n_head · d_v], out
    """Mix and merge: each head's weighted values written straight into the [m, n_head · d_v] layout W_O reads
    (`out` [..., n_head, m, d_v] is a view of it), then `editing`'s edit of this layer's merged heads."""
    *lead, n_head, m, _ = weights.shape
    d_v = v.shape[-1]
    merged = np.empty((*lead, m, n_head * d_v), np.result_type(weights, v))  # [m, n_head · d_v]
    out = merged.reshape(*lead, m, n_head, d_v).swapaxes(-3, -2)  # [n_head, m, d_v], a view of merged
    np.matmul(weights, v, out=out)
    if (edit := _EDIT.get()) is not None and edit[0] == layer:
        edit[1](merged)
    return merged, out


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
    When p also has w_qkv and b_qkv (w_q, w_k, w_v side by side), self-attention makes q, k, v in one product.

    `bias` [n_head, m, n] is added to the scaled scores (T5's relative positions); in `padding`: a leading B axis.
    It may be a function (q, k) -> bias of the split (and rotated) heads (DeBERTa's content-to-position terms).

    `rotate(q, k) -> (q, k)` ([h, n, d_k], [h_kv, n, d_k]) runs between the split into heads and the
    scores (RoPE; Qwen 3's q/k RMSNorm); `softcap` is Gemma 2's cap · tanh(S / cap) before the mask.
    Inside `padding(pad)`, x is [B, n, d_model] and the padding keys of each text are masked too.

    Its steps (Vaswani et al. 2017, §3.2.2): project (`_project_qkv`); split into heads, rotate and repeat the
    key/value heads (`_heads`); mask (`_masked_cells`); score, cap, mask and softmax a block of heads at a time
    (`_weights`, `BLOCK_CELLS`, in the weights' own array); mix, written straight into the [m, n_head · d_v]
    layout W_O reads (`_mix`); and W_O.

    >>> rng = np.random.default_rng(0)
    >>> p = {f"w_{k}": rng.normal(size=(4, 4)).astype(np.float32) for k in "qkvo"}
    >>> p |= {f"b_{k}": np.zeros(4, np.float32) for k in "qkvo"}
    >>> s = attend(0, np.ones((2, 4), np.float32), p, 2, 0.5, False, memory=np.ones((3, 4), np.float32))
    >>> s.weights.shape, s.output.shape  # 2 heads, 2 queries over 3 keys of the memory
    ((2, 2, 3), (2, 4))
    """
    n_kv, cache = n_kv_head or n_head, _CACHE.get()
    q, k, v = _heads(layer, _project_qkv(layer, x, p, memory, cache), n_head, n_kv, rotate, cache, memory)
    if callable(bias):  # a bias made of the heads' queries and keys (DeBERTa's position terms)
        bias = bias(q, k)
    cells = _masked_cells(layer, q.shape[-2], k.shape[-2], causal, window)
    weights = _weights(q, k, bias, scale, softcap, cells)
    merged, out = _mix(layer, weights, v)
    output = _project(merged, p, "o")  # [m, d_model]
    return LayerSteps(
        layer=layer,
        x=x,
        scale=scale,
        q=q,
        k=k,
        v=v,
        masked=None if cells is None else np.broadcast_to(cells, weights.shape),
        weights=weights,
        out=out,
        output=output,
        n_kv_head=n_kv,
        bias=bias,
        softcap=softcap,
        **{key: p[key] for key in PROJECTIONS},
    )
