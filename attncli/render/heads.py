"""`attn heads` and `attn show --rollout` as Rich renderables (returned, never printed).

The heads grid has one row per layer and one column per head; each cell holds the
chosen statistic (shaded, darker = larger) and, under it, the head's label when it has
a clear pattern, so the interesting heads of a model are found in one screen.
"""

from __future__ import annotations

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from attncli.core.statistics import DETECTORS, EVIDENCE, HINTS, shade_key
from attncli.models import BROAD, PATTERN_MASS
from attncli.models.runs.source import describe, token_marks
from attncli.render.matrix import HEATMAP_ABOVE, Matrix, columns_shown
from attncli.render.show import escape_token
from attncli.render.style import shade, system_of
from attncli.render.units import Units

MOST = 8  # heads listed per pattern under the grid (-f json has them all)


def _shade(stat: str, row: dict) -> float:
    """A cell's value on 0..1 for its shading: entropy as its broadness (÷ its maximum), the others as they are."""
    return row[shade_key(stat)] or 0.0


class HeadsGrid:
    """Layers down, heads across; each cell the statistic (shaded) and, below it, the head's label if any.

    Laid out when drawn: every head when the width allows, else the middle heads elided behind a … column
    and a line that says which.
    """

    def __init__(self, doc: dict, stat: str, precision: int = 2, named: str = "label"):
        self.doc, self.stat, self.precision, self.named = doc, stat, precision, named  # named: the row's key
        self.cells = {(r["layer"], r["head"]): r for r in doc["rows"]}
        self.cell = max(4, len(f"H{doc['n_head'] - 1}"), max(len(f"{r[stat]:.{precision}f}") for r in doc["rows"]))
        self.label = max(len("layer"), len(f"L{doc['n_layer'] - 1}"))

    def width(self, n: int) -> int:
        return self.label + n * (self.cell + 1)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(
            min(self.width(3), options.max_width), min(self.width(self.doc["n_head"]), options.max_width)
        )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        n_layer, n_head = self.doc["n_layer"], self.doc["n_head"]
        keep = n_head
        while keep > 3 and self.width(keep) > options.max_width:
            keep -= 1
        shown = columns_shown(n_head, keep)
        system = system_of(console)
        on = "" if "contrib" not in self.doc else f" by {self.doc['contrib']['title']}, as shares of each row"
        yield Text(f"{self.stat} of every head{on}  [{n_layer} layers × {n_head} heads]", style="bold")
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=0)
        table.add_column(Text("layer", style="dim"), justify="right", no_wrap=True, width=self.label)
        for h in shown:
            table.add_column(
                "…" if h is None else f"H{h}", justify="right", no_wrap=True, width=1 if h is None else self.cell
            )
        for layer in range(n_layer):
            row = [Text(f"L{layer}", style="bold")]
            for h in shown:
                if h is None:
                    row.append(Text("…", style="dim"))
                    continue
                r = self.cells[(layer, h)]
                text = Text(f"{r[self.stat]:.{self.precision}f}", style=shade(_shade(self.stat, r), system))
                text.append("\n" + HINTS.get(r[self.named], ""), style="dim")
                row.append(text)
            table.add_row(*row)
        yield table
        if None in shown:
            hidden = [h for h in range(n_head) if h not in shown]
            yield Text(
                f"… {len(hidden)} heads (H{hidden[0]}–H{hidden[-1]}) hidden; --width {self.width(n_head)} "
                "or -f json for all",
                style="dim",
            )


def patterns(doc: dict, precision: int = 2, most: int = MOST) -> Text:
    """Each label with its heads, strongest first: `previous-token (prev, 2): L0 H2 1.00, L1 H9 0.59`."""
    out = Units()
    for label in doc["labels"]:
        stat = EVIDENCE[label]
        heads = sorted((r for r in doc["rows"] if r["label"] == label), key=lambda r: -r[stat])
        out.append(f"{label} ({HINTS[label]}, {len(heads)}): ", style="bold")
        out.append(", ".join(f"L{r['layer']} H{r['head']} {r[stat]:.{precision}f}" for r in heads[:most]) or "none")
        out.append(f", … {len(heads) - most} more" if len(heads) > most else "", style="dim")
        out.append("\n")
    return out


def _token_line(what: str, tokens: list[str]) -> str:
    shown = " ".join(escape_token(t) for t in tokens[:40]) + (" …" if len(tokens) > 40 else "")
    return f"{len(tokens)} {what}: {shown}"


