"""The Rich renderables of `attn explore`: the matrix with its cursor, the focused row, the status line.

The matrix is `attn show`'s own (`attncli.render.matrix.Matrix`: laid out for the room it gets, compact when
it must be, never a cut number) with one cell in reverse video and its row underlined, so the cursor reads
without colour. The side panel is `attn show --query`'s bars of the focused row, then the focused weight
worked out from its scores: A[i,j] = exp(S[i,j] − max) / Σ_k exp(S[i,k] − max).
"""

from __future__ import annotations

from functools import partial

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text

from attncli.core.attention import softmax_terms
from attncli.core.measures import CONTRIBUTIONS, computed
from attncli.io.escape import escape_text, escape_token
from attncli.render.bars import Bars
from attncli.render.explore.state import Explorer, shown_value
from attncli.render.matrix import HEATMAP_ABOVE, Form, Matrix, fmt

CURSOR = Style(reverse=True, bold=True)
FOCUSED_ROW = Style(underline=True)


class CursorMatrix(Matrix):
    """A weights Matrix with the cell (query, key) in reverse video and the rest of its row underlined."""

    def __init__(self, *args, cursor: tuple[int, int] = (0, 0), **kwargs):
        super().__init__(*args, **kwargs)
        self.cursor = cursor

    def _styled(self, i: int, j: int | None, form: Form, system: str | None) -> Text:
        text = super()._styled(i, j, form, system)
        if i == self.cursor[0]:
            text.stylize(CURSOR if j == self.cursor[1] else FOCUSED_ROW)
        return text


def head_name(e: Explorer) -> str:
    """`head 2 of 0..3 · layer 5 of 0..5`, or `mean of the 4 heads`; an encoder–decoder's part first."""
    heads = f"mean of the {e.n_head} heads" if e.mean else f"head {e.head} of 0..{e.n_head - 1}"
    part = f"{e.part} · " if len(e.parts()) > 1 else ""
    return part + heads + ("" if e.model is None else f" · layer {e.layer} of 0..{e.n_layer - 1}")


def layer_name(e: Explorer) -> str:
    """`layer 5 of 0..5`, an encoder–decoder's part first: what a map of the whole layer is of."""
    return (f"{e.part} · " if len(e.parts()) > 1 else "") + f"layer {e.layer} of 0..{e.n_layer - 1}"


def matrix(e: Explorer, precision: int) -> CursorMatrix:
    """What the explorer draws (`Explorer.drawn`: the weights of the head in focus or the heads' mean, a measure's
    map, the weights without key 0) on its colour scale, the cursor on the focused cell; stepping through the
    written tokens, the rows and keys up to the one in focus (what the model had when it wrote it)."""
    result = e.result
    array, cells, what, of_head = e.drawn()
    n = e.seen()
    upto = len(result.tokens) if e.step is None else n
    mapped = computed(e.measure) and e.maps_ready()  # a measure's map, its rows' sums beside it when shares
    return CursorMatrix(
        array[:upto, :n],
        result.tokens.labels()[:upto],
        result.key_tokens.labels()[:n],
        f"{what} · {head_name(e) if of_head else layer_name(e)}"
        + ("" if e.step is None else f" · rows and keys 0..{e.query}"),
        precision,
        "scores" if mapped else "weights",
        None if cells is None else cells[:upto, :n],
        row_sum=mapped and CONTRIBUTIONS[e.measure].normalized,
        max_rows=HEATMAP_ABOVE,
        scale=e.scale,
        cursor=(e.query, e.key),
    )


def weight_formula(e: Explorer, precision: int) -> Text:
    """The focused weight from its row's scores: the score, the row maximum, the sum, and the quotient."""
    weights, scores, masked = e.row()
    i, j = e.query, e.key
    q_token, k_token = escape_token(e.result.tokens.drawn()[i]), escape_token(e.result.key_tokens.drawn()[j])
    out = Text(f"A[{i},{j}]: '{q_token}' → '{k_token}'\n", style="bold")
    if masked is not None and masked[j]:
        out.append(f"key {j} is masked: A[{i},{j}] = 0, and it is left out of the row's max and Σ")
        return out
    if scores is None:  # the mean of the heads
        each = e.weights[:, i, j]
        terms = " + ".join(fmt(float(w), precision) for w in each[:4]) + (" + …" if len(each) > 4 else "")
        out.append(f"mean of the heads' A_h[{i},{j}]:\n({terms}) / {len(each)} = {fmt(float(weights[j]), precision)}")
        return out
    top, exps, total = softmax_terms(scores, masked)
    s, f = float(scores[j]), partial(fmt, precision=precision)
    out.append("A = exp(S − max) / Σ_k exp(S_k − max)\n", style="dim")
    out.append(f"S[{i},{j}] = {f(s)}\n")
    out.append(f"max    = {f(top)}")
    out.append(f" (row {i})\n", style="dim")
    out.append(f"Σ      = {f(total)}")
    keys = len(scores) if masked is None else int((~masked).sum())
    out.append(f" ({keys} key{'' if keys == 1 else 's'})\n", style="dim")
    out.append(f"A[{i},{j}] = exp({f(s)} − {f(top)}) / {f(total)}\n       = ")
    out.append(f(float(exps[j]) / total), style="bold")
    return out


