"""`attn steps` and `attn tokens` as Rich renderables (returned, never printed).

Every stage of `attncli.pipeline.steps` becomes a table whose title holds its formula
and shape; arrays wider or longer than the screen are elided with a visible
… column or ⋮ row, never wrapped. Text from the user enters only as
`rich.text.Text` built from `escape_token`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich import box
from rich.console import Group, JustifyMethod, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from attncli.core.attention import softmax_terms
from attncli.core.variants import VARIANTS, Cell, Worked, check_qk
from attncli.pipeline.compare import coverage, token_rows
from attncli.pipeline.result import AttentionResult, Step
from attncli.pipeline.steps import steps
from attncli.render.contrib import measure_matrices, measure_note, part_note
from attncli.render.fit import Fitted
from attncli.render.matrix import Matrix, columns_shown, fmt
from attncli.render.show import Multiples, caption, escape_lines, escape_token
from attncli.render.units import Units

MAX_ROWS = 24  # longer arrays show their first and last rows around a ⋮ row

# The stage of the pipeline each step belongs to (a rule with this name goes above its first table).
STAGES = {
    "x": "embed",
    "e": "embed",
    "pe": "embed",
    "x_context": "embed",
    "q": "project",
    "k": "project",
    "v": "project",
    "scores": "score",
    "masked_scores": "mask",
    "weights": "softmax",
    "head_outputs": "mix",
    "concat": "merge",
    "output": "merge",
}


def _label(s: str, style: str = "") -> Text:
    return Text(escape_token(s), style=style)


def _quoted(token: str) -> str:
    """A token in quotes for a title or a check line, escaped once (not repr of the escape, which doubles \\)."""
    return "'" + escape_token(token) + "'"


# ---- tokens ---------------------------------------------------------------------------------------


def tokens_table(text: str, tokens, title: str | None = None, max_rows: int = 10**9) -> Table:
    """index, token, id, start, end, the text at the offsets, what kind of token it is, and (--chat) its part
    of the chat."""
    rows = token_rows(text, tokens)
    table = Table(
        title=None if title is None else Text(title),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        title_justify="left",
        title_style="bold",
    )
    columns: list[tuple[str, JustifyMethod]] = [
        ("#", "right"),
        ("token", "left"),
        ("id", "right"),
        ("start", "right"),
        ("end", "right"),
        ("text", "left"),  # text[start:end]: what the offsets select
        ("", "left"),
    ]
    if tokens.segments:  # --chat: which part of the chat each token is
        columns.append(("chat", "left"))
    for name, justify in columns:
        table.add_column(Text(name), justify=justify, overflow="fold")  # wraps when short, never cut
    shown = columns_shown(len(rows), max_rows)
    for i in shown:
        if i is None:
            table.add_row(*(Text("⋮", style="dim") for _ in columns))
            continue
        r = rows[i]
        table.add_row(
            str(r["index"]),
            _label(r["token"], "bold"),
            str(r["id"]),
            str(r["start"]),
            str(r["end"]),
            _label(r["span"]),
            Text(r["kind"], style="dim"),
            *([Text(r["segment"])] if "segment" in r else []),
        )
    return table


def tokens_summary(text: str, tokens) -> Text:
    """One dim line: counts, vocabulary and whether the offsets give the input back."""
    ok, why = coverage(text, tokens)
    rows = token_rows(text, tokens)
    kinds = {k: sum(r["kind"] == k for r in rows) for k in ("special", "unknown", "byte piece", "no span")}
    kinds = {("byte pieces" if k == "byte piece" and v > 1 else k): v for k, v in kinds.items()}
    vocab = "open vocabulary" if tokens.vocab_size is None else f"vocabulary {tokens.vocab_size:,}"
    extras = ", ".join(f"{v} {k}" for k, v in kinds.items() if v)
    lines = [
        f"{len(tokens)} tokens ({tokens.tokenizer}), {len(set(tokens.strings))} distinct, {vocab}"
        + (f"; {extras}" if extras else ""),
        f"offsets reconstruct the input: {'yes' if ok else 'NO'} — {why}",
    ]
    return Units(escape_lines("\n".join(lines)), style="dim" if ok else "yellow")  # the tokenizer is a path


def tokens_view(text: str, tokens, precision: int = 2, width: int = 100) -> RenderableType:
    """`attn tokens`: the table and its summary."""
    return Group(Fitted(tokens_table(text, tokens)), tokens_summary(text, tokens))


# ---- steps ----------------------------------------------------------------------------------------


def _shape(step: Step) -> str:
    return "[" + ", ".join(str(d) for d in step.shape) + "]"


def _labels(result: AttentionResult, axis: str, size: int):
    if axis == "query":
        return result.tokens.labels()
    if axis == "key":
        return result.key_tokens.labels()
    return None  # dimensions: numbered columns


def step_tables(result: AttentionResult, step: Step, precision: int, width: int, query: int = 0) -> list:
    """One table per head (or one table) for a step; 4-axis terms show one query, 1-axis-per-head a column."""
    axes, array = step.axes, step.array
    heads = range(array.shape[0]) if axes[0] == "head" else [None]
    title = f"{step.formula}  {_shape(step)}"
    several = len(heads) > 1
    slice_of = f"query {query} {_quoted(result.tokens.drawn()[query])} (rows: keys)"  # of a [query, key, dim] term
    if several and len(axes) == 4:
        title = f"{title} · {slice_of}"
    matrices = []
    for h in heads:
        a = array if h is None else array[h]
        rest = axes if h is None else axes[1:]
        t = f"head {h}" if several else title
        if len(rest) == 3:  # [query, key, dim]: one query's slice
            a, rest = a[query], rest[1:]
            t = t if several else f"{t} · {slice_of}"
        if len(rest) == 1:
            a = a[:, None]
            cols = [step.name.split(":")[-1]]
        else:
            cols = _labels(result, rest[1], a.shape[1])
        rows = _labels(result, rest[0], a.shape[0])
        if rows is None:
            rows = [str(i) for i in range(a.shape[0])]
        kind = "weights" if step.name == "weights" else "scores" if len(rest) == 2 and rest[1] == "key" else "values"
        masked = result.masked[h if h is not None else 0] if kind == "weights" and result.masked is not None else None
        matrices.append(Matrix(a, rows, cols, t, precision, kind, masked, row_sum=kind == "weights", max_rows=MAX_ROWS))
    out: list[RenderableType] = [Units(title, style="bold"), Multiples(matrices)] if several else [*matrices]
    if step.note:
        out.append(Units(step.note, style="dim"))
    return out


@dataclass(frozen=True)
class Words:
    """How a worked check names its cell: `label` "[query token, key token]", the two tokens, `t` the
    temperature's " / T(…)" or "", `num` a number at the precision the tables show."""

    label: str
    q_label: str
    k_label: str
    t: str
    num: Callable[[float], str]

    def term(self, x: float) -> str:
        """A number inside a sum: negatives in parentheses."""
        return f"({self.num(x)})" if x < 0 else self.num(x)

    def dots(self, a, b, terms: int = 3) -> str:  # [d], [d] -> "a·b + … "
        shown = " + ".join(f"{self.term(x)}·{self.term(y)}" for x, y in zip(a[:terms], b[:terms]))
        return shown + (" + …" if len(a) > terms else "")

    def exps(self, a, terms: int = 3) -> str:  # [F] -> "e^a + … "
        return " + ".join(f"e^{self.term(x)}" for x in a[:terms]) + (" + …" if len(a) > terms else "")


