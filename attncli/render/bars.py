"""`attn show --query TOKEN|INDEX`: one query's row of weights as a horizontal bar chart with its numbers.

The row a learner asks about ("what does *flies* attend to?"), readable on paper:
every key on its own line with its score, its weight and a bar as long as the weight
(the longest bar is the row maximum, which also carries ▸).

>>> bar(0.5, 8), bar(0.0625, 8), bar(0.0, 8)
('████', '▌', '')
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from attncli.io.escape import escape_token
from attncli.pipeline.heads import mean_of_heads
from attncli.pipeline.result import AttentionResult
from attncli.render.matrix import MARK, fmt

EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float, width: int) -> str:
    """A bar `fraction` of `width` cells long, to the eighth of a cell."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, rest = divmod(eighths, 8)
    return "█" * full + (EIGHTHS[rest] if rest else "")


class Bars:
    """The chart of one query's row [n] of weights (and scores), laid out when it is drawn."""

    def __init__(
        self,
        title: str,
        keys: Sequence[str],
        weights,
        scores,
        masked,
        precision: int,
        column: str = "weight",
        sums: str = "the weights sum to 1",
    ):
        # `column` and `sums`: what the numbers are and what their row sums to, when it is not a row of weights
        # (attn explore's side panel on a contribution measure's map)
        self.title, self.keys = title, [escape_token(k) for k in keys]
        self.weights, self.scores, self.masked = weights, scores, masked  # [n] each; masked may be None
        self.precision, self.column, self.sums = precision, column, sums

    def _numbers(self) -> tuple[list[str], list[str]]:
        top = max((w for j, w in enumerate(self.weights) if not self._hidden(j)), default=0.0)
        weights = [
            "·" if self._hidden(j) else (MARK if w == top and top > 0 else " ") + fmt(float(w), self.precision)
            for j, w in enumerate(self.weights)
        ]
        scores = [
            "" if self.scores is None else "masked" if self._hidden(j) else fmt(float(self.scores[j]), self.precision)
            for j in range(len(self.weights))
        ]
        return weights, scores

    def _hidden(self, j: int) -> bool:
        return self.masked is not None and bool(self.masked[j])

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(40, options.max_width), options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        weights, scores = self._numbers()
        labels = [f"{j} {k}" for j, k in enumerate(self.keys)]
        label_w = max(cell_len(x) for x in [*labels, "key"])  # the header is a cell of the column too
        fixed = label_w + max(len(s) for s in [*scores, "score"]) + max(len(w) for w in [*weights, self.column]) + 3
        keyed = fixed + 8 > options.max_width  # long tokens: index labels with a key underneath
        if keyed:
            labels = [str(j) for j in range(len(self.keys))]
            fixed -= label_w - max(len(x) for x in [*labels, "key"])
        room = max(4, options.max_width - fixed)
        top = max((float(w) for j, w in enumerate(self.weights) if not self._hidden(j)), default=0.0)
        yield Text(self.title, style="bold")
        table = Table(box=None, show_header=True, pad_edge=False, padding=(0, 1, 0, 0), header_style="dim")
        table.add_column("key", no_wrap=True)
        table.add_column("" if self.scores is None else "score", justify="right", no_wrap=True)
        table.add_column(self.column, justify="right", no_wrap=True)
        table.add_column("", no_wrap=True, width=room)
        for j, label in enumerate(labels):
            w = 0.0 if self._hidden(j) else float(self.weights[j])
            table.add_row(Text(label), Text(scores[j], style="dim"), Text(weights[j]), bar(w / top if top else 0, room))
        yield table
        note = f"bars: each {self.column} ÷ the row maximum {fmt(top, self.precision)}; {self.sums}"
        if keyed:
            note += "\nkeys: " + " · ".join(f"{j} {k}" for j, k in enumerate(self.keys))
        yield Text(note, style="dim")


def query_bars(
    result: AttentionResult, spec: str, precision: int = 2, head: int | None = None, mean: bool = False
) -> list[RenderableType]:
    """The bars of the query `spec` names: one chart per head shown (every head, `head`, or their `mean`)."""
    scores, weights = result.attention("--query shows a row of the weights: run without --no-weights")
    i = result.tokens.find(spec)
    token = escape_token(result.tokens.drawn()[i])
    n_head = weights.shape[0]
    masked = None if result.masked is None else result.masked[:, i]  # [h, n]
    if mean:
        return [
            Bars(
                f"query {i} '{token}': the mean of the {n_head} heads' weights",
                result.key_tokens.drawn(),
                mean_of_heads(result)[0][i],
                None,  # the mean of the heads' scores is no score
                None if masked is None else masked.all(axis=0),
                precision,
            )
        ]
    heads = range(n_head) if head is None else [head]
    return [
        Bars(
            f"query {i} '{token}' → every key"
            + (f" · head {result.head_index(h)}" if n_head > 1 else "")
            + ": A = softmax(S) of its row",
            result.key_tokens.drawn(),
            weights[h, i],
            scores[h, i],
            None if masked is None else masked[h],
            precision,
        )
        for h in heads
    ]
