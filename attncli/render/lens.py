"""`attn lens` as a Rich renderable: layers down, positions across, each cell the top next token and its probability.

Laid out when drawn, in the densest form that fits: one line a cell (`Paris 0.87`), else the token over its
probability, else the middle positions elided behind a declared … column. A token is never cut: each column is
as wide as its longest token.
"""

from __future__ import annotations

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from attncli.io.escape import escape_token
from attncli.pipeline.tokenize import GENERATED_MARK
from attncli.pipeline.tokentext import labels, legend
from attncli.render.matrix import columns_shown
from attncli.render.style import shade, system_of

FORMS = ("one line", "two lines")  # a cell: `token prob`, or the token over its probability


class LensGrid:
    """The lens document's top-1 token and probability of every layer (rows) and position (columns)."""

    def __init__(self, doc: dict, precision: int = 2):
        self.doc, self.precision = doc, precision
        self.n_pos, self.n_rows = len(doc["tokens"]), doc["n_layer"] + 1
        self.cells = {(r["layer"], r["position"]): r for r in doc["rows"]}
        self.label = max(len("layer"), len(str(self.n_rows - 1)))
        wrote = len(doc["tokens"]) - len(doc["generated"]["ids"]) if "generated" in doc else self.n_pos
        drawn = labels(doc["tokens"], doc["texts"], doc["special"] or [False] * self.n_pos)
        self.header = [f"{i} {GENERATED_MARK * (i >= wrote)}{escape_token(t)}" for i, t in enumerate(drawn)]

    def _prob(self, r: dict) -> str:
        return f"{r['top_probs'][0]:.{self.precision}f}"

    @staticmethod
    def top_label(r: dict) -> str:
        """A cell's top token as text (`␣Paris`)."""
        return labels(r["top_tokens"][:1], r["top_texts"][:1], [False])[0]

    def _token(self, r: dict) -> str:
        return escape_token(self.top_label(r))

    def column(self, i: int, form: str) -> int:  # the width of position i's column in `form`
        cells = [self.cells[(l, i)] for l in range(self.n_rows)]
        if form == "one line":
            body = max(len(self._token(r)) + 1 + len(self._prob(r)) for r in cells)
        else:
            body = max(max(len(self._token(r)), len(self._prob(r))) for r in cells)
        return max(body, *(len(part) for part in self.header[i].split(" ", 1)))

    def cell(self, l: int, i: int, form: str, system: str | None) -> Text:
        """Layer l at position i: its top token (bold at the last layer, the model's own) and probability."""
        r = self.cells[(l, i)]
        cell = Text(self._token(r), style="bold" if l == self.n_rows - 1 else "")
        cell.append(" " if form == "one line" else "\n")
        cell.append(self._prob(r), style=shade(r["top_probs"][0], system))
        return cell

    def top(self, l: int, i: int) -> Text:
        """Layer l at position i: its `k` most probable next tokens, each with its probability and id, in a line
        that wraps."""
        r = self.cells[(l, i)]
        out = Text(f"layer {l}, position {self.header[i]}: its top {len(r['top_ids'])} next tokens  ", style="bold")
        drawn = labels(r["top_tokens"], r["top_texts"], [False] * len(r["top_ids"]))
        for rank, (t, token, p) in enumerate(zip(r["top_ids"], drawn, r["top_probs"]), 1):
            out.append(f"{rank}. ", style="dim")
            out.append(f"{escape_token(token)} {p:.{self.precision}f}", style="bold")
            out.append(f" (id {t})  ", style="dim")
        return out

    def width(self, shown: list[int | None], form: str) -> int:
        return self.label + sum(1 + (1 if i is None else self.column(i, form)) for i in shown)  # 1: the divider

    def layout(self, max_width: int) -> tuple[str, list[int | None]]:
        """The densest form that fits: every position on one line, on two, then fewer positions (at least 3)."""
        for form in FORMS:
            if self.width(list(range(self.n_pos)), form) <= max_width:
                return form, list(range(self.n_pos))
        keep = self.n_pos
        while keep > 3 and self.width(columns_shown(self.n_pos, keep), FORMS[-1]) > max_width:
            keep -= 1
        return FORMS[-1], columns_shown(self.n_pos, keep)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = self.width(list(range(self.n_pos)), FORMS[0])
        return Measurement(min(self.width(columns_shown(self.n_pos, 3), FORMS[-1]), options.max_width), widest)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        form, shown = self.layout(options.max_width)
        system = system_of(console)
        yield Text(
            f"logit lens: the most probable next token and its probability  [{self.n_rows} layers × {self.n_pos} "
            "positions]",
            style="bold",
        )
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=0)
        table.add_column(Text("layer", style="dim"), justify="right", no_wrap=True, width=self.label)
        for i in shown:
            width = 1 if i is None else self.column(i, form)
            header = "…" if i is None else self.header[i].replace(" ", "\n", 1)
            table.add_column(header, justify="left", no_wrap=True, width=width, overflow="fold")
        for l in range(self.n_rows):
            row: list[Text] = [Text(str(l), style="bold")]
            for i in shown:
                if i is None:
                    row.append(Text("…", style="dim"))
                    continue
                row.append(self.cell(l, i, form, system))
            table.add_row(*row)
        yield table
        if None in shown:
            hidden = [i for i in range(self.n_pos) if i not in shown]
            yield Text(
                f"… {len(hidden)} positions ({hidden[0]}–{hidden[-1]}) hidden; "
                f"--width {self.width(list(range(self.n_pos)), FORMS[-1])} or -f json for all",
                style="dim",
            )


def lens_view(doc: dict, precision: int = 2, width: int = 100) -> RenderableType:
    """`attn lens`: the grid and what its numbers are."""
    notes = [
        doc["summary"],
        "each cell: the next token the model predicts after that position (the column's token) if it stopped "
        "after that layer — the residual stream through its final norm and unembedding (the logit lens, "
        "nostalgebraist 2020) — and its probability (darker = larger)",
        doc["layers"] + f"; the last, layer {doc['n_layer']}, is the model's own prediction (bold)",
        f"columns: position and token; -f json: the top {doc['k']} of every cell",
    ]
    if "generated" in doc:
        notes.append(f"{GENERATED_MARK} = written by the model after the text, {doc['generated']['decoding']}")
    if "chat_caption" in doc:
        notes.append(doc["chat_caption"])
    if any(doc["special"]):
        notes.append("the tokenizer added: " + " ".join(t for t, s in zip(doc["tokens"], doc["special"]) if s))
    grid = LensGrid(doc, precision)
    said = legend([*grid.header, *(grid.top_label(r) for r in doc["rows"])])
    if said is not None:
        notes.append(said)
    return Group(grid, Text("\n".join(notes), style="dim"))
