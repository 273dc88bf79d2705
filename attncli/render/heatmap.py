"""A compact heatmap for attention matrices too large for a table of numbers.

Tokens are pooled into blocks (the mean weight of each block of queries x keys),
and two rows of blocks share one line of half-block characters: the upper half
`▀` takes its colour from the upper row, the background from the lower one.
Without colour (NO_COLOR, --color never, a pipe) each block becomes one of the
shade characters ` ░▒▓█` instead, one row per line, so the picture still reads.
The exact numbers stay available through `-f json|csv|npy`.

    >>> pool(np.arange(16.0).reshape(4, 4), 2, 2).tolist()
    [[2.5, 4.5], [10.5, 12.5]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from attncli.render.style import SCALES, shade, system_of
from attncli.render.units import Units

SHADES = " ░▒▓█"
LABEL_WIDTH = 12  # "1024–2047 " fits
KEYED = 48  # up to this many tokens on an axis of single tokens, a key of them is said under the map


def pool(a: np.ndarray, rows: int, cols: int) -> np.ndarray:  # [m, n] -> [rows, cols]
    """Mean of `a` over a grid of rows x cols nearly equal blocks (NaN-free: every block is non-empty)."""
    m, n = a.shape
    r_edges = np.linspace(0, m, rows + 1).round().astype(int)
    c_edges = np.linspace(0, n, cols + 1).round().astype(int)
    sums = np.add.reduceat(np.add.reduceat(a, r_edges[:-1], axis=0), c_edges[:-1], axis=1)
    counts = np.outer(np.diff(r_edges), np.diff(c_edges))
    return sums / counts


class Heatmap:
    """A Rich renderable: one attention matrix [m, n] pooled to fit the console width."""

    def __init__(
        self,
        weights: np.ndarray,
        title: str,
        max_lines: int = 32,
        tokens: tuple[Sequence[str], Sequence[str]] | None = None,
        scale: str = "sqrt",
    ):
        self.weights = weights  # [m, n]
        self.scale = scale  # a key of style.SCALES
        self.title = title
        self.max_lines = max_lines
        self.tokens = tokens  # (queries, keys), escaped: keyed under the map when each row or column is one token

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        m, n = self.weights.shape
        system = system_of(console)
        colour = system is not None
        cols = max(1, min(n, options.max_width - LABEL_WIDTH))
        rows = max(1, min(m, self.max_lines * (2 if colour else 1)))
        rows += rows % 2 if colour and rows < m else 0
        grid = pool(self.weights, rows, cols)  # [rows, cols]
        top = float(grid.max()) or 1.0
        r_edges = np.linspace(0, m, rows + 1).round().astype(int)
        c_edges = np.linspace(0, n, cols + 1).round().astype(int)
        pooled = (rows, cols) != (m, n)
        shape = f"[{m}, {n}]"
        title = self.title if self.title.endswith(shape) else f"{self.title}  {shape}"  # said once
        yield Text(title + (f" pooled to {rows}×{cols} blocks" if pooled else ""), style="italic")
        yield from self._axis(c_edges, cols)
        step = 2 if colour else 1
        for i in range(0, rows, step):
            last = min(i + step, rows) - 1
            label = f"{r_edges[i]}–{r_edges[last + 1] - 1}" if r_edges[last + 1] - 1 > r_edges[i] else f"{r_edges[i]}"
            yield Segment(label.rjust(LABEL_WIDTH - 1) + " ", Style(dim=True))
            for j in range(cols):
                a = grid[i, j] / top
                if colour:
                    b = grid[i + 1, j] / top if i + 1 < rows else None
                    upper = shade(a, system, scale=self.scale).bgcolor
                    lower = shade(b, system, scale=self.scale).bgcolor if b is not None else None
                    yield Segment("▀", Style(color=upper, bgcolor=lower))
                else:
                    yield Segment(SHADES[min(len(SHADES) - 1, int(SCALES[self.scale].position(a) * len(SHADES)))])
            yield Segment.line()
        legend = (
            (
                "rows: query index ranges; columns: key index ranges, left to right. Shade: mean weight of each block"
                if pooled
                else "rows: queries; columns: keys, left to right. Shade: the weight"
            )
            + f" on a {SCALES[self.scale].words}, darkest = {top:.3g}"
            + ("" if colour else f"; shades '{SHADES}' low→high")
            + ". Exact numbers: -f json, csv or npy."
        )
        yield Units(legend + self._key(rows == m, cols == n), style="dim")

    def _key(self, each_row: bool, each_col: bool) -> str:
        """The tokens of the indices, when a row (or a column) of the map is one token and there are few."""
        if self.tokens is None:
            return ""
        queries, keys = self.tokens
        key = ""
        if each_row and len(queries) <= KEYED:
            name = "tokens" if each_col and list(queries) == list(keys) else "queries"
            key += f"\n{name}: " + " · ".join(f"{i} {t}" for i, t in enumerate(queries))
            if name == "tokens":
                return key
        if each_col and len(keys) <= KEYED:
            key += "\nkeys: " + " · ".join(f"{j} {t}" for j, t in enumerate(keys))
        return key

    def _axis(self, c_edges, cols: int):
        """Key index ticks every ~10 columns above the map."""
        line = [" "] * cols
        for j in range(0, cols, 10):
            tick = f"▏{c_edges[j]}"
            if j + len(tick) <= cols:
                line[j : j + len(tick)] = tick
        yield Segment(" " * LABEL_WIDTH + "".join(line), Style(dim=True))
        yield Segment.line()
