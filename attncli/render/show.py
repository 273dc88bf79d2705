"""`attn show` as Rich renderables: the attention matrices, the caption, the outputs. Nothing here prints.

Each matrix is a `Matrix`, laid out for the width it gets when it is drawn (see
attncli.render.matrix); several heads sit side by side as far as the width allows
(`Multiples`). Text from the user enters only as `rich.text.Text` built from
`escape_token`, never as markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from attncli.io.escape import escape_lines, escape_token  # noqa: F401  (escape_token: re-exported)
from attncli.pipeline.heads import mean_of_heads, without_sink
from attncli.pipeline.result import AttentionResult
from attncli.render.matrix import HEATMAP_ABOVE, Matrix
from attncli.render.units import Units


class Multiples:
    """Matrices side by side (small multiples): as many to a row as fit with every number shown."""

    def __init__(self, items: Sequence[Matrix], gap: int = 3):
        self.items, self.gap = list(items), gap

    def per_row(self, width: int) -> int:
        """How many items go in a row of `width`: as few rows as there can be with every item a table of
        numbers, and within that as few items per row as possible (each then gets the most room)."""
        narrowest = max(m.narrowest() for m in self.items)
        most = next((k for k in range(len(self.items), 1, -1) if narrowest <= (width - self.gap * (k - 1)) // k), 1)
        rows = -(-len(self.items) // most)
        return -(-len(self.items) // rows)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        k = self.per_row(width)
        cell = width if k == 1 else (width - self.gap * (k - 1)) // k
        said = [_notes(item, cell) for item in self.items]
        # a note every matrix would say (the key of the tokens, the % cells) is said once under each row of
        # matrices, after the notes of that row's own: the key stays next to every matrix it explains
        shared = [n for n in said[0] if len(said) > 1 and all(n in s for s in said[1:])]
        for start in range(0, len(self.items), k):
            if start:
                yield Text("")
            row = self.items[start : start + k]
            own: list[str] = []
            for n, item in enumerate(row):
                item.quiet = True
                own += [note for note in said[start + n] if note not in shared and note not in own]
            if k == 1:  # alone on its row
                yield row[0]
            else:
                grid = Table.grid(padding=(0, self.gap, 0, 0), pad_edge=False)
                for _ in row:
                    grid.add_column(width=cell)  # a title wraps; the table is never wider than its cell
                grid.add_row(*row)
                yield grid
            if own + shared:
                yield Units(" · ".join(own + shared), style="dim")


def _notes(item: Matrix, width: int) -> list[str]:
    """The notes `item` says under its table at `width` (none under a heatmap, which has its legend)."""
    form = item.choose(width)
    return [] if form is None else item.notes(form)


def weight_matrices(
    result: AttentionResult,
    precision: int = 2,
    head: int | None = None,
    mean: bool = False,
    scale: str = "sqrt",
    drop_sink: bool = False,
) -> list:
    """One Matrix per head shown: every head, the one at index `head`, or (`mean`) their mean; `scale` places their
    shades (a key of style.SCALES); `drop_sink`: the weights without key 0, rows renormalized (`without_sink`)."""
    weights = result.attention()[1]  # [h, m, n]
    masks = result.masked
    q_tokens, k_tokens = result.tokens.labels(), result.key_tokens.labels()
    divider = result.tokens.second if result.context_tokens is None else None  # a sentence pair's boundary
    n_head, name = weights.shape[0], result.source.matrix_name
    single = "Attention weights A = softmax(S)" if name is None else f"{name}, A = softmax(S)"
    if drop_sink:
        weights, masks = without_sink(result)  # [h, m, n - 1]
        single += f", without key 0 ({k_tokens[0]}), rows renormalized"
        k_tokens = k_tokens[1:]
        divider = None if divider is None else divider - 1
    if mean:
        title = single if n_head == 1 else f"mean of the {n_head} heads' weights"
        title = title if name is None or n_head == 1 else f"{name}, mean of the {n_head} heads"
        average, masked = mean_of_heads(result)
        return [
            Matrix(
                average,
                q_tokens,
                k_tokens,
                title,
                precision,
                "weights",
                masked,
                max_rows=HEATMAP_ABOVE,
                divider=divider,
                scale=scale,
            )
        ]
    heads = range(n_head) if head is None else [head]
    return [
        Matrix(
            weights[h],
            q_tokens,
            k_tokens,
            single if n_head == 1 else f"head {result.head_index(h)}" + (", without key 0" if drop_sink else ""),
            precision,
            "weights",
            None if masks is None else masks[h],
            max_rows=HEATMAP_ABOVE,
            divider=divider,
            scale=scale,
        )
        for h in heads
    ]


def output_matrix(result: AttentionResult, precision: int = 2) -> Matrix:
    m, d = result.output.shape
    title = f"Output O = {result.source.output_formula}  [{m}, {d}]"
    return Matrix(result.output, result.tokens.labels(), None, title, precision, names=("tokens", "dims"))


def caption(result: AttentionResult) -> Units:
    """What a reader needs to reproduce and trust the table, in a few lines: what was run, as its source says."""
    return Units(escape_lines("\n".join(result.source.caption(result))), style="dim")  # file names are user text


def show(
    result: AttentionResult,
    precision: int = 2,
    width: int = 100,
    below: RenderableType | None = None,
    head: int | None = None,
    mean: bool = False,
    matrix_only: bool = False,
    scale: str = "sqrt",
    drop_sink: bool = False,
) -> RenderableType:
    """`attn show`: the attention matrices (one per head shown), the caption, `below` it (head statistics), then the
    outputs; `matrix_only`: the matrices alone (a picture for a slide); `scale`: how their shades are placed."""
    parts: list[RenderableType] = []
    if result.weights is not None:  # --no-weights: no matrix to show (the caption says so)
        matrices = weight_matrices(result, precision, head, mean, scale, drop_sink)
        name = result.source.matrix_name
        if name is not None and len(matrices) > 1:  # heads side by side, each titled by its number: say what they are
            parts.append(Text(f"{name}, every head", style="bold"))
        parts.append(Multiples(matrices))
    if matrix_only:
        return Group(*parts)
    parts.append(caption(result))
    if below is not None:
        parts.append(below)
    parts.append(output_matrix(result, precision))
    return Group(*parts)
