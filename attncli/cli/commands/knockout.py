"""`attn knockout`: block attention edges in windows of layers and see the prediction move."""

from __future__ import annotations

from typing import Annotated

from attncli.cli.commands.ablate import ModelRequired
from attncli.cli.model import Span
from attncli.cli.options import File, Out, Text, options, row
from attncli.cli.output import emit
from attncli.cli.text import given_text

To = Annotated[int | None, row("to")]
Window = Annotated[int | None, row("window")]


@options(out=Out, writes=("Records",))
def knockout(
    model: ModelRequired,
    span: Span,
    out: Out,
    text: Text = None,
    file: File = None,
    to: To = None,
    window: Window = None,
) -> None:
    """Attention knockout: block the edges from a position to a span, a window of layers at a time.

    The scores from the query at --to to the keys of --from are set to −∞ in every window of --window consecutive
    layers, and the relative change of the probability of the model's own top next token is reported per window
    (Geva et al. 2023): where it drops, information flows from the span to the position. -f json|jsonl|csv."""
    from attncli import api  # late: start-up (not for --help)

    assert span is not None  # required options (no default): the command line refused their absence

    found = api.knockout(given_text(text, file), model=model, span=span, to=to, window=window, precision=out.precision)
    emit(found.document, out)
