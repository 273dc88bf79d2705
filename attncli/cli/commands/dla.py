"""`attn dla`: direct logit attribution of a decoder's next-token logit."""

from __future__ import annotations

from attncli.cli.commands.ablate import ModelRequired
from attncli.cli.model import Contrast, Target
from attncli.cli.options import File, Out, Text, options
from attncli.cli.output import emit
from attncli.cli.text import given_text, warn


@options(out=Out, writes=("Records",))
def dla(
    model: ModelRequired,
    target: Target,
    out: Out,
    text: Text = None,
    file: File = None,
    contrast: Contrast = None,
) -> None:
    """Direct logit attribution: each head's and MLP's share of a decoder's next-token logit, summing to it.

    The last position's final stream is the embeddings plus each head's, each attention bias's and each MLP's
    output; through the final norm with its scale frozen from the full run, then the unembedding, each part's share
    of m = logit(--target) − logit(--contrast) adds up to m exactly (Elhage et al. 2021). -f json|jsonl|csv: every
    part."""
    from attncli import api  # late: start-up (not for --help)

    assert target is not None  # required options (no default): the command line refused their absence

    found = api.dla(given_text(text, file), model=model, target=target, contrast=contrast, precision=out.precision)
    warn(found)
    emit(found.document, out)
