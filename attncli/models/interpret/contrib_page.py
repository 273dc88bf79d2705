"""The contribution maps an interactive page carries (`attn view --contrib`): which layers fit the page, what
computing and carrying them costs (priced with the page before its pass), and every layer's maps of an encoder or
a decoder, or of each part of an encoder–decoder, from one pass (contrib.py's `every_layer`, contrib_parts.py's
`part_layers`): the same numbers `attn show --layer L --contrib` prints.
"""

from __future__ import annotations

import numpy as np

from attncli.core.measures import CONTRIBUTIONS, computed
from attncli.core.parts import PARTS
from attncli.models.interpret.contrib import Contributions, _model_layer, _pass, block_budget, every_layer
from attncli.models.interpret.contrib_parts import part_layers
from attncli.models.network.forward import forward
from attncli.models.network.model import Model
from attncli.models.runs.encdec import seq2seq_forward
from attncli.pipeline.result import AttentionResult

#: The most bytes of float64 maps a page carries for every layer; past it, the maps of the page's layer alone.
PAGE_BYTES = 8 * 2**20


def page_layers(n_layer: int, n_head: int, cells: int, measure: str, layer: int) -> list[int]:
    """The layers whose maps of `measure` a page carries of an attention of `n_layer` layers and `n_head` heads on
    `cells` query-key pairs: every layer when their float64 maps (per head where defined, the layer's, the
    rollout) take at most PAGE_BYTES, else the page's `layer`.

    >>> len(page_layers(30, 9, 20 * 20, "norm", 29)), page_layers(30, 9, 400 * 400, "norm", 29)
    (30, [29])
    """
    return list(range(n_layer)) if n_layer * maps_per_layer(n_head, measure) * cells * 8 <= PAGE_BYTES else [layer]


def maps_per_layer(n_head: int, measure: str) -> int:
    """The [m, n] maps `measure` has for one layer: one per head where defined, the layer's, the rollout."""
    m = CONTRIBUTIONS[measure]
    return (n_head if m.per_head else 0) + 1 + (1 if m.rolls_out else 0)


def page_bytes(n_layer: int, n_head: int, cells: int, measure: str) -> int:
    """What computing and carrying a page's maps of `measure` takes at most, for ATTN_MAX_MEMORY's check before the
    pass (io/view.py's `check_page`): the maps carried (every layer's up to PAGE_BYTES, else one layer's), each
    written twice more as base64 of deflated float64 (at most 4/3 of its 8 bytes: in the document and in the
    page's text), ALTI's every layer's map kept for its rollouts, and one layer's [h, m, n] float64 temporaries
    of the block computing it (its blocks of [rows, n, d] are a share of ATTN_MAX_MEMORY, block_budget).

    >>> page_bytes(2, 4, 100, "norm") == (2 * 5 * 100) * (8 + 2 * 11) + 4 * 100 * 8 * 2  # 2 layers of 4 + 1 maps
    True
    """
    carried = page_layers(n_layer, n_head, cells, measure, 0)
    cell = 8 + 2 * CARRIED_CELL
    kept = n_layer * cells * 8 if CONTRIBUTIONS[measure].rolls_out else 0
    return len(carried) * maps_per_layer(n_head, measure) * cells * cell + kept + n_head * cells * 8 * 2


def page_cost(model: Model, measure: str, n: int, m: int | None = None) -> int:
    """`page_bytes` of the page of `model` with `measure`'s maps: on `n` tokens (an encoder–decoder's source), and
    an encoder–decoder's `m` target tokens (its decoder's and cross parts; None: the encoder alone); 0 for the
    weights, which the page has anyway."""
    if not computed(measure):
        return 0
    cost = page_bytes(model.n_layer, model.n_head, n * n, measure)
    if m is not None:
        layers, heads = int(model.hp["n_dec_layer"]), int(model.hp["n_dec_head"])
        cost += page_bytes(layers, heads, m * m, measure) + page_bytes(layers, heads, m * n, measure)
    return cost


#: Bytes of a carried float64 cell in base64 (4/3 of 8, rounded up): deflate never makes random float64 smaller.
CARRIED_CELL = 11


def page_maps(result: AttentionResult, measure: str) -> list[Contributions]:
    """`attn view --contrib`: `measure` on the layers of `page_layers` of the model's `result`, every head, from
    one pass of its text (its pair, or its written tokens) through the last of them (`every_layer`); each layer's
    maps the same numbers as `attn show --layer L --contrib` prints (ALTI's rollout through layers 0..L)."""
    source = _model_layer(result, measure)
    model = source.model
    layers = page_layers(model.n_layer, model.n_head, len(result.tokens) ** 2, measure, source.layer)
    return every_layer(model, _pass(result, layers[-1]), measure, layers)


def part_page_maps(model: Model, source_ids, target_ids, measure: str, layer: int) -> dict[str, list[Contributions]]:
    # [n] the source's ids, [m] the decoder's (or None: the encoder alone) -> part -> its carried layers' maps
    """An encoder–decoder's page with --contrib: `measure` on the layers of `page_layers` of each part (the
    encoder's alone without a target), from one teacher-forced pass of `source_ids` and `target_ids`: the same
    numbers as `attn show --part P --layer L --contrib` (each part's blocks once, each rollout accumulated once;
    past PAGE_BYTES, a part's maps of `layer` alone, or of its last layer when it has fewer)."""
    n = len(source_ids)
    enc_layers = page_layers(model.n_layer, model.n_head, n * n, measure, min(layer, model.n_layer - 1))
    if target_ids is None:
        return {"encoder": every_layer(model, forward(model, np.asarray(source_ids)), measure, enc_layers)}
    run = seq2seq_forward(model, source_ids, target_ids)
    budget, encoder, rollout = block_budget(), None, None
    if CONTRIBUTIONS[measure].rolls_out:  # cross ALTI composes the encoder's whole rollout: every encoder layer
        whole = every_layer(model, run.encoder, measure, list(range(model.n_layer)))
        encoder, rollout = [whole[l] for l in enc_layers], whole[-1].rollout
    else:
        encoder = every_layer(model, run.encoder, measure, enc_layers)
    out = {}
    m, n_dec, h_dec = len(run.hidden[0]), int(model.hp["n_dec_layer"]), int(model.hp["n_dec_head"])
    for part, p in PARTS.items():
        if not p.needs_source:  # the encoder's maps, as `attn show --part encoder --contrib` writes them (no part)
            out[part] = encoder
            continue
        keys = m if p.keys == p.queries else n
        layers = page_layers(n_dec, h_dec, m * keys, measure, min(layer, n_dec - 1))
        maps = part_layers(model, run, part, layers, measure, budget, rollout)
        out[part] = [
            Contributions(measure, l, c.heads, c.layer, c.rollout, part, c.residual, c.note)
            for l, c in zip(layers, maps, strict=True)
        ]
    return out
