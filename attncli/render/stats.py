"""Head statistics under the matrix of `attn show` (--stats, or always for short texts), as Rich renderables."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attncli.pipeline.heads import summaries
from attncli.pipeline.result import AttentionResult
from attncli.render.bars import query_bars
from attncli.render.fit import Fitted
from attncli.render.matrix import columns_shown
from attncli.render.show import caption, escape_token, show
from attncli.render.units import Units

SHORT = 12  # `attn show` adds the statistics by itself up to this many tokens
MAX_ROWS = 24  # longer texts list the top keys of their first and last queries around a ⋮ row


def _f(x: float | None, precision: int) -> str:
    return "—" if x is None else f"{x:.{precision}f}"


def summary_lines(result: AttentionResult, precision: int = 2) -> Text:
    """The head statistics in one line per head (what a short `attn show` adds by itself)."""
    q_tokens, k_tokens = result.tokens.drawn(), result.key_tokens.drawn()
    out = Units(style="dim")
    for n, s in enumerate(summaries(result)):
        i, j = s["largest_at"]
        out.append(("\n" if n else "") + f"head {result.head_index(s['head'])}: ", style="bold")
        parts = [
            f"entropy {_f(s['mean_entropy_bits'], precision)}/{s['max_entropy_bits']:.{precision}f} bits",
            f"max {s['largest_weight']:.{precision}f} {escape_token(q_tokens[i])}→{escape_token(k_tokens[j])}",
        ]
        if s["diagonal_mass"] is not None:
            parts.append(f"diag {_f(s['diagonal_mass'], precision)}")
        parts.append(f"|i−j| {_f(s['mean_distance'], precision)}")
        out.append(" · ".join(parts))
    return out


def stats_table(result: AttentionResult, precision: int = 2) -> Table:
    """One row per head: entropy, largest weight, diagonal mass, mean attended distance."""
    stats = summaries(result)
    q_tokens, k_tokens = result.tokens.drawn(), result.key_tokens.drawn()
    table = Table(
        title="Head statistics", box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", title_style="bold"
    )
    for name in ("head", "mean entropy (bits)", "÷ log₂ n", "largest weight", "diagonal mass", "mean |i − j|"):
        # headers and tokens wrap (never cut) when the width is short; numbers stay whole
        table.add_column(name, justify="left" if name == "largest weight" else "right", overflow="fold")
    for s in stats:
        i, j = s["largest_at"]
        where = Text(f"{s['largest_weight']:.{precision}f} ")
        where.append(f"{escape_token(q_tokens[i])} → {escape_token(k_tokens[j])}", style="dim")
        table.add_row(
            str(result.head_index(s["head"])),
            f"{_f(s['mean_entropy_bits'], precision)} / {s['max_entropy_bits']:.{precision}f}",
            _f(s["entropy_ratio"], precision),
            where,
            _f(s["diagonal_mass"], precision),
            _f(s["mean_distance"], precision),
        )
    return table


def top_table(result: AttentionResult, precision: int = 2) -> Table:
    """The three keys each query attends to most, per head, largest first."""
    stats = summaries(result)
    k_tokens = result.key_tokens.drawn()
    repeated = {t: k_tokens.count(t) > 1 for t in k_tokens}
    table = Table(
        title="Top 3 keys of each query", box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", title_style="bold"
    )
    table.add_column("query", overflow="fold")
    for s in stats:
        name = f"head {result.head_index(s['head'])}" if len(stats) > 1 else "keys (weight)"
        table.add_column(name, overflow="fold")
    for i in columns_shown(len(result.tokens), MAX_ROWS):
        if i is None:
            table.add_row(*(Text("⋮", style="dim") for _ in range(len(stats) + 1)))
            continue
        q = result.tokens.drawn()[i]
        cells = []
        for s in stats:
            cell = Text()
            for rank, (j, w) in enumerate(zip(s["top_keys"][i], s["top_weights"][i])):
                if rank:
                    cell.append(" · ", style="dim")
                cell.append(escape_token(k_tokens[j]), style="bold" if rank == 0 else "")
                if repeated[k_tokens[j]]:
                    cell.append(f"#{j}", style="dim")  # which of the equal tokens
                cell.append(f" {w:.{precision}f}", style="dim")
            cells.append(cell)
        table.add_row(Text(escape_token(q)), *cells)
    return table


def stats_view(result: AttentionResult, precision: int = 2, width: int = 100) -> RenderableType:
    notes = [
        "entropy −Σ a log₂ a of each row (0: all on one key; log₂ n: spread evenly); diagonal mass: "
        "mean a_ii, each token's weight on itself; |i − j|: mean distance attended, in tokens"
    ]
    if result.context is not None:
        notes.append("cross-attention: no diagonal; |i − j| compares positions in two texts")
    return Group(
        Fitted(stats_table(result, precision)),
        Fitted(top_table(result, precision)),
        Text("\n".join(notes), style="dim"),
    )


def show_view(
    result: AttentionResult,
    precision: int = 2,
    width: int = 100,
    stats: bool = False,
    head: int | None = None,
    mean: bool = False,
    query: str | None = None,
    matrix_only: bool = False,
    scale: str = "sqrt",
    drop_sink: bool = False,
) -> RenderableType:
    """`attn show`'s table: the matrices and outputs, with the head statistics as tables when asked (`stats`), or
    in a line per head for a text of at most SHORT tokens when the source keeps its panels few; `query`: one
    query's row as bars instead; `scale`: how the weights' shades are placed (a key of style.SCALES); `drop_sink`:
    the weights without key 0, rows renormalized."""
    if query is not None:
        return Group(*query_bars(result, query, precision, head, mean), caption(result))
    short = result.weights is not None and max(result.weights.shape[1:]) <= SHORT
    below = (
        stats_view(result, precision, width)
        if stats
        else summary_lines(result, precision)
        if short and result.source.stats_unasked(result)
        else None
    )
    return show(result, precision, width, below, head, mean, matrix_only, scale, drop_sink)
