"""What a decoder does with its attention, as screens of `attn explore`: the logit lens (`l`), the heads
switched off (`x`) and the direct logit attribution of the model's own next token (`d`).

Each is computed the first time it opens, in a thread (the ablation of SmolLM2's 270 heads takes seconds): the
screen says what is being computed and, for the ablation, how many layers are done; Esc stops it. Then it is
drawn from the explorer's cache, computed again only for another text. The numbers are `attn lens -f json`'s,
`attn ablate -f json`'s and `attn dla -f json`'s (attncli.models.interpret.lens, .ablate, .dla); the grids reuse their
renderables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from rich.console import Group, RenderableType
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from attncli.errors import AttnError
from attncli.io.view import ranked
from attncli.render.ablate import ablate_view, drawn
from attncli.render.causal import part_name as _part
from attncli.render.explore.state import Explorer
from attncli.render.explore.widgets import Once, Pane
from attncli.render.lens import FORMS, LensGrid

RANKED = 10  # the ablation's heads listed under its grid (and marked #rank in it)


class Stopped(Exception):
    """The screen went while it computed: the thread stops at its next progress."""


class View(Protocol):
    """What a behaviour screen shows: how it is computed and said, and its grid."""

    what: str  # the explorer's cache entry: "lens", "ablate" or "dla"
    key: str  # the key that opens it (and closes it again)
    heading: str

    def done(self) -> bool: ...  # computed already (for these tokens)
    def working(self, progress: tuple[int, int] | None) -> str: ...
    def compute(self, progress: Callable[[int, int], None] | None) -> dict: ...
    def done_line(self, doc: dict) -> str: ...
    def fill(self, table: DataTable, doc: dict) -> tuple[int, int]: ...  # -> the cell to start on
    def below(self, row: int, column: int) -> RenderableType: ...


class Behaviour(Once, Screen[None]):
    """A grid with a cursor (layers down) and, under it, what the cell in focus holds; computed when it opens."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss(None)", "back")]
    DEFAULT_CSS = """
    Behaviour #title, Behaviour #working { height: auto; padding: 0 1; }
    Behaviour #grid { height: auto; max-height: 55%; }
    Behaviour #below { height: 1fr; padding: 0 1; }
    """

    def __init__(self, view: View):
        super().__init__()
        self.view, self.what = view, view.what
        self.doc: dict | None = None

    def on_key(self, event) -> None:
        if event.key == self.view.key:  # the key that opened it closes it
            event.stop()
            self.dismiss(None)

    def compose(self):
        yield Static(Text(self.view.heading, style="bold"), id="title")
        yield Static(id="working")
        yield DataTable(id="grid", cursor_type="cell", zebra_stripes=False)
        yield Pane(Static(id="detail"), id="below")

    def on_mount(self) -> None:
        self.query_one("#grid", DataTable).focus()
        if self.view.done():
            self.show(self.view.compute(None))
            return
        self.query_one("#working", Static).update(Text(self.view.working(None), style="bold reverse"))
        self.run_worker(self._work, thread=True, exit_on_error=False)

    def _work(self) -> None:
        """In the thread: compute, saying how far it is; then draw, or say why not (on the app's thread)."""
        worker = get_current_worker()

        def progress(done: int, total: int) -> None:
            if worker.is_cancelled:
                raise Stopped
            self.app.call_from_thread(self._progress, done, total)

        try:
            doc = self.view.compute(progress)
        except Stopped:
            return
        except AttnError as err:
            if not worker.is_cancelled:
                self.app.call_from_thread(self._failed, str(err))
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self.show, doc)

    def _progress(self, done: int, total: int) -> None:
        self.query_one("#working", Static).update(Text(self.view.working((done, total)), style="bold reverse"))

    def _failed(self, message: str) -> None:
        self.query_one("#working", Static).update(Text("✗ " + message, style="bold red"))

    def show(self, doc: dict) -> None:
        """The grid of `doc`, the cursor on the cell to start on, and what that cell holds."""
        self.doc = doc
        self.query_one("#working", Static).update(Text(self.view.done_line(doc), style="dim"))
        table = self.query_one("#grid", DataTable)
        table.clear(columns=True)
        row, column = self.view.fill(table, doc)
        table.move_cursor(row=row, column=column)
        self.detail(row, column)

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        if self.doc is not None:
            self.detail(event.coordinate.row, event.coordinate.column)

    def detail(self, row: int, column: int) -> None:
        self.query_one("#detail", Static).update(self.view.below(row, column))


