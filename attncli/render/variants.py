"""`attn variants`: the registry as a table and notes (Rich only, so the listing starts without NumPy)."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attncli.render.fit import Fitted
from attncli.render.units import Units


def variants(rows: list[dict], width: int = 100) -> RenderableType:
    """`attn variants`: one line per registered variant, then what each one means (from `Variant.record()`)."""
    table = Table(title="Attention variants (-v NAME)", box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    for name in ("variant", "formula", "widths", "paper"):
        table.add_column(name, overflow="fold")  # wraps when the width is short, never cut
    for row in rows:
        table.add_row(
            Text(row["name"], style="bold"),
            Text(row["formula"]),
            Text("equal" if row["equal_width"] else "any"),
            Text(row["paper"]),
        )
    parts: list[RenderableType] = [Fitted(table)]
    for row in rows:
        params = [f"{p} {shape}" for p, shape in row["parameters"].items()] + [
            f"--{o} {o[0].upper()} ({d})" for o, d in row.get("options", {}).items()
        ]
        notes = Table.grid(padding=(0, 1))
        notes.add_column(no_wrap=True)
        notes.add_column(overflow="fold")
        if params:
            notes.add_row(" •", Text("parameters: " + ", ".join(params)))
        for note in row["notes"]:
            notes.add_row(" •", Text(note))
        parts += [Units.of(Text.assemble((row["name"], "bold"), f" — {row['summary']}")), Fitted(notes), Text("")]
    parts.append(
        Text(
            "widths: equal when d_q must be d_k. Shapes: h heads, d_q query width, d_k key width, "
            "d_a hidden width (--d-a); "
            "attn compute takes them without the h axis",
            style="dim",
        )
    )
    return Group(*parts)
