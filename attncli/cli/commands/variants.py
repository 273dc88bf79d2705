"""`attn variants`: the attention variants the registry holds, one row each."""

from __future__ import annotations

from dataclasses import replace

from attncli.cli.options import Out, RecordFormat, options
from attncli.cli.output import emit


@options(out=Out, skip=("fmt", "precision"))
def variants(out: Out, fmt: RecordFormat = None) -> None:
    """List the attention variants: formula, parameters and their shapes, paper, notes."""
    from attncli.core.variants import VARIANTS
    from attncli.io import documents
    from attncli.render.variants import variants as variants_table

    rows = [v.record() for v in VARIANTS.values()]
    table = documents.Records(
        "attn variants",
        lambda digits, width: variants_table(rows, width),
        doc={"schema": "attncli.variants/1", "rows": rows},
    )
    emit(table, replace(out, fmt=fmt))
