"""`attn show --contrib`: a model layer's contribution maps as Rich renderables, each titled by its measure.

Per head where the measure has them (norm), then the whole layer's matrix, then (ALTI) its rollout; the caption
says what was run and the line under it the measure's formula and paper. The numbers are the model's
(attncli.models.interpret.contrib computes them); nothing here computes one.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from attncli.core.measures import CONTRIBUTIONS
from attncli.pipeline.result import AttentionResult
from attncli.render.matrix import HEATMAP_ABOVE, Matrix
from attncli.render.show import Multiples, caption
from attncli.render.units import Units


def contribution_view(result: AttentionResult, contributions, precision: int = 2, width: int = 100) -> RenderableType:
    # contributions: attncli.models.interpret.contrib.Contributions (heads [h, n, n] or None, layer_matrix, rollout [n,
    # n])
    """The measure's matrices: every head's (where defined), the layer's, the rollout's (ALTI)."""
    parts = measure_matrices(result, contributions, precision)
    return Group(*parts, caption(result), measure_note(contributions.measure), *part_note(contributions))


def measure_matrices(result: AttentionResult, contributions, precision: int, max_rows: int = HEATMAP_ABOVE) -> list:
    """The measure's matrices, each titled by it: every head's (where defined), the layer's, the rollout's (ALTI);
    `max_rows`: the longest matrix drawn with numbers (`attn steps` elides rows past its own)."""
    m = CONTRIBUTIONS[contributions.measure]
    rows, cols = result.tokens.labels(), result.key_tokens.labels()
    masked = None if result.masked is None else result.masked[0]

    def matrix(a, title: str) -> Matrix:
        return Matrix(a, rows, cols, title, precision, "scores", masked, row_sum=m.normalized, max_rows=max_rows)

    layer = contributions.layer
    where = f"{contributions.part} layer {layer}" if contributions.part else f"layer {layer}"
    parts: list[RenderableType] = []
    if contributions.heads is not None:
        parts.append(Text(f"{m.title}, {where}, per head", style="bold"))
        parts.append(Multiples([matrix(a, f"head {result.head_index(h)}") for h, a in enumerate(contributions.heads)]))
    whole = f"{m.title}, {where}" + (", all heads together" if m.per_head else "")
    parts.append(matrix(contributions.layer_matrix, whole))
    if contributions.residual is not None:
        title = f"{m.title}, {where}: the residual's share (each row's rest to 1)"
        parts.append(Matrix(contributions.residual[:, None], rows, ["residual"], title, precision))
    if contributions.rollout is not None:
        where = "decoder layers" if contributions.part else "layers"  # a decoder part's rollout: the decoder's layers
        parts.append(matrix(contributions.rollout, f"{m.title} rolled out through {where} 0..{layer}"))
    return parts


def measure_note(measure: str) -> Units:
    """The dim line under a measure's matrices: what its numbers are, its formula and its paper."""
    m = CONTRIBUTIONS[measure]
    return Units(f"{m.title} ({m.unit}): {m.formula}. {m.paper}.", style="dim")


def part_note(contributions) -> list[Units]:
    """The dim line saying what the maps are on an encoder–decoder's decoder or cross part (none elsewhere)."""
    return [Units(contributions.note, style="dim")] if contributions.note else []
