"""The attention a model's page draws (`attn view --model`): every layer and head from one pass that keeps what
the page needs, priced first.

An encoder's or a decoder's page (`layers`) has every layer's weights and masks from one pass, and the queries,
keys and values of the page's layer as the model ran them (`Carried`: what the page's steps view redoes a score
from), or of every layer when the page's encoding of them (q and k as float32, v as float16) takes at most
QKV_BYTES: kept from the same pass, as it makes them. An encoder–decoder's page (`parts`) has every layer of
each of its parts (PARTS) from one teacher-forced pass, and each part's carried layer. `route.page_attention`
sends a model here by its kind; io/view.py encodes what comes back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from attncli.models.files.folder import check_run
from attncli.models.network.attention import LayerSteps
from attncli.models.network.forward import Forward
from attncli.models.network.model import Model
from attncli.models.runs import run, seq2seq
from attncli.models.runs.generate import Generation
from attncli.models.runs.seq2seq import PartLayer, PartWeights
from attncli.models.runs.source import ModelLayer
from attncli.pipeline.result import AttentionResult, Step
from attncli.pipeline.tokenize import Tokens

QKV_BYTES = 1 << 19  # the q, k and v of every layer when they take at most this many bytes, else one layer's
PAGE_CELL_BYTES = 5  # a model's page holds every layer's weights stacked as float32 (4) and their masks (1) ...
STATS_CELL_BYTES = 32  # ... and one layer's head statistics at a time: the weights in float64 and 3 such temporaries

#: The bytes of a page's contribution maps on n tokens (and an encoder–decoder's m source tokens, else None):
#: models/interpret/contrib_page.py's `page_cost` of the measure --contrib asks for, which the page's caller passes.
MapsCost = Callable[[int, "int | None"], int]


def check_page(model: Model, n: int, drawn: int | None = None, maps: int = 0) -> None:
    """The page of `model` on `n` tokens priced against ATTN_MAX_MEMORY before its pass: the run (`check_run`) and
    the page's own arrays (PAGE_CELL_BYTES for each cell of every layer and head, STATS_CELL_BYTES for one layer's);
    unpriced, a page on SmolLM2 at 560 tokens peaked at 3.4 GB, 2.5x the estimate the run passed. `drawn`: the
    heads of every layer the page draws (default n_layer x n_head; an encoder–decoder's: its three parts'); `maps`:
    the bytes its contribution maps take (--contrib: `MapsCost`)."""
    drawn = model.n_layer * model.n_head if drawn is None else drawn
    page = n * n * (drawn * PAGE_CELL_BYTES + model.n_head * STATS_CELL_BYTES) + maps
    what = f"the page of {model.name}" + (" with its contribution maps" if maps else "")
    check_run(model.weights.least() + page, model.n_layer, model.n_head, model.d_model, n, what)


@dataclass(frozen=True)
class Carried:
    """One layer's stages as the model ran them (`steps`: q, k, v, its scale, soft-cap and score bias) and the
    words and formulas of `attn steps --model` for them (`stages`), every head's."""

    steps: LayerSteps
    stages: list[Step]


def qkv_bytes(s: LayerSteps) -> int:
    """The bytes of a layer's q and k as float32 and v as float16, each key/value head once: what the page carries.

    >>> s = LayerSteps(0, *[np.zeros(1)] * 9, 1.0, *[np.zeros((4, 3, 8))] * 3, None, np.zeros(1), np.zeros(1),
    ...                np.zeros(1), n_kv_head=2)
    >>> qkv_bytes(s)  # q: 4 heads × 3 × 8 × 4 bytes, k: 2 × 3 × 8 × 4, v: 2 × 3 × 8 × 2
    672
    """
    n_kv, (n_head, n, d_k), d_v = s.n_kv_head, s.q.shape, s.v.shape[-1]
    return n * (4 * n_head * d_k + 4 * n_kv * d_k + 2 * n_kv * d_v)


@dataclass(frozen=True)
class Layers:
    """An encoder's or a decoder's page: the tokens, every layer's weights [L, h, n, n] and masks (the same or
    None), the pass (its residual streams: the lens), and the carried layers (the page's, or every one)."""

    tokens: Tokens
    weights: np.ndarray
    masked: np.ndarray | None
    run: Forward
    carried: list[Carried]
    document = "layers"  # how io/view.py writes it


