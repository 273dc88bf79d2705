"""`attn ablate` as a Rich renderable: the heads ranked by how much switching each off moves the target's logit."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attncli.io.escape import escape_token
from attncli.render.fit import Fitted

MOST = 20  # heads in the table (-f json has them all)


def ablate_view(doc: dict, precision: int = 2, width: int = 100, most: int = MOST) -> RenderableType:
    """The `most` heads that move the target's logit most, what was switched off, and what the numbers are."""
    rows = doc["rows"]
    target = escape_token(doc["target"]["token"])
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name, justify in (("rank", "right"), ("head", "left"), ("Δ logit", "right"), ("Δ log-prob", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for rank, r in enumerate(rows[:most], 1):
        table.add_row(
            str(rank),
            f"L{r['layer']}.H{r['head']}",
            f"{r['delta_logit']:+.{precision}f}",
            f"{r['delta_logprob']:+.{precision}f}",
        )
    title = Text(f"heads switched off one at a time: the logit of {target} after the last token", style="bold")
    notes = [
        doc["summary"],
        f"target: {target} (id {doc['target']['id']}), "
        + ("the model's own next token" if doc["target"]["given"] is None else "as --target gave it")
        + f" at position {doc['position']}: logit {doc['clean_logit']:.{precision}f}, "
        f"log-probability {doc['clean_logprob']:.{precision}f} with every head on",
        f"switched off ({doc['mode']}): {doc['means']}, its slice of the output projection's input; "
        "Δ = with the head off − with every head on; ranked by |Δ logit|",
    ]
    if len(rows) > most:
        notes.append(f"… {len(rows) - most} more heads; -f json for all")
    return Group(title, Fitted(table), Text("\n".join(notes), style="dim"))
