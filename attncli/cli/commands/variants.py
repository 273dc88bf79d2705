"""`attn variants`: the attention variants the registry holds, one row each."""

from __future__ import annotations

from dataclasses import replace

from attncli.cli.options import Out, RecordFormat, options
from attncli.cli.output import emit


@options(out=Out, skip=("fmt", "precision"))
def variants(out: Out, fmt: RecordFormat = None) -> None:
    """List the attention variants: formula, parameters and their shapes, paper, notes."""
    from attncli import api

    emit(api.variants().document, replace(out, fmt=fmt))
