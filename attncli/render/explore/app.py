"""The Textual app of `attn explore`: the matrix, the focused row, the keys, and the screens they open.

Everything shown is a Rich renderable of `attncli.render` (the app only places them and handles keys); every
number comes from the `Explorer` (state.py), which runs what `attn show` runs. `run_explorer` is the one entry.
"""

from __future__ import annotations

import os
import signal
from functools import partial
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from attncli.core.measures import CONTRIBUTIONS, computed
from attncli.core.statistics import HINTS
from attncli.errors import AttnError
from attncli.io import documents
from attncli.io.escape import escape_text
from attncli.io.formats import offline_svg
from attncli.io.output import emit
from attncli.io.write import write_output
from attncli.render.explore.behaviour import Ablation, Attribution, Behaviour, Lens
from attncli.render.explore.panels import matrix, row_panel, status, step_line
from attncli.render.explore.state import Explorer
from attncli.render.explore.widgets import Once, Pane
from attncli.render.heads import _shade, patterns
from attncli.render.matrix import Matrix
from attncli.render.show import caption
from attncli.render.stats import show_view
from attncli.render.style import shade

SIDE = (30, 60)  # the focused row's panel: its fewest and most columns (its rule, padding and scrollbar: 4)
DEBOUNCE = 0.03  # seconds of quiet typing before the edited text runs (a sentence then takes a few ms)

# (what the key is called, its word on the key line, what the help says, its bindings (key, action)): the one
# list the bindings, the key line and the help screen are made from; a key without a word is in the help only
# (the key line stays two lines at 80 columns).
KEYS = [
    ("←↑↓→", "move", "move the cursor over queries (rows) and keys (columns)", []),
    ("[ ]", "head", "previous / next head", [("left_square_bracket", "head(-1)"), ("right_square_bracket", "head(1)")]),
    (
        "{ }",
        "layer",
        "previous / next layer (--model)",
        [("left_curly_bracket", "layer(-1)"), ("right_curly_bracket", "layer(1)")],
    ),
    ("c", "part", "next part (encoder–decoder): cross, decoder, encoder", [("c", "part(1)")]),
    ("v", "variant", "next attention variant (recomputes)", [("v", "cycle('variant')")]),
    ("m", "mask", "next mask: none, causal, window:2, topk:2", [("m", "cycle('mask')")]),
    ("p", "pos", "next positional encoding", [("p", "cycle('positional')")]),
    ("t", "tok", "next tokenizer: char, word, bpe", [("t", "cycle('tokenizer')")]),
    ("a", "mean", "the mean over the heads, or back to one head", [("a", "mean")]),
    ("h", "heads", "heads overview: layers × heads, labels; Enter opens one", [("h", "heads")]),
    (
        "o",
        "",
        "what the matrix measures (--model): weights, norm ‖αf(x)‖, ALTI, value zeroing (computed when first shown)",
        [("o", "measure")],
    ),
    (
        "z",
        "",
        "the matrix's colour scale: √, log, linear (the numbers stay the same; the heads overview and the lens keep "
        "their own shades, of the weights and the probabilities)",
        [("z", "shades")],
    ),
    ("k", "", "drop key 0 (the sink), each row renormalized; again: back", [("k", "sink")]),
    (
        "n b",
        "step",
        "step through what --generate wrote (↑ ↓ too); w: all rows",
        [("n", "step(1)"), ("b", "step(-1)"), ("w", "whole")],
    ),
    ("l", "lens", "a decoder's logit lens: layers × positions, each cell's top 5", [("l", "lens")]),
    ("x", "off", "a decoder's heads switched off: Δ logit of its next token", [("x", "ablate")]),
    ("d", "", "direct logit attribution of a decoder's next token", [("d", "dla")]),
    ("e", "edit", "edit the text, recomputed as you type; Enter or Esc closes", [("e", "edit")]),
    ("s", "svg", "save the screen as SVG to a file", [("s", "save('svg')")]),
    ("j", "json", "write the JSON of attn show -f json for this run to a file", [("j", "save('json')")]),
    ("?", "help", "this help", [("question_mark", "help")]),
    ("q", "quit", "quit", [("q", "quit")]),
]
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