class Lens:
    """`attn lens` of the run's tokens: layers × positions, each cell the top next token and its probability; the
    cell in focus lists its top 5."""

    what, key = "lens", "l"
    heading = (
        "logit lens: the most probable next token after each layer (rows; the last, bold, is the model's own) at "
        "each position, and its probability; the cell's top 5 below. Esc or l: back"
    )

    def __init__(self, explorer: Explorer, precision: int, system: str | None):
        self.e, self.precision, self.system = explorer, precision, system
        self.grid: LensGrid | None = None

    def done(self) -> bool:
        return self.e.done(self.what)

    def working(self, progress: tuple[int, int] | None) -> str:
        n = len(self.e.result.tokens)
        return (
            f"computing the logit lens: one pass of {self.e.model.name} over the {n} tokens, then every layer's "
            f"{n} positions through its final norm and unembedding …"
        )

    def compute(self, progress: Callable[[int, int], None] | None) -> dict:
        return self.e.lens()

    def done_line(self, doc: dict) -> str:
        return doc["layers"] + ("; › = written by the model" if "generated" in doc else "")

    def fill(self, table: DataTable, doc: dict) -> tuple[int, int]:
        """The grid; the cursor starts on the model's own prediction (the last layer) at the query in focus
        (stepping through the written tokens, the row that chose the one in focus: where it was predicted)."""
        self.grid = grid = LensGrid(doc, self.precision)
        table.add_columns(*grid.header)
        for l in range(grid.n_rows):
            table.add_row(*(grid.cell(l, i, FORMS[0], self.system) for i in range(grid.n_pos)), label=str(l))
        return grid.n_rows - 1, min(self.e.query, grid.n_pos - 1)  # stepping: the row that chose the token

    def below(self, row: int, column: int) -> RenderableType:
        assert self.grid is not None
        return self.grid.top(row, column)


class Ablation:
    """`attn ablate` of the text: layers × heads, each cell the change that ranks the heads (the document's
    "ranked_by": Δ log-probability of the next token) with that head switched off (#rank on the 10 that move it
    most); the head in focus and the ranking under the grid."""

    what, key = "ablate", "x"
    heading = (
        "heads switched off one at a time: how each moves the model's next token after the text (layers down, heads "
        "across; each cell the change that ranks them, named under the grid; #n: its rank). Esc or x: back"
    )

    def __init__(self, explorer: Explorer, precision: int):
        self.e, self.precision = explorer, precision
        self.doc: dict | None = None
        self.cells: dict[tuple[int, int], tuple[int, dict[str, Any]]] = {}

    def done(self) -> bool:
        return self.e.done(self.what)

    def working(self, progress: tuple[int, int] | None) -> str:
        m = self.e.model
        done = "" if progress is None else f": layer {progress[0]} of {progress[1]} done"
        return (
            f"switching off each of the {m.n_layer * m.n_head} heads of {m.name} alone, a batched pass from its "
            f"layer on (Esc stops){done} …"
        )

    def compute(self, progress: Callable[[int, int], None] | None) -> dict:
        return self.e.ablation(progress)

    def done_line(self, doc: dict) -> str:
        return (
            f"the next token after position {doc['position']} "
            f"'{drawn({'token': doc['tokens'][-1], 'text': doc['texts'][-1]})}': {drawn(doc['target'])}"
        )

    def fill(self, table: DataTable, doc: dict) -> tuple[int, int]:
        """The grid; the cursor starts on the head that moves the logit most."""
        self.doc = doc
        self.cells = {(r["layer"], r["head"]): (rank, r) for rank, r in enumerate(doc["rows"], 1)}
        column = doc["ranked_by"]["column"]
        n_layer, n_head = 1 + max(l for l, _ in self.cells), 1 + max(h for _, h in self.cells)
        table.add_columns(*(f"H{h}" for h in range(n_head)))
        for l in range(n_layer):
            row = []
            for h in range(n_head):
                rank, r = self.cells[(l, h)]
                text = Text(f"{r[column]:+.{self.precision}f}")
                if rank <= RANKED:
                    text.append(f" #{rank}", style="bold")
                row.append(text)
            table.add_row(*row, label=f"L{l}")
        return doc["rows"][0]["layer"], doc["rows"][0]["head"]

    def below(self, row: int, column: int) -> RenderableType:
        assert self.doc is not None
        rank, r = self.cells[(row, column)]
        focus = Text(f"L{row}.H{column} switched off: ", style="bold")
        focus.append(
            f"Δ logit {r['delta_logit']:+.{self.precision}f}, Δ log-prob {r['delta_logprob']:+.{self.precision}f}, "
            f"rank {rank} of {len(self.doc['rows'])} by |{self.doc['ranked_by']['label']}|"
        )
        return Group(focus, Text(""), ablate_view(self.doc, self.precision, most=RANKED))


