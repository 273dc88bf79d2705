"""The page's looks (`attn view --scale`, `--drop-sink`, `--contrib`): its colour scales, each layer's weights
without the sink, and the contribution maps the model code computed (models/interpret/contrib_page.py), encoded
for the page as io/view.py encodes its weights.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attncli.io.packing import layers_record, packed
from attncli.pipeline.behaviour import Behaviour

if TYPE_CHECKING:  # a text run's page loads no model code
    from attncli.models.interpret.page import PartsPage


def looks_view(
    weights: np.ndarray,
    masked: np.ndarray | None,
    labels: list[list[str]],
    behaviour: Behaviour,
    heads: list[int] | None = None,
    maps: list | None = None,
) -> dict:  # [L, h, m, n] the page's weights, the same bool or None
    """What the page adds for `--scale`, `--drop-sink` and `--contrib`, nothing without them: "colour" (the scale
    the page opens with and whether it opens without the sink; the page offers every scale, from the table the
    page embeds), "sinkless" (with --drop-sink: every layer's weights without key 0, each row renormalized, as
    `attn show --drop-sink` draws them: key 0 and a row with nothing left masked; "layers" and "masks" as the
    document's own) and "contributions" (`contributions_view` of `maps`, the Contributions of the layers the page
    carries, computed by the model code: models/interpret/page.py). `heads`: the heads' numbers (default 0..h-1)."""
    if not behaviour.looks:
        return {}
    from attncli.core.measures import computed  # late: start-up (only when a page is written)

    out: dict = {"colour": {"scale": behaviour.scale, "drop_sink": behaviour.drop_sink}}
    if behaviour.drop_sink:
        out["sinkless"] = sinkless_view(weights, masked, labels, heads)
    if computed(behaviour.contrib):
        assert maps is not None  # a model's page computes them (api.view refuses --contrib without a model)
        out["contributions"] = contributions_view(maps)
    return out


def sinkless_view(
    weights: np.ndarray, masked: np.ndarray | None, labels: list[list[str]], heads: list[int] | None = None
) -> dict:  # [L, h, m, n] the weights, the same bool or None
    """The page's "sinkless": every layer's weights without key 0, each row renormalized, as `attn show
    --drop-sink` draws them (key 0 and a row with nothing left masked); "layers" and "masks" as the document's."""
    from attncli.pipeline.heads import sinkless  # late: start-up (only when a page is written)

    kept, left = sinkless(weights, masked)  # [L, h, m, n - 1]
    key0 = np.ones((*kept.shape[:-1], 1), dtype=bool)
    full = np.concatenate([np.zeros(key0.shape), kept], axis=-1)
    shut = np.concatenate([key0, left], axis=-1)
    numbers = list(range(weights.shape[1])) if heads is None else heads
    layers, masks = layers_record(full, shut, list(range(weights.shape[0])), numbers, labels)
    return {"layers": layers, "masks": masks}


def parts_looks(page: PartsPage, behaviour: Behaviour) -> dict:
    """An encoder–decoder page's "colour" and "contributions" (each part's maps, computed by the model code:
    models/interpret/page.py; `contributions_view`'s "parts"), nothing without --scale, --drop-sink or --contrib
    (each part's "sinkless" is in its entry: `part_entry`)."""
    if not behaviour.looks:
        return {}
    out: dict = {"colour": {"scale": behaviour.scale, "drop_sink": behaviour.drop_sink}}
    if page.contributions is not None:
        out["contributions"] = contributions_view(page.contributions)
    return out


CONTRIB_ENCODING = (
    "each map: float64 little-endian, row-major [queries][keys], compressed with raw deflate (RFC 1951), in "
    "base64: the exact numbers of attn show --layer L --contrib -f json"
)


def contributions_view(maps: list | dict) -> dict:
    # attncli.models.interpret.contrib.Contributions of some layers, or an encoder–decoder's: part -> such a list
    """The page's "contributions": the measure (its title, formula, paper and unit from CONTRIBUTIONS) and, for each
    layer carried, its maps exactly: per head where the measure has them, the layer's ("map"), ALTI's rollout, each
    with "top", the end of its colour range (1 for shares; a length map's largest). An encoder–decoder's has
    "parts" instead of "layers": each part's "layers" and "note" (what the maps are on that part), a cross ALTI
    layer's "residual" too (the share of each target row its residual carries, the rest of the row)."""
    from attncli.core.measures import CONTRIBUTIONS  # late: start-up (only when a page is written)

    first = next(iter(maps.values()))[0] if isinstance(maps, dict) else maps[0]
    m = CONTRIBUTIONS[first.measure]

    def entry(a: np.ndarray) -> dict:  # [m, n] float64
        return {"values": packed(np.asarray(a, "<f8")), "top": 1.0 if m.normalized else float(a.max())}

    def layers(of: list) -> list[dict]:
        return [
            {
                "layer": c.layer,
                "heads": None if c.heads is None else [entry(a) for a in c.heads],
                "map": entry(c.layer_matrix),
                "rollout": None if c.rollout is None else entry(c.rollout),
            }
            | ({} if c.residual is None else {"residual": packed(np.asarray(c.residual, "<f8"))})
            for c in of
        ]

    doc = {
        "measure": m.name,
        "title": m.title,
        "formula": m.formula,
        "paper": m.paper,
        "unit": m.unit,
        "per_head": m.per_head,
        "normalized": m.normalized,
        "encoding": CONTRIB_ENCODING,
    }
    if isinstance(maps, dict):
        return doc | {"parts": {part: {"note": of[0].note, "layers": layers(of)} for part, of in maps.items()}}
    return doc | {"layers": layers(maps)}