class HelpScreen(Once, ModalScreen[None]):
    """Every key and what it does, in a box that scrolls (↑ ↓, PgUp PgDn) where the terminal is shorter than the
    list (80 × 24); any of Esc, q, ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "close")]
    DEFAULT_CSS = "HelpScreen { align: center middle; } #help { width: 90%; max-width: 100; height: auto; "
    DEFAULT_CSS += "max-height: 90%; border: round $accent; background: $surface; padding: 0 1; }"

    def compose(self) -> ComposeResult:
        text = Text("attn explore: the keys (↑ ↓ PgUp PgDn scroll; Esc, q or ? closes this help)\n\n", style="bold")
        for name, _, what, _ in KEYS:
            text.append(f"{name:>5}  ", style="bold")
            text.append(what + "\n")
        text.append("\nEsc, q or ? closes this help", style="dim")
        with VerticalScroll(id="help"):
            yield Static(text)

    def on_mount(self) -> None:
        self.query_one("#help", VerticalScroll).focus()  # its keys scroll it


class PromptScreen(Once, ModalScreen[str | None]):
    """A one-line prompt for a file name: Enter gives it, Esc gives None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "cancel")]
    DEFAULT_CSS = "PromptScreen { align: center bottom; } #prompt { height: auto; width: 100%; "
    DEFAULT_CSS += "background: $surface; border-top: solid $accent; }"

    def __init__(self, question: str, default: str):
        super().__init__()
        self.question, self.default = question, default

    def compose(self) -> ComposeResult:
        with Pane(id="prompt"):
            yield Static(Text(self.question + " (Enter: write, Esc: cancel)", style="bold"))
            yield Input(self.default, id="path")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)