class Attribution:
    """`attn dla` of the text for the model's own next token (m = its logit, no contrast): every part (the
    embeddings, each head, each MLP, the biases) ranked by |dla|, the part in focus and the sum = m under them."""

    what, key = "dla", "d"
    heading = (
        "direct logit attribution of the model's next token after the text: each part's share of its logit m, "
        "ranked by |dla|; the parts sum to m. Esc or d: back"
    )

    def __init__(self, explorer: Explorer, precision: int):
        self.e, self.precision = explorer, precision
        self.doc: dict | None = None
        self.order: list[int] = []

    def done(self) -> bool:
        return self.e.done(self.what)

    def working(self, progress: tuple[int, int] | None) -> str:
        m = self.e.model
        return (
            f"attributing the next token: a pass of {m.name} for it, then one keeping each of its "
            f"{m.n_layer * m.n_head} heads' and {m.n_layer} MLPs' outputs …"
        )

    def compute(self, progress: Callable[[int, int], None] | None) -> dict:
        return self.e.attribution()

    def done_line(self, doc: dict) -> str:
        last = drawn({"token": doc["tokens"][-1], "text": doc["texts"][-1]})
        return (
            f"the next token after position {doc['position']} '{last}': "
            f"{drawn(doc['target'])}; the {len(doc['rows'])} parts sum to "
            f"{doc['sum']:.{self.precision + 4}f}, m = {doc['m']:.{self.precision + 4}f}"
        )

    def fill(self, table: DataTable, doc: dict) -> tuple[int, int]:
        """The parts ranked by |dla| (io.view's `ranked`: the page's order too); the cursor on the first."""
        self.doc, self.order = doc, ranked([r["dla"] for r in doc["rows"]])
        table.add_columns("part", "dla")
        for rank, k in enumerate(self.order, 1):
            r = doc["rows"][k]
            table.add_row(_part(r), Text(f"{r['dla']:+.{self.precision}f}", justify="right"), label=f"#{rank}")
        return 0, 0

    def below(self, row: int, column: int) -> RenderableType:
        assert self.doc is not None
        r = self.doc["rows"][self.order[row]]
        focus = Text(f"{_part(r)}: ", style="bold")
        focus.append(
            f"dla {r['dla']:+.{self.precision + 4}f} of m = logit({drawn(self.doc['target'])}) = "
            f"{self.doc['m']:.{self.precision + 4}f}, rank {row + 1} of {len(self.order)} by |dla|"
        )
        notes = "each part through the final norm with its scale frozen from the full run, then the unembedding"
        return Group(
            focus, Text(notes, style="dim"), *([Text(self.doc["capped"], style="dim")] if self.doc["capped"] else [])
        )
