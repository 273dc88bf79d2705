"""A model's page data (`attn view --model`): the attention of every layer and head (`route.page_attention`, one
pass) and what a decoder's page adds to it, the `Behaviour` it is asked for: the logit lens and the written
tokens' probabilities from the same pass, the ablation and the causal answers (patch, DLA, knockout) from their
own commands' functions, and --contrib's maps (contrib_page.py's `page_maps`; an encoder–decoder's, each
part's: `part_page_maps`), priced with the page before its pass (contrib_page.py's `page_cost`). io/view.py encodes
what `model_page` returns; nothing there runs the model. `Behaviour` is attncli.pipeline.behaviour's (a text
run's page takes it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np

from attncli.core.measures import computed
from attncli.models.interpret.ablate import ablate_record
from attncli.models.interpret.contrib_page import page_cost, page_maps, part_page_maps
from attncli.models.interpret.dla import dla_document
from attncli.models.interpret.knockout import knockout_document
from attncli.models.interpret.lens import LAYERS, lens_rows, written_probabilities
from attncli.models.interpret.patch import patch_document
from attncli.models.network.model import Model
from attncli.models.runs import route
from attncli.models.runs.generate import Generation
from attncli.models.runs.page import Layers, MapsCost, Parts
from attncli.models.runs.seq2seq import PartLayer, encoder_tokens
from attncli.pipeline.behaviour import Behaviour
from attncli.pipeline.result import AttentionResult

LENS_K = 5  # the lens' tokens a cell carries (attn lens' default --top-k)


@dataclass(frozen=True)
class LayersPage:
    """An encoder's or a decoder's page: its attention, and each view the behaviour asked for (else None): the
    lens (`attn lens -f json`'s rows, LENS_K a cell), the ablation's record (`attn ablate -f json`'s from "mode"
    on, with n_layer and n_head), the probability the model gave each written token (after --generate), the
    patch, DLA and knockout documents, the contribution maps of --contrib."""

    attention: Layers
    lens: dict | None = None  # k, n_layer, layers, rows
    ablation: dict | None = None
    probs: np.ndarray | None = None  # [written tokens]
    patch: dict | None = None
    dla: dict | None = None
    knockout: dict | None = None
    contributions: list | None = None  # --contrib: contrib.py's Contributions of the layers the page carries
    document = "layers"  # how io/view.py writes it


@dataclass(frozen=True)
class PartsPage:
    """An encoder–decoder's page: its every part, the probability it gave each token of the target it wrote
    (None: teacher forcing, or no source), and each part's contribution maps of --contrib (else None)."""

    attention: Parts
    probs: np.ndarray | None = None  # [written tokens]
    contributions: dict | None = None  # --contrib: part -> contrib.py's Contributions of its every layer
    document = "parts"  # how io/view.py writes it


def model_page(
    model: Model,
    result: AttentionResult,
    pair: tuple[str, str | None] | None = None,
    behaviour: Behaviour = Behaviour(),
    generate: Generation | None = None,
) -> LayersPage | PartsPage:
    """The data of a model's page on the text of `result` (route.result's), opened at its layer (and part): every
    layer and head from one pass; an encoder–decoder's every part of `pair` (the (target, source) the command was
    given, by default the result's), with the target it writes with `generate`; a decoder's with the views
    `behaviour` asks for; any page's contribution maps of --contrib, priced with the page before its pass."""
    attention = route.page_attention(model, result, pair, generate, _maps_cost(model, behaviour))
    return PAGES[attention.document](model, result, attention, behaviour)


def _maps_cost(model: Model, b: Behaviour) -> MapsCost | None:
    """What the contribution maps `b` asks for cost on a page of n tokens (and an encoder–decoder's m): contrib.py's
    `page_cost`; None without --contrib."""
    if not computed(b.contrib):
        return None
    return lambda n, m: page_cost(model, b.contrib, n, m)


def _parts_page(
    model: Model, result: AttentionResult, parts: Parts, b: Behaviour
) -> PartsPage:  # probs [written] or None
    """An encoder–decoder's page: with the probability it gave each token of the target it wrote, reading the
    source, and each part's maps of --contrib at every layer (contrib_page.py's `part_page_maps`: `attn show --part P
    --layer L --contrib`'s numbers)."""
    target, context = parts.target, parts.context
    maps = None
    if computed(b.contrib):
        source = parts.parts["encoder"].found.tokens.ids
        written = parts.parts["decoder"].found.tokens.ids if "decoder" in parts.parts else None
        maps = part_page_maps(model, source, written, b.contrib, cast(PartLayer, result.source).layer)
    if target is None or context is None:
        return PartsPage(parts, None, maps)
    assert target.generated is not None  # a written target
    probs = written_probabilities(model, target.ids, target.generated, encoder_tokens(model, context).ids)
    return PartsPage(parts, probs, maps)


def _layers_page(
    model: Model, result: AttentionResult, attention: Layers, b: Behaviour
) -> LayersPage:  # probs [written]
    """A decoder page's views: the lens and the written tokens' probabilities from the page's pass (before a
    sampling's temperature, top-k and top-p), the ablation over the text before the written tokens (whose first is
    then the model's own next token), the patch, DLA and knockout on the page's text (before any written tokens;
    a view's document its command computed already, `b.known`, used as it is), and --contrib's maps of the layers
    the page carries (contrib_page.py's `page_maps`)."""
    tokens, run, text = attention.tokens, attention.run, result.text or ""
    lens = ablation = None
    if b.lens:
        lens = {"k": LENS_K, "n_layer": model.n_layer, "layers": LAYERS, "rows": lens_rows(model, run, LENS_K)}
    if b.ablate:
        ablation = {"n_layer": model.n_layer, "n_head": model.n_head}
        ablation |= ablate_record(model, tokens.prompt().ids, None, b.target, b.mode)
    start = tokens.generated
    probs = None if start is None else written_probabilities(model, list(tokens.ids), start, run=run)
    patch = dla = knockout = None
    if b.patch:
        assert b.corrupt is not None and b.target is not None  # api.page.check_behaviour asked for both
        patch = b.known.get("patch") or patch_document(model, text, b.corrupt, b.target, b.contrast, b.what, b.noising)
    if b.dla:
        assert b.target is not None  # api.page.check_behaviour asked for it
        dla = b.known.get("dla") or dla_document(model, text, b.target, b.contrast, tokens)
    if b.knockout:
        assert b.span is not None  # api.page.check_behaviour asked for it
        knockout = b.known.get("knockout") or knockout_document(model, text, b.span, b.to, b.window)
    maps = page_maps(result, b.contrib) if computed(b.contrib) else None
    return LayersPage(attention, lens, ablation, probs, patch, dla, knockout, maps)


# a page's attention (its `document`) -> what it adds
PAGES: dict[str, Callable[..., LayersPage | PartsPage]] = {"layers": _layers_page, "parts": _parts_page}