def layers(
    model: Model, result: AttentionResult, maps: MapsCost | None = None
) -> Layers:  # -> weights [L, h, n, n], carried [L] or [1]
    """The page of an encoder or a decoder on the text of `result` (`route.result`'s), opened at its layer, priced
    with its contribution maps (`maps`, if it has them) before anything is computed: one pass (`run.every_layer`),
    which also keeps each layer's stages when every layer's q, k and v fit QKV_BYTES (decided on layer 0; never
    after --generate, whose page carries the layer shown)."""
    source = cast(ModelLayer, result.source)
    check_page(model, len(result.tokens), maps=0 if maps is None else maps(len(result.tokens), None))
    kept: dict[int, Carried] = {}
    every = [result.tokens.generated is None]  # whether every layer is carried: decided on layer 0's size

    def keep(s: LayerSteps) -> None:  # a layer's stages, as the pass makes them
        if s.layer == 0:
            every[0] = every[0] and qkv_bytes(s) * model.n_layer <= QKV_BYTES
        if every[0] and s.layer != source.layer:
            shown = run.layer_result(model, result.text or "", result.tokens, s, None, source.pair)
            kept[s.layer] = Carried(s, cast(ModelLayer, shown.source).steps(shown))

    tokens, weights, masked, forward = run.every_layer(model, result, keep)
    assert forward.steps is not None  # the steps of the result's layer
    one = Carried(forward.steps, replace(source, head=None).steps(result))  # the words of every head
    carried = [kept.get(l, one) for l in range(len(weights))] if every[0] else [one]
    return Layers(tokens, weights, masked, forward, carried)


@dataclass(frozen=True)
class Part:
    """One part of an encoder–decoder's page: its tokens and weights (`found`, stacked [L, h, m, n]: `weights`)
    and its carried layer."""

    found: PartWeights
    weights: np.ndarray
    carried: Carried


@dataclass(frozen=True)
class Parts:
    """An encoder–decoder's page: the target `text` over the source `context` (None: `text` is the source, and
    only the encoder is there), the target it wrote (--generate; else None) and every part."""

    text: str
    context: str | None
    target: Tokens | None
    parts: dict[str, Part]
    document = "parts"  # how io/view.py writes it


def pair_of(result: AttentionResult) -> tuple[str, str | None]:
    """The (target, source) of an encoder–decoder's result: the source is its context (cross) or the one its
    decoder read; an encoder's result without a target is (source, None)."""
    return result.text or "", result.context or cast(PartLayer, result.source).encoder_text


def parts(
    model: Model,
    result: AttentionResult,
    pair: tuple[str, str | None] | None,
    generate: Generation | None,
    maps: MapsCost | None = None,
) -> Parts:  # -> each part's weights [L, h, m, n] and its carried layer
    """An encoder–decoder's page: every layer and head of each of its parts (PARTS: cross, decoder, encoder) from
    one teacher-forced pass of the target over the source, `pair` (default the result's), with the target it
    writes with `generate` whichever part the result shows, and each part's stages at the result's layer; priced
    with its contribution maps (`maps`, if it has them) before its pass."""
    text, context = pair or pair_of(result)
    layer = cast(PartLayer, result.source).layer
    # --generate: the target it wrote (the shown result's, unless that is the encoder's part, which reads the source)
    written = result.tokens.generated is not None
    if written or generate is None or context is None:  # what it wrote already, or teacher forcing (None)
        target = result.tokens if written else None
    else:
        target = seq2seq.written_target(model, text, context, generate)
    longest = max(len(result.tokens), len(result.context_tokens or ()), len(target or ()))  # either side's tokens
    drawn = model.n_layer * model.n_head + 2 * model.hp["n_dec_layer"] * model.hp["n_dec_head"]
    check_page(model, longest, drawn, 0 if maps is None else maps(longest, None if context is None else longest))
    out = {}
    for name, found in seq2seq.every_part(model, text, context, target).items():
        weights = np.stack(found.weights)  # [L, h, m, n]
        at = min(layer, len(weights) - 1)
        shown, s = seq2seq.part_layer(model, text, at, None, context, name, target)
        words = cast(PartLayer, shown.source).steps(shown)  # the formulas of attn steps --model --part
        out[name] = Part(found, weights, Carried(s, words))
    return Parts(text, context, target, out)
