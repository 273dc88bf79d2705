"""`attn patch`, `attn dla` and `attn knockout` as Rich renderables: every number comes computed in the document
(attncli.models.interpret.patch, .dla, .knockout); here they are only laid out."""

from __future__ import annotations

import numpy as np
from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attncli.io.escape import escape_token
from attncli.pipeline.tokentext import labels
from attncli.render.ablate import drawn
from attncli.render.fit import Fitted
from attncli.render.matrix import Matrix

STRONGEST = 8  # cells named under a grid (-f json has them all)


def _metric(doc: dict) -> str:
    target = f"logit({drawn(doc['target'])})"
    if doc["contrast"] is None:
        return f"m = {target}"
    return f"m = {target} − logit({drawn(doc['contrast'])})"


def _shown(doc: dict) -> list[str]:
    """The text's tokens as every screen draws them (`␣Mary`, not the vocabulary's `ĠMary`)."""
    return [escape_token(s) for s in labels(doc["tokens"], doc["texts"], doc["special"])]


def _ranked(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title=title, title_justify="left")
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i < len(header) - 1 else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return Fitted(table)


def patch_view(doc: dict, precision: int = 2, width: int = 100) -> RenderableType:
    """The layers × positions (or heads) grid of scores, the strongest cells named, and what was patched."""
    axis = doc["axis"]
    cols = _shown(doc) if axis == "position" else [f"H{h}" for h in range(doc["n_head"])]
    grid = np.zeros((doc["n_layer"], len(cols)))
    for r in doc["rows"]:
        grid[r["layer"], r[axis]] = r["score"]
    names = ("layers", "positions" if axis == "position" else "heads")
    matrix = Matrix(grid, [f"L{l}" for l in range(doc["n_layer"])], cols, precision=precision, names=names)
    strongest = sorted(doc["rows"], key=lambda r: -abs(r["score"]))[:STRONGEST]
    label = (
        (lambda r: f"L{r['layer']} {r['position']} {_shown(doc)[r['position']]}")
        if axis == "position"
        else (lambda r: f"L{r['layer']}.H{r['head']}")
    )
    ranked = _ranked(
        "strongest",
        ("rank", axis, "score"),
        [(str(i), label(r), f"{r['score']:+.{precision}f}") for i, r in enumerate(strongest, 1)],
    )
    title = Text(f"activation patching ({doc['direction']}) of {doc['what']}: {doc['means']}", style="bold")
    source, into = ("corrupt", "clean") if doc["direction"] == "noising" else ("clean", "corrupt")
    notes = [
        doc["summary"],
        f"{_metric(doc)} at position {doc['position']}: m_clean {doc['m_clean']:.{precision}f}, "
        f"m_corrupt {doc['m_corrupt']:.{precision}f}",
        f"each cell: the {source} run's activation put into the {into} run, "
        "score = (m_patched − m_corrupt) / (m_clean − m_corrupt)",
    ]
    return Group(title, matrix, ranked, Text("\n".join(notes), style="dim"))


def part_name(r: dict) -> str:
    """A row of `attn dla -f json` as the tables name it: L3.H2, L3 mlp, embeddings."""
    if r["component"] == "head":
        return f"L{r['layer']}.H{r['head']}"
    return r["component"] if r["layer"] is None else f"L{r['layer']} {r['component']}"


def dla_view(doc: dict, precision: int = 2, width: int = 100, most: int = 20) -> RenderableType:
    """The heads' grid of direct contributions, the parts ranked by |dla|, and the check that they sum to m."""
    grid = np.zeros((doc["n_layer"], doc["n_head"]))
    for r in doc["rows"]:
        if r["component"] == "head":
            grid[r["layer"], r["head"]] = r["dla"]
    matrix = Matrix(
        grid,
        [f"L{l}" for l in range(doc["n_layer"])],
        [f"H{h}" for h in range(doc["n_head"])],
        title="each head's direct contribution to m",
        precision=precision,
        names=("layers", "heads"),
    )
    ranked = sorted(doc["rows"], key=lambda r: -abs(r["dla"]))
    table = _ranked(
        "parts ranked by |dla|",
        ("rank", "part", "dla"),
        [(str(i), part_name(r), f"{r['dla']:+.{precision}f}") for i, r in enumerate(ranked[:most], 1)],
    )
    title = Text(f"direct logit attribution of {_metric(doc)} at position {doc['position']}", style="bold")
    notes = [
        doc["summary"],
        f"the {len(doc['rows'])} parts sum to {doc['sum']:.{precision + 4}f}; m = {doc['m']:.{precision + 4}f} "
        f"(difference {doc['difference']:.1e}, within float32 rounding {doc['tolerance']:.1e})",
        "each part through the final norm with its scale frozen from the full run, then the unembedding",
    ]
    if doc["capped"]:
        notes.append(doc["capped"])
    if len(ranked) > most:
        notes.append(f"… {len(ranked) - most} more parts; -f json for all")
    return Group(title, matrix, table, Text("\n".join(notes), style="dim"))


def knockout_view(doc: dict, precision: int = 2, width: int = 100) -> RenderableType:
    """One row per window of layers: the top token's probability with the edges blocked and its relative change."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name in ("layers", "probability", "relative change"):
        table.add_column(name, justify="left" if name == "layers" else "right", no_wrap=True)
    for r in doc["rows"]:
        table.add_row(
            f"{r['first_layer']}–{r['last_layer']}",
            f"{r['prob']:.{precision + 2}f}",
            f"{r['delta_prob']:+.{precision}%}",
        )
    shown = _shown(doc)
    keys = " ".join(f"{i} {shown[i]}" for i in doc["from"]["positions"])
    top = doc["top"]
    title = Text(
        f"attention knockout: position {doc['to']} {shown[doc['to']]} blocked from {keys}",
        style="bold",
    )
    notes = [
        doc["summary"],
        f"top next token {drawn(top)} (id {top['id']}): probability {top['prob']:.{precision + 2}f} "
        "with nothing blocked",
        f"in each window of {doc['window']} layers those edges' scores are −∞ before the softmax; relative change = "
        "(p_blocked − p) / p (Geva et al. 2023)",
    ]
    return Group(title, Fitted(table), Text("\n".join(notes), style="dim"))
