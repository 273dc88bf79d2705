"""`attn heads` and `attn show --rollout` as Rich renderables (returned, never printed).

The heads grid has one row per layer and one column per head; each cell holds the
chosen statistic (shaded, darker = larger) and, under it, the head's label when it has
a clear pattern, so the interesting heads of a model are found in one screen.
"""

from __future__ import annotations

import math

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attncli.models import BROAD, HEAD_STATS, LABELS, PATTERN_MASS
from attncli.models.run import describe
from attncli.render.show import columns_shown, escape_token
from attncli.render.steps import grid
from attncli.render.style import weight_style

SHORT = {"previous-token": "prev", "diagonal": "diag", "first-token/sink": "sink", "broad": "brd"}
EVIDENCE = {
    "previous-token": "previous",
    "diagonal": "diagonal",
    "first-token/sink": "first-token",
    "broad": "broadness",
}  # the statistic behind each label
MOST = 8  # heads listed per pattern under the grid (-f json has them all)


def _shade(stat: str, row: dict) -> float:
    """A cell's value on 0..1 for its shading: entropy as its broadness (÷ its maximum), the others as they are."""
    return row["broadness"] if stat in ("entropy", "broadness") else row[stat]


def heads_table(doc: dict, stat: str, precision: int = 2, width: int = 100) -> Table:
    """Layers down, heads across; each cell the statistic and, below it, the head's label if any."""
    n_layer, n_head = doc["n_layer"], doc["n_head"]
    cells = {(r["layer"], r["head"]): r for r in doc["rows"]}
    cell = max(4, max(len(f"{r[stat]:.{precision}f}") for r in doc["rows"]))
    label = len(f"L{n_layer - 1}") + 2
    shown = columns_shown(n_head, max(3, (width - label) // (cell + 2)))
    table = Table(
        title=Text(f"{stat} of every head  [{n_layer} layers × {n_head} heads]"),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        title_justify="left",
        title_style="bold",
    )
    table.add_column(Text("layer", style="dim"), justify="right", no_wrap=True)
    for h in shown:
        table.add_column("…" if h is None else f"H{h}", justify="right", no_wrap=True, min_width=cell)
    for l in range(n_layer):
        row = [Text(f"L{l}", style="bold")]
        for h in shown:
            if h is None:
                row.append(Text("…", style="dim"))
                continue
            r = cells[(l, h)]
            text = Text(f"{r[stat]:.{precision}f}", style=weight_style(_shade(stat, r)))
            text.append("\n" + SHORT.get(r["label"], ""), style="dim")
            row.append(text)
        table.add_row(*row)
    return table


def patterns(doc: dict, precision: int = 2, most: int = MOST) -> Text:
    """Each label with its heads, strongest first: `previous-token (prev, 2): L0 H2 1.00, L1 H9 0.59`."""
    out = Text()
    for label in LABELS:
        stat = EVIDENCE[label]
        heads = sorted((r for r in doc["rows"] if r["label"] == label), key=lambda r: -r[stat])
        out.append(f"{label} ({SHORT[label]}, {len(heads)}): ", style="bold")
        out.append(", ".join(f"L{r['layer']} H{r['head']} {r[stat]:.{precision}f}" for r in heads[:most]) or "none")
        out.append(f", … {len(heads) - most} more" if len(heads) > most else "", style="dim")
        out.append("\n")
    return out


def heads_view(doc: dict, stat: str, precision: int = 2, width: int = 100) -> RenderableType:
    """`attn heads`: the grid, the labelled heads by pattern, and what the numbers mean."""
    n = len(doc["tokens"])
    shown = " ".join(escape_token(t) for t in doc["tokens"][:40]) + (" …" if n > 40 else "")
    notes = [
        doc["summary"] + ", trained weights",
        f"{n} tokens: {shown}",
        f"{stat}: {HEAD_STATS[stat]}; the mean over the query rows; darker = larger"
        + (
            f" (shaded ÷ its maximum, log2 {n} = {math.log2(n):.2f} bits when every key is seen)"
            if stat == "entropy"
            else ""
        ),
        f"labels: previous-token, diagonal or first-token/sink when that mean mass is ≥ {PATTERN_MASS} "
        f"(the largest wins), else broad when the entropy is ≥ {BROAD} of its maximum",
    ]
    if doc["causal"]:
        notes.append("causal model: row 0 is left out of the means (it can only see itself)")
    return Group(
        heads_table(doc, stat, precision, width), patterns(doc, precision), Text("\n".join(notes), style="dim")
    )


def rollout_view(r, precision: int = 2, width: int = 100) -> RenderableType:
    """`attn show --rollout`: the rolled-out matrix and what it is."""
    n = len(r.tokens)
    strings = r.tokens.strings
    title = f"Attention rollout R, layers 0..{r.layer}  [{n}, {n}]"
    caption = [
        describe(r.model) + ", trained weights",
        f"attention rollout, Abnar & Zuidema 2020, layers 0..{r.layer}: per layer Â = ½ (mean of the "
        f"{r.model.n_head} heads) + ½ I for the residual, R = Â_{r.layer} ⋯ Â_0",
        "row i: how much of each input token (column) has flowed into position i; each row sums to 1; "
        "▸ = row maximum",
    ]
    if r.model.causal:
        caption.append("causal model: no token receives anything from a later one (0 above the diagonal)")
    return Group(
        grid(r.matrix, strings, strings, title, precision, width, weights=True, row_sum=True),
        Text("\n".join(caption), style="dim"),
    )