# How `attn steps` writes each worked check of attncli.core.variants (a `Worked`, by its form): plain text.
CHECKS: dict[str, Callable[[Worked, Words], str]] = {
    "qᵀk": lambda w, c: (
        f"QKᵀ{c.label} = Σ_d Q·K = {c.dots(w.a, w.b)} = {c.num(w.values['qk'])}"
        + (f"{c.t} = {c.num(w.values['s'])}" if c.t else "")
    ),
    "qᵀk / √d_k": lambda w, c: (
        f"S{c.label} = QKᵀ{c.label} / √{w.values['d_k']}{c.t} = {c.term(w.values['qk'])} / "
        f"{c.num(w.values['root'])}{c.t} = {c.num(w.values['s'])}"
    ),
    "qᵀk / (‖q‖ ‖k‖)": lambda w, c: (
        f"S{c.label} = {c.term(w.values['qk'])} / ({c.num(w.values['q_norm'])} · "
        f"{c.num(w.values['k_norm'])}){c.t} = {c.num(w.values['s'])}"
    ),
    "Σ_a v[a] · tanh(…)[a]": lambda w, c: (
        f"S{c.label} = Σ_a v[a] · tanh(…)[a] = {c.dots(w.a, w.b)}{c.t} = {c.num(w.values['s'])}"
    ),
    "Σ_d (qW)[d] · k[d]": lambda w, c: (
        f"S{c.label} = Σ_d (QW)[d] · K[d] = {c.dots(w.a, w.b)}{c.t} = {c.num(w.values['s'])}"
    ),
    "gate · qᵀk": lambda w, c: (
        f"S{c.label} = gate · qᵀk{c.t} = {c.num(w.values['gate'])} · "
        f"{c.term(w.values['qk'])}{c.t} = {c.num(w.values['s'])}"
    ),
    "qᵀk̄ / √d_k": lambda w, c: (
        f"S{c.label} = Q[{c.q_label!r}]·K̄[{c.k_label!r}] / √{w.values['d_k']}{c.t} = "
        f"({c.dots(w.a, w.b)}) / {c.num(w.values['root'])}{c.t} = {c.num(w.values['s'])}"
    ),
    "ln mean_f e^(a_f + b_f)": lambda w, c: (
        f"S{c.label} = ln((1/F) Σ_f e^(a_f + b_f)) = ln(({c.exps(w.a)}) / "
        f"{w.values['features']}){c.t} = {c.num(w.values['s'])}"
    ),
}


