"""`attn models`: the models found on this machine as one table (Rich only), then what stopped a listing."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attncli.pipeline.read import human_bytes
from attncli.render.fit import Fitted


def models(rows: list[dict], notes: list[str], width: int = 100) -> RenderableType:
    """One line per model (`catalog.row_of`): the name --model takes, where it is from, its family, parameters
    (stored weights), quant, file size and whether attn opens it, with why not in words."""
    table = Table(
        title="Models attn can open (--model NAME)", box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left"
    )
    for name in ("name", "source", "family", "parameters", "quant", "file size", "attn", "where"):
        table.add_column(name, overflow="fold", justify="right" if name in ("parameters", "file size") else "left")
    for row in rows:
        verdict = Text("yes", style="green") if row["supported"] else Text(f"no: {row['why']}", style="yellow")
        table.add_row(
            Text(row["name"], style="bold"),
            Text(row["source"]),
            Text(row["family"] or "—"),
            Text("—" if row["parameters"] is None else f"{row['parameters']:,}"),
            Text(row["quant"] or "—"),
            Text("—" if row["bytes"] is None else human_bytes(row["bytes"])),
            verdict,
            Text(row["path"] or "—", style="dim"),
        )
    parts: list[RenderableType] = [Fitted(table) if rows else Text("No model found in any store or --path folder.")]
    parts += [Text(note, style="yellow") for note in notes]
    return Group(*parts)