def heads_view(doc: dict, stat: str, max_bits: float, precision: int = 2, width: int = 100) -> RenderableType:
    """`attn heads`: the grid, the labelled heads by pattern, and what the numbers mean (a cross-attention's:
    target rows over source columns, and the statistics it has no meaning for); `max_bits`: the entropy of a
    uniform row over every key, log2 n."""
    keys = doc.get("context_tokens", doc["tokens"])
    notes = [doc["summary"]]
    if "context_tokens" in doc:
        notes += [_token_line("target tokens (rows)", doc["tokens"]), _token_line("source tokens (columns)", keys)]
    else:
        notes.append(_token_line("tokens", doc["tokens"]))
    if "generated" in doc:
        wrote, how = doc["generated"]["ids"], doc["generated"]["decoding"]
        notes.append(
            f"the last {len(wrote)} tokens the model wrote after the text (--generate, {how}): "
            + " ".join(escape_token(t) for t in doc["tokens"][len(doc["tokens"]) - len(wrote) :])
        )
    if "chat_caption" in doc:
        notes.append(doc["chat_caption"])
    notes += [
        f"{stat}: {doc['stats'][stat]}; the mean over the query rows; darker = larger"
        + (
            f" (shaded ÷ its maximum, log2 {len(keys)} = {max_bits:.2f} bits when every key is seen)"
            if shade_key(stat) != stat
            else ""
        ),
        f"labels: {', '.join(doc['labels'][:-1])} when that mean mass is ≥ {PATTERN_MASS} "
        f"(the largest wins), else broad when the entropy is ≥ {BROAD} of its maximum",
        *(f"no {name}: {why}" for name, why in doc.get("undefined", {}).items()),
    ]
    if doc.get("causal"):
        notes.append("causal model: row 0 is left out of the means (it can only see itself)")
    if "n_kv_head" in doc:
        group = doc["n_head"] // doc["n_kv_head"]
        shares = ", ".join(f"H{g * group}–H{g * group + group - 1} key/value head {g}" for g in range(doc["n_kv_head"]))
        notes.append(f"grouped-query, heads sharing keys and values: {shares}")
    contrib = doc.get("contrib")
    if contrib is not None:  # --contrib: what every number above and below is computed on
        notes.insert(0, f"{contrib['measure']}: {contrib['shares']}; {contrib['formula']}. {contrib['paper']}.")
        notes[1:1] = [contrib["note"]] if "note" in contrib else []  # an encoder–decoder's decoder part: f_h's stream
    weight = "weight" if contrib is None else f"share of {contrib['title']}"
    below = [] if "sinks" not in doc else [sinks_lines(doc["sinks"], doc["tokens"], precision, weight)]
    return Group(
        HeadsGrid(doc, stat, precision), patterns(doc, precision), *below, Units("\n".join(notes), style="dim")
    )


def sinks_lines(
    sinks: dict, tokens: list[str | None], precision: int = 2, weight: str = "weight", corpus: bool = False
) -> Units:
    """The sinks section: the sink rate and its heads, the largest residual norm over the median, and their
    meanings (every number computed in attncli.core.stats.sinks_section); `weight`: what a head's α is a mean of
    (the weights, or --contrib's shares); `tokens`: a position's token where it is known (a `corpus`'s first
    positions, where its texts agree)."""

    def at(i: int) -> str:
        token = tokens[i] if i < len(tokens) else None
        return "" if token is None else f" ({escape_token(token)})"

    heads = sinks["sink_heads"]
    named = ", ".join(f"L{l}H{h}" for l, h in heads[:24]) + (f" and {len(heads) - 24} more" if len(heads) > 24 else "")
    total = len(sinks["sink"]) * len(sinks["sink"][0])
    lines = [
        f"sink rate Sink^ε (ε = {sinks['epsilon']}): {sinks['sink_rate']:.{precision}f}, {len(heads)} of {total} "
        f"heads put a mean {weight} > ε on position 0{at(0)}" + (f": {named}" if heads else "")
    ]
    massive = sinks["massive_activation"]
    layer, where = max(
        ((l, i) for l in range(len(massive)) for i in range(len(massive[l]))), key=lambda li: massive[li[0]][li[1]]
    )
    lines.append(
        f"largest residual norm: {massive[layer][where]:.{precision}f} × the median, at position {where}{at(where)} "
        f"entering layer {layer}" + (", the mean over the texts that reach that position" if corpus else "")
    )
    if corpus:
        lines.append(
            "over the corpus: α_k is the mean over every query i >= k of every text, so a longer text weighs more"
        )
    lines += [f"{name}: {meaning}" for name, meaning in sinks["stats"].items()]
    return Units("\n".join(lines))