def row_panel(e: Explorer, precision: int) -> RenderableType:
    """The focused query's row as bars with its scores and weights, then the focused weight's formula; when the
    matrix draws a measure's map (`o`), that map's row and the measure's formula instead (`measure_panel`)."""
    if computed(e.measure) and e.maps_ready():
        return measure_panel(e, precision)
    weights, scores, masked = e.row()
    i = e.query
    title = f"query {i} '{escape_token(e.result.tokens.drawn()[i])}' → every key"
    return Group(
        Bars(title, e.result.key_tokens.drawn()[: len(weights)], weights, scores, masked, precision),
        Text(""),
        weight_formula(e, precision),
    )


def measure_panel(e: Explorer, precision: int) -> RenderableType:
    """The focused query's row of the measure's map the matrix draws (the head's, or the layer's), as bars, then
    the focused cell: the measure's formula and paper (CONTRIBUTIONS) and its number, as attn show --contrib."""
    m = CONTRIBUTIONS[e.measure]
    array, cells, what, of_head = e.drawn()
    i, j = e.query, e.key
    n = len(array[i])
    keys = e.result.key_tokens.drawn()[:n]
    row_masked = None if cells is None else cells[i]
    of = head_name(e) if of_head else layer_name(e)
    title = f"query {i} '{escape_token(e.result.tokens.drawn()[i])}' → every key: {what} · {of}"
    sums = "each row's shares sum to 1" if m.normalized else "lengths in the model's units (a row has no fixed sum)"
    out = Text(f"{m.title}[{i},{j}]: '{escape_token(e.result.tokens.drawn()[i])}' → '{escape_token(keys[j])}'\n")
    out.stylize("bold")
    if row_masked is not None and row_masked[j]:
        out.append(f"key {j} is masked: it does not reach query {i}\n")
    out.append(f"{m.formula}\n{m.paper}\n", style="dim")
    out.append(f"{m.title}[{i},{j}] = ")
    out.append(fmt(float(array[i, j]), precision), style="bold")
    out.append("\n(the weights' softmax arithmetic: o again, to the weights)", style="dim")
    return Group(Bars(title, keys, array[i], None, row_masked, precision, column=m.title, sums=sums), Text(""), out)


def step_line(e: Explorer, precision: int) -> Text:
    """Stepping through the written tokens: which one is in focus, where, and the probability the model gave it;
    nothing for the whole matrix."""
    if e.step is None:
        return Text("")
    i, drawn = e.written_at(), e.result.tokens.drawn()
    out = Text(f"row {i - 1} '{escape_token(drawn[i - 1])}' wrote ", style="bold")
    out.append(f"'{escape_token(drawn[i])}'", style="bold reverse")
    out.append(f", probability {fmt(e.written_probability(), precision)}", style="bold")
    out.append(
        f" (written token {e.step + 1} of {e.written()}, at position {i}: the model's, from the {i} tokens "
        f"before it; in focus, row {i - 1}, the one that chose it, over them) · n b: next / previous, w: whole "
        "matrix",
        style="dim",
    )
    return out


def status(e: Explorer) -> Text:
    """One line: what runs (the switches' values, or the model) and which head is in focus."""
    out = Text()
    if e.model is None:
        c = e.config
        for name in ("tokenizer", "variant", "mask", "positional"):
            out.append(f"{name} ", style="dim")
            out.append(escape_text(shown_value(getattr(c, name))) + "  ", style="bold")  # a tokenizer.json path
    else:
        out.append(f"{escape_text(e.model.name)} ", style="bold")
    out.append(head_name(e), style="bold")
    out.append(f"  ·  {len(e.result.tokens)} tokens", style="dim")
    return out
