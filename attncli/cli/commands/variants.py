"""`attn variants`: the attention variants the registry holds, one row each."""

from __future__ import annotations

from dataclasses import replace

from attncli.cli.options import Out, RecordFormat, options
from attncli.cli.output import emit


@options(out=Out, skip=("fmt", "precision"))
def variants(out: Out, fmt: RecordFormat = None) -> None:
    """List the attention variants: formula, parameters and their shapes, paper, notes."""
    from attncli.core.variants import VARIANTS  # late: start-up (not for --help)
    from attncli.io import documents

    def table(digits, width):  # Rich loads when the table is drawn, not for -f json or csv
        from attncli.render.variants import variants as variants_table  # late: start-up (Rich: not for -f json)

        return variants_table(rows, width)

    rows = [v.record() for v in VARIANTS.values()]
    doc = documents.Records("attn variants", table, doc={"schema": "attncli.variants/1", "rows": rows})
    emit(doc, replace(out, fmt=fmt))