class HeadsScreen(Once, Screen[tuple[int, int] | None]):
    """`attn heads`' grid (entropy of each head, pattern label under it) with a cursor; Enter opens the head."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,h,q", "dismiss(None)", "back")]
    DEFAULT_CSS = "#grid { height: auto; max-height: 70%; } #patterns { height: auto; }"

    def __init__(self, doc: dict, at: tuple[int, int], system: str | None):
        super().__init__()
        self.doc, self.at, self.system = doc, at, system

    def compose(self) -> ComposeResult:
        doc = self.doc
        yield Static(
            Text(
                ("" if doc.get("part") is None else f"{doc['part']}: ")
                + f"entropy (bits) of every head, {doc['n_layer']} layers × {doc['n_head']} heads; under it the "
                f"pattern label ({', '.join(HINTS[label] for label in doc['labels'])}). Enter opens the head, Esc "
                "goes back.",
                style="bold",
            )
        )
        table: DataTable = DataTable(id="grid", cursor_type="cell", zebra_stripes=False)
        table.add_columns(*(f"H{h}" for h in range(doc["n_head"])))
        cells = {(r["layer"], r["head"]): r for r in doc["rows"]}
        for layer in range(doc["n_layer"]):
            row = []
            for h in range(doc["n_head"]):
                r = cells[(layer, h)]
                text = Text(f"{r['entropy']:.2f}", style=shade(_shade("entropy", r), self.system))
                text.append("\n" + HINTS.get(r["label"], ""), style="dim")
                row.append(text)
            table.add_row(*row, height=2, label=f"L{layer}")
        yield table
        yield Pane(Static(patterns(doc)), id="patterns")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.move_cursor(row=self.at[0], column=self.at[1])
        table.focus()

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        self.dismiss((event.coordinate.row, event.coordinate.column))


class ExploreApp(App[int]):
    """The main screen: a status line, the matrix (left) and the focused row (right), a message line, the keys."""

    TITLE = "attn explore"
    AUTO_FOCUS = None  # the keys go to the app (the edit line takes them only while it is open)
    CSS = """
    #status, #step { height: auto; padding: 0 1; }
    #body { height: 1fr; layout: horizontal; }
    #body.stacked { layout: vertical; overflow-y: auto; }
    #main { width: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
    #side { padding: 0 1; border-left: vkey $foreground 30%; scrollbar-size-vertical: 1; }
    #body.stacked #main, #body.stacked #side { height: auto; width: 100%; border-left: none; }
    #message { height: auto; padding: 0 1; }
    #edit { display: none; }
    #keys { height: auto; padding: 0 1; background: $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(key, f"move({dq}, {dk})", show=False) for key, (dq, dk) in MOVES.items()),
        *(Binding(key, action, show=False) for *_, bindings in KEYS for key, action in bindings),
    ]

    def __init__(self, explorer: Explorer, precision: int | None = None):
        # NO_COLOR: the terminal's own colours and Textual's NoColor filter, so not one colour code is sent
        # (Textual alone would send its greys); bold, underline and reverse video still mark the cursor and ▸
        super().__init__(ansi_color="NO_COLOR" in os.environ)
        self.e = explorer
        self.precision = 2 if precision is None else precision
        self.exact = precision  # the JSON is exact unless --precision was given, as with attn show -f json
        self.pending: Timer | None = None
        self.captioned: object = None  # the result the caption was drawn for
        self.mapping: tuple | None = None  # the run whose maps of a measure a thread is computing

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Static(id="step")
        with Container(id="body"):
            with Pane(id="main"):
                yield Static(id="matrix")
                yield Static(id="caption")
            with Pane(id="side"):
                yield Static(id="row")
        yield Static(id="message")
        yield Input(self.e.text, id="edit", placeholder="the text", select_on_focus=False)
        yield Static(Text("  ".join(f"{name} {word}" for name, word, _, _ in KEYS if word)), id="keys")

    def on_mount(self) -> None:
        self.redraw()

    # ---- drawing ----------------------------------------------------------------------------------------

    def redraw(self) -> None:
        """Every panel from the explorer's state (the caption only when the run changed: it says what was run)."""
        e = self.e
        self.query_one("#status", Static).update(status(e))
        stepping = self.query_one("#step", Static)
        stepping.display = e.step is not None  # no empty line above the whole matrix
        stepping.update(step_line(e, self.precision))
        self.query_one("#caption", Static).display = e.step is None
        shown = matrix(e, self.precision)
        self.fit(shown)
        self.query_one("#matrix", Static).update(shown)
        if self.captioned is not e.result:
            self.query_one("#caption", Static).update(caption(e.result))
            self.captioned = e.result
        self.query_one("#row", Static).update(row_panel(e, self.precision))
        if e.step is not None:  # the written token's row, the matrix's last, in view (without the caption)
            self.call_after_refresh(self.query_one("#main", Pane).scroll_end, animate=False)
        self._maps()

    def _maps(self) -> None:
        """A measure's maps not yet computed for the run in view: a thread computes them (the weights are drawn
        meanwhile, the title saying so), then the matrix is drawn again."""
        e = self.e
        if e.model is None or not computed(e.measure) or e.maps_ready() or self.mapping == e.maps_key():
            return
        self.mapping = e.maps_key()
        self.run_worker(partial(self._map_work, e.maps_job()), thread=True, exit_on_error=False, group="maps")

    def _map_work(self, job) -> None:
        try:
            job()
        except AttnError as err:
            self.call_from_thread(self._mapped, str(err))
            return
        self.call_from_thread(self._mapped, None)

    def _mapped(self, error: str | None) -> None:
        """The thread is done: the maps drawn, or why not (the matrix goes back to the weights)."""
        self.mapping = None
        if error is not None:
            self.e.measure = "weights"
            self.say(error, error=True)
        elif self.e.maps_ready():
            self.say(f"measure: {CONTRIBUTIONS[self.e.measure].title} of layer {self.e.layer}, as attn show --contrib")
        self.redraw()

    def fit(self, shown: Matrix) -> None:
        """The matrix's room first: the side panel takes 2/5 of the width (SIDE), less when that leaves the
        matrix too little for its full form or then its densest table; when even SIDE[0] does, it goes under the
        matrix (a heatmap, which has no cursor, only for what `attn show` draws as one too)."""
        total = self.size.width
        side = min(SIDE[1], max(SIDE[0] + 6, total * 2 // 5))
        for need in (shown.width(shown.forms()[0]), shown.narrowest()):
            if total - side - 3 >= need:  # the matrix's padding and scrollbar: 3
                break
            side = max(SIDE[0], total - 3 - need)
        stacked = total - side - 3 < shown.narrowest()
        self.query_one("#body").set_class(stacked, "stacked")
        self.query_one("#side").styles.width = None if stacked else side

    def on_resize(self) -> None:
        self.redraw()  # the room of the matrix and the side panel

    def say(self, message: str | None, error: bool = False) -> None:
        """The message line: what a key did, or why it did nothing."""
        said = "" if message is None else ("✗ " if error else "") + escape_text(message)  # it may quote the text
        text = Text(said, style="bold red" if error else "")
        self.query_one("#message", Static).update(text)

    def _do(self, change, *args) -> None:
        """Run one switch of the explorer; its message, or its error, goes to the message line. Under another
        screen (the heads overview, the lens, the ablation) the main screen's keys do nothing: what that screen
        shows would no longer be of the run behind it."""
        if self._covered():
            return
        try:
            self.say(change(*args))
        except AttnError as err:
            self.say(str(err), error=True)
            return
        self.redraw()

    # ---- the keys -----------------------------------------------------------------------------------------

    def action_move(self, d_query: int, d_key: int) -> None:
        if self._covered():  # a screen's own arrows
            return
        self.e.move(d_query, d_key)
        self.redraw()

    def action_head(self, step: int) -> None:
        self._do(self.e.switch_head, step)

    def action_layer(self, step: int) -> None:
        self._do(self.e.switch_layer, step)

    def action_part(self, step: int) -> None:
        self._do(self.e.switch_part, step)

    def action_cycle(self, name: str) -> None:
        self._do(self.e.cycle, name)

    def action_mean(self) -> None:
        self._do(self.e.toggle_mean)

    def action_measure(self) -> None:
        self._do(self.e.switch_measure)

    def action_shades(self) -> None:
        self._do(self.e.switch_scale)

    def action_sink(self) -> None:
        self._do(self.e.toggle_sink)

    def action_step(self, step: int) -> None:
        self._do(self.e.step_through, step)

    def action_whole(self) -> None:
        self._do(self.e.whole)

    def action_lens(self) -> None:
        self._behaviour(Lens(self.e, self.precision, self.console.color_system))

    def action_ablate(self) -> None:
        self._behaviour(Ablation(self.e, self.precision))

    def action_dla(self) -> None:
        self._behaviour(Attribution(self.e, self.precision))

    def _behaviour(self, view) -> None:
        """The lens or the ablation on a screen of its own; a text run or an encoder says why it has none."""
        if self._covered():
            return
        why = self.e.not_a_decoder(lens=isinstance(view, Lens), ablate=isinstance(view, Ablation | Attribution))
        if why is not None:  # said as the other keys say why they do nothing here
            self.say(why)
            return
        self.push_screen(Behaviour(view))

    def _covered(self) -> bool:
        """Whether another screen is over the main one (or on its way): a key meant for the main screen that
        comes in a burst finds it so, and does nothing."""
        return len(self.screen_stack) > 1

    def action_help(self) -> None:
        if not self._covered():
            self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        self.exit(0)

    def action_heads(self) -> None:
        if self._covered():
            return
        try:
            doc = self.e.heads_document()
        except AttnError as err:
            self.say(str(err), error=True)
            return
        at = ((self.e.layer or 0) if self.e.model is not None else 0, self.e.head)
        self.push_screen(HeadsScreen(doc, at, self.console.color_system), self._open_head)

    def _open_head(self, chosen: tuple[int, int] | None) -> None:
        if chosen is not None:
            self._do(self.e.open_head, *chosen)

    # ---- editing the text ---------------------------------------------------------------------------------

    def action_edit(self) -> None:
        if self._covered():
            return
        edit = self.query_one("#edit", Input)
        edit.value = self.e.text
        edit.display = True
        edit.focus()
        self.say("editing: the view follows as you type; Enter or Esc closes the line")

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "edit" or not event.input.display:
            return
        if self.pending is not None:
            self.pending.stop()
        self.pending = self.set_timer(DEBOUNCE, partial(self.recompute, event.value))

    def recompute(self, text: str) -> None:
        """Run the edited text; an error (an empty text, an unknown byte) is said and the last view stays."""
        self.pending = None
        try:
            self.e.compute(text=text)
        except AttnError as err:
            self.say(str(err), error=True)
            return
        self.say(None)
        self.redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "edit":
            self._close_edit()

    def on_key(self, event) -> None:
        if event.key == "escape" and self.query_one("#edit", Input).display:
            self._close_edit()

    def _close_edit(self) -> None:
        edit = self.query_one("#edit", Input)
        if self.pending is not None:  # what was typed last counts
            self.pending.stop()
            self.recompute(edit.value)
        edit.display = False
        self.set_focus(None)

    # ---- saving ---------------------------------------------------------------------------------------------

    def action_save(self, kind: str) -> None:
        if self._covered():
            return
        question = "Save the screen as SVG to" if kind == "svg" else "Write the JSON of attn show -f json to"
        self.push_screen(PromptScreen(question, f"attn-explore.{kind}"), partial(self._save, kind))

    def _save(self, kind: str, path: str | None) -> None:
        if path is None:
            self.say("not saved")
            return
        if kind == "svg":  # after the prompt has gone from the screen
            self.call_after_refresh(self._write_svg, path)
            return
        result = self.e.result
        doc = documents.Result("attn show", partial(show_view, result), result=result)
        try:
            emit(doc, "json", path, self.exact, "never")
        except AttnError as err:
            self.say(str(err), error=True)
            return
        self.say(f"wrote {path}: the JSON attn show -f json writes for this run (every head)")

    def _write_svg(self, path: str) -> None:
        svg = offline_svg(self.export_screenshot())  # no font fetched from the web when it is opened
        try:
            write_output(path, lambda stream: stream.write(svg.encode("utf-8")))
        except AttnError as err:
            self.say(str(err), error=True)
            return
        self.say(f"saved {path}")


def run_explorer(explorer: Explorer, precision: int | None, color: str) -> int:
    """Run the app full-screen until `q`; its exit code. --color never draws without colour (as NO_COLOR does)."""
    if color == "never":
        os.environ["NO_COLOR"] = "1"  # read by Textual when the app is made; this process ends with the app
    app = ExploreApp(explorer, precision)

    def leave(signum: int, frame) -> None:
        """SIGTERM: leave as `q` does, giving the terminal back. SIGHUP: the terminal (or the ssh connection) is
        gone, so there is nothing to give back, and a Textual app shutting down into a closed terminal can spin
        forever on its input thread: end the process now (the files `s` and `j` write are atomic)."""
        if signum == getattr(signal, "SIGHUP", None):
            os._exit(128 + signum)
        app.exit(return_code=128 + signum)

    ending = [getattr(signal, name) for name in ("SIGHUP", "SIGTERM") if hasattr(signal, name)]
    previous = {signum: signal.signal(signum, leave) for signum in ending}
    try:
        app.run()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return app.return_code or 0