def check(result: AttentionResult, step: Step, precision: int, i: int = 0) -> Text | None:
    """The arithmetic of one number of the step (head 0, query i, the first key), to redo by hand."""
    p, c = precision + 1, result.config
    scores, weights = result.attention("attn steps shows the n × n weights: run without --no-weights")
    assert c.d_k is not None  # a resolved config has its widths
    q_tok, k_tok = _quoted(result.tokens.drawn()[i]), _quoted(result.key_tokens.drawn()[0])
    t = f" / T({c.temperature:g})" if c.temperature != 1 else ""
    worked = Words(f"[{q_tok}, {k_tok}]", q_tok, k_tok, t, lambda x: fmt(x, p))
    cell = Cell(result.q[0, i], result.k[0, 0], float(scores[0, i, 0]), c.d_k, result.trace, result.params, i)
    numbers = {"trace:qk": check_qk, "scores": VARIANTS[c.variant].check}.get(step.name)  # the score's own, or qᵀk
    if numbers is not None:
        w = numbers(cell)
        line = CHECKS[w.form](w, worked)
    elif step.name == "weights":
        top, e, total = softmax_terms(scores[0, i], None if result.masked is None else result.masked[0, i])
        if not total:
            return Text(f"check: every key of {q_tok} is masked, so its row of A is all 0", style="dim")
        line = (
            f"A{worked.label} = e^(s − max) / Σ e^(s − max): the row maximum is {fmt(top, p)}, "
            f"e^(s − max) = "
            + ", ".join(fmt(x, p) for x in e[:5])
            + (", …" if e.size > 5 else "")
            + f", their sum {fmt(total, p)}; {fmt(e[0], p)} / {fmt(total, p)} = "
            + fmt(float(weights[0, i, 0]), p)
        )
    elif step.name == "head_outputs":
        a, v = weights[0, i], result.v[0, :, 0]
        line = f"O_0[{q_tok}][0] = Σ_j A[{q_tok}, j] · V[j][0] = {worked.dots(a, v, 4)} = " + fmt(
            float(result.head_outputs[0, i, 0]), p
        )
    else:
        return None
    return Units("check: " + line + "\n", style="dim")


def show_steps(
    result: AttentionResult, precision: int = 2, width: int = 100, query: int = 0, contributions=None
) -> RenderableType:
    # contributions: attncli.models.interpret.contrib.Contributions, or None (the weights)
    """`attn steps`: tokens, then every stage of the pipeline as its own table, formula and shape in the title;
    with `contributions` (--contrib), the measure's matrices where the weights A would be, titled by it."""
    parts: list[RenderableType] = [caption(result), Rule("1 · tokenize", align="left", style="dim")]
    parts.append(
        Fitted(
            tokens_table(
                result.text or "", result.tokens, title=f"tokens of the text  [{len(result.tokens)}]", max_rows=MAX_ROWS
            )
        )
    )
    if result.context_tokens is not None:
        parts.append(
            Fitted(
                tokens_table(
                    result.context or "",
                    result.context_tokens,
                    max_rows=MAX_ROWS,
                    title=f"tokens of --context (keys and values)  [{len(result.context_tokens)}]",
                )
            )
        )
    stage, number = "tokenize", 1
    all_steps = steps(result)
    for step in all_steps:
        name = step.stage or STAGES.get(step.name, "score")
        if name != stage:
            if name == "softmax" and result.masked is None:
                number += 1
                parts += [Rule(f"{number} · mask", align="left", style="dim"), Text("no mask: S' = S", style="dim")]
            stage, number = name, number + 1
            parts.append(Rule(f"{number} · {name}", align="left", style="dim"))
        if contributions is not None and step.name == "weights":
            parts += measure_matrices(result, contributions, precision, MAX_ROWS)
            parts += [measure_note(contributions.measure), *part_note(contributions)]
            parts.append(
                Units(
                    f"drawn in place of the weights {step.formula} (-f json keeps them in its steps; --contrib "
                    "weights draws them)",
                    style="dim",
                )
            )
            continue
        parts.extend(step_tables(result, step, precision, width, query))
        worked = check(result, step, precision, query)
        if worked is not None:
            parts.append(worked)
    return Group(*parts)