def rollout_view(r, precision: int = 2, width: int = 100) -> RenderableType:
    """`attn show --rollout`: the rolled-out matrix and what it is (an encoder–decoder's cross part: target rows
    over source columns)."""
    m, n = r.matrix.shape
    rows, cols = r.tokens.labels(), r.key_tokens.labels()
    cross = r.context_tokens is not None
    kind = "Cross-attention rollout: target rows, source columns" if cross else "Attention rollout R"
    title = f"{kind}, {'decoder ' if cross else ''}layers 0..{r.layer}  [{m}, {n}]"
    caption = [describe(r.model)]
    if cross:
        caption += [
            f"attention rollout through the encoder–decoder (Abnar & Zuidema 2020; through the cross-attention "
            f"after the encoder–decoder rule of Chefer et al. 2021, with head means), decoder layers 0..{r.layer}: "
            f"per layer T, S ← Â T, Â S (Â = ½ mean of the {r.model.n_head} self-attention heads + ½ I), then "
            "T, S ← ½ T, ½ S + ½ C E (C = mean of the cross-attention heads, E = the encoder's rollout)",
            "row i: how the part of target position i that came from the source splits over the source tokens "
            "(columns); rows rescaled to sum to 1 (the source's share is the same in every row); ▸ = row maximum",
        ]
    else:
        caption += [
            f"attention rollout, Abnar & Zuidema 2020, layers 0..{r.layer}: per layer Â = ½ (mean of the "
            f"{r.model.n_head} heads) + ½ I for the residual, R = Â_{r.layer} ⋯ Â_0",
            "row i: how much of each input token (column) has flowed into position i; each row sums to 1; "
            "▸ = row maximum",
        ]
    caption += token_marks(r.tokens, *([r.context_tokens] if cross else []))
    if r.model.causal:
        caption.append("causal model: no token receives anything from a later one (0 above the diagonal)")
    return Group(
        Matrix(
            r.matrix,
            rows,
            cols,
            title,
            precision,
            "weights",
            row_sum=True,
            max_rows=HEATMAP_ABOVE,
            divider=r.tokens.second,
        ),
        Units("\n".join(caption), style="dim"),
    )


def corpus_view(doc: dict, precision: int = 2, width: int = 100) -> RenderableType:
    """`attn heads --lines`: each head's strongest detector score (labelled when it is clear), the top heads of
    every detector, and what was read."""
    grid = HeadsGrid(doc, "score", precision, named="detector")
    top = Units()
    for name in DETECTORS:
        heads = sorted((r for r in doc["rows"] if r[name] is not None), key=lambda r: -r[name])[:5]
        top.append(f"{name} ({HINTS[name]}): ", style="bold")
        top.append(", ".join(f"L{r['layer']} H{r['head']} {r[name]:.{precision}f}" for r in heads) or "none")
        top.append("\n")
    notes = [
        f"{doc['model']}: {doc['n_layer']} layers × {doc['n_head']} heads, {doc['weights']}"
        + (f"; the {doc['part']}'s self-attention (each line is a source)" if "part" in doc else ""),
        f"{doc['corpus']}: {doc['texts']:,} texts, {doc['tokens']:,} tokens"
        + (f", {doc['skipped']:,} skipped (too long for the model)" if doc["skipped"] else "")
        + (f", {doc['overflowed']:,} left out (the model's numbers overflowed)" if doc.get("overflowed") else "")
        + (" — PARTIAL: stopped before the end" if doc["partial"] else ""),
        "cell: the head's strongest detector score, and that detector (a clear pattern, the head's label in "
        f"-f json, when at least {doc['label_score']}); each score is a mean weight in [0, 1] over the corpus's "
        "query rows",
        *(f"{name}: {text}" for name, text in DETECTORS.items()),
        "-f json|csv: the mean and spread of every detector and statistic for every head",
    ]
    below = [] if "sinks" not in doc else [sinks_lines(doc["sinks"], doc["sinks"]["positions"], precision, corpus=True)]
    return Group(grid, top, *below, Units("\n".join(notes), style="dim"))
