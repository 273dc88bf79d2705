"""AttentionResult -> Rich renderables. Nothing here prints: cli.py does.

Every cell shows its number and the row maximum is bold, so a table reads
without colour (NO_COLOR, a pipe, paper). Text from the user only ever enters
as `rich.text.Text` built from `escape_token`, never as markup.
"""

from __future__ import annotations

import numpy as np
from rich import box
from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from attncli.io.escape import escape_lines, escape_text, escape_token  # noqa: F401  (escape_token: re-exported)
from attncli.pipeline.result import AttentionResult
from attncli.render.heatmap import Heatmap
from attncli.render.style import weight_style

HEATMAP_ABOVE = 48  # more queries or keys than this: a pooled heatmap instead of a table of numbers


def _label(s: str, style: str = "") -> Text:
    return Text(escape_token(s), style=style)


# A sequential blue scale (ColorBrewer "Blues"): weight 0 -> near white, 0.25 -> mid blue, 1 -> dark blue.
def columns_shown(n: int, max_cols: int) -> list[int | None]:
    """Column indices to show, with None where an elision marker goes.

    >>> columns_shown(5, 10)
    [0, 1, 2, 3, 4]
    >>> columns_shown(10, 5)
    [0, 1, None, 8, 9]
    """
    if n <= max_cols:
        return list(range(n))
    head = (max_cols - 1) // 2 + (max_cols - 1) % 2
    tail = max_cols - 1 - head
    return [*range(head), None, *range(n - tail, n)]


def _fit(n_cols: int, cell: int, row_labels, width: int) -> list[int | None]:
    """Which columns fit in `width`: each takes its cell width plus 3 (padding and gap)."""
    label = min(16, max(cell_len(escape_token(t)) for t in row_labels)) + 3  # terminal columns: CJK take 2
    return columns_shown(n_cols, max(3, (width - label) // (cell + 3)))


def _fmt(x: float, precision: int) -> str:
    return f"{x:.{precision}f}"


def weights_table(
    result: AttentionResult, head: int, precision: int = 2, width: int = 100, title: str | None = None
) -> Table:
    """The attention matrix of one head: rows are queries, columns are keys."""
    weights = result.attention()[1][head]  # [m, n]
    masked = None if result.masked is None else result.masked[head]
    q_tokens, k_tokens = result.tokens.strings, result.key_tokens.strings
    cols = _fit(len(k_tokens), precision + 2, q_tokens, width)
    table = Table(
        title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", min_width=len(title) if title else None
    )  # a small matrix does not wrap its title
    table.add_column(Text("query \\ key", style="dim"), no_wrap=True, max_width=16)
    for j in cols:
        table.add_column(
            Text("…") if j is None else _label(k_tokens[j], "bold"),
            justify="right",
            no_wrap=True,
            max_width=max(precision + 3, 8),
        )
    for i, q_token in enumerate(q_tokens):
        row_max = weights[i].max()
        cells = []
        for j in cols:
            if j is None:
                cells.append(Text("…", style="dim"))
            elif masked is not None and masked[i, j]:
                cells.append(Text("·", style="dim"))
            else:
                w = weights[i, j]
                is_max = row_max > 0 and w == row_max
                cells.append(Text(_fmt(w, precision), style=weight_style(w, bold=is_max)))
        table.add_row(_label(q_token), *cells)
    return table


def matrix_table(
    array: np.ndarray,
    row_labels,
    title: str,
    precision: int = 2,
    width: int = 100,
    col_prefix: str = "",
    max_rows: int = 48,
) -> Table:  # [rows, cols] -> Table
    """A plain numeric matrix (embeddings, outputs) with elided middle columns (…) and rows (⋮) when too big."""
    cell = max(len(_fmt(array.min(), precision)), len(_fmt(array.max(), precision))) if array.size else 1
    cols = _fit(array.shape[1], cell, row_labels, width)
    table = Table(
        title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", min_width=len(title) if title else None
    )  # a small matrix does not wrap its title
    table.add_column("", no_wrap=True, max_width=16)
    for j in cols:
        table.add_column("…" if j is None else f"{col_prefix}{j}", justify="right", no_wrap=True, min_width=cell)
    for i in columns_shown(len(row_labels), max_rows):
        if i is None:
            table.add_row(*(Text("⋮", style="dim") for _ in range(len(cols) + 1)))
            continue
        table.add_row(_label(row_labels[i]), *("…" if j is None else _fmt(array[i, j], precision) for j in cols))
    return table


def caption(result: AttentionResult) -> Text:
    """What a reader needs to reproduce and trust the table, in a few lines: what was run, as its source says."""
    return Text(escape_lines("\n".join(result.source.caption(result))), style="dim")  # file names are user text


def show(
    result: AttentionResult, precision: int = 2, width: int = 100, below: RenderableType | None = None
) -> RenderableType:
    """`attn show`: the attention matrix (one panel per head), `below` it (head statistics), then the outputs."""
    parts: list[RenderableType] = []
    c = result.config
    if result.weights is None:  # --no-weights: no matrix to show (the caption says so)
        pass
    elif max(result.weights.shape[1:]) > HEATMAP_ABOVE:  # a table of numbers would not be readable
        for h in range(c.heads):
            parts.append(Heatmap(result.weights[h], f"Attention weights A = softmax(S), head {h}"))
    elif c.heads == 1:
        parts.append(weights_table(result, 0, precision, width, title="Attention weights A = softmax(S)"))
    else:
        for h in range(c.heads):
            parts.append(
                Panel(
                    weights_table(result, h, precision, width - 4), title=f"head {h}", title_align="left", expand=False
                )
            )
    parts.append(caption(result))
    if below is not None:
        parts.append(below)
    parts.append(
        matrix_table(
            result.output,
            result.tokens.strings,
            precision=precision,
            width=width,
            title=f"Output O = {result.source.output_formula}  [{result.output.shape[0]}, {c.dim}]",
        )
    )
    return Group(*parts)
