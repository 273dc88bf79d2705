"""`attn ablate` as a Rich renderable: the heads ranked by how much switching each off moves the target (its
log-probability by default; the document's "ranked_by" says which column ranks)."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attncli.io.escape import escape_token
from attncli.pipeline.tokentext import labels
from attncli.render.fit import Fitted

MOST = 20  # heads in the table (-f json has them all)


def drawn(token: dict) -> str:
    """A token of the ablation (its "token" and "text") as every table draws it: `␣Paris`."""
    return escape_token(labels([token["token"]], [token["text"]], [False])[0])


def ablate_view(doc: dict, precision: int = 2, width: int = 100, most: int = MOST) -> RenderableType:
    """The `most` heads that move the ranking column most, what was switched off, and what the numbers are."""
    rows = doc["rows"]
    target = drawn(doc["target"])
    ranked = doc["ranked_by"]
    columns = [("delta_logit", "Δ logit"), ("delta_logprob", "Δ log-prob")]
    if doc["contrast"] is not None:
        columns.append(("delta_logit_diff", "Δ logit diff"))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("head", justify="left", no_wrap=True)
    for key, name in columns:
        table.add_column(name + (" ▼" if key == ranked["column"] else ""), justify="right", no_wrap=True)
    for rank, r in enumerate(rows[:most], 1):
        table.add_row(str(rank), f"L{r['layer']}.H{r['head']}", *(f"{r[key]:+.{precision}f}" for key, _ in columns))
    watched = target if doc["contrast"] is None else f"{target} − {drawn(doc['contrast'])}"
    title = Text(
        f"heads switched off one at a time, ranked by |{ranked['label']}| of {watched} after the last token",
        style="bold",
    )
    notes = [
        doc["summary"],
        f"target: {target} (id {doc['target']['id']}), "
        + ("the model's own next token" if doc["target"]["given"] is None else "as --target gave it")
        + f" at position {doc['position']}: logit {doc['clean_logit']:.{precision}f}, "
        f"log-probability {doc['clean_logprob']:.{precision}f} with every head on",
    ]
    if doc["contrast"] is not None:
        notes.append(
            f"contrast: {drawn(doc['contrast'])} (id {doc['contrast']['id']}): logit difference "
            f"target − contrast {doc['clean_logit_diff']:.{precision}f} with every head on"
        )
    notes.append(
        f"switched off ({doc['mode']}): {doc['means']}, its slice of the output projection's input; "
        f"Δ = with the head off − with every head on; ranked (▼) by |{ranked['label']}|: {ranked['means']}"
    )
    if len(rows) > most:
        notes.append(f"… {len(rows) - most} more heads; -f json for all")
    return Group(title, Fitted(table), Text("\n".join(notes), style="dim"))
