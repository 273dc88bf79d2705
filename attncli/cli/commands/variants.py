"""`attn variants`: the attention variants the registry holds, one row each."""

from __future__ import annotations

from attncli.cli.options import Out, options
from attncli.cli.output import emit


@options(out=Out, skip=("precision",), writes=("Records",))
def variants(out: Out) -> None:
    """List the attention variants: formula, parameters and their shapes, paper, notes."""
    from attncli import api

    emit(api.variants().document, out)
