"""`attn patch`: activation patching between a clean and a corrupt text."""

from __future__ import annotations

from typing import Annotated

from attncli.cli.commands.ablate import ModelRequired
from attncli.cli.model import Contrast, Corrupt, Target
from attncli.cli.options import File, Out, Text, options, row
from attncli.cli.output import emit
from attncli.cli.text import given_text, warn

What = Annotated[str, row("what")]
Noising = Annotated[bool, row("noising")]


@options(out=Out, writes=("Records",))
def patch(
    model: ModelRequired,
    corrupt: Corrupt,
    target: Target,
    out: Out,
    text: Text = None,
    file: File = None,
    contrast: Contrast = None,
    what: What = "resid",
    noising: Noising = False,
) -> None:
    """Activation patching: which layer, position or head of a clean run restores its answer in a corrupt one.

    TEXT (clean) and --corrupt run once each; then each activation of --what is put from the clean run into the
    corrupt one (denoising; --noising: the reverse) and the rest of the model rerun from that layer. Each is scored
    (m_patched − m_corrupt) / (m_clean − m_corrupt), m = logit(--target) − logit(--contrast) at the last position
    (Meng et al. 2022; Heimersheim & Nanda 2024). -f json|jsonl|csv: every cell."""
    from attncli import api  # late: start-up (not for --help)

    assert (
        corrupt is not None and target is not None
    )  # required options (no default): the command line refused their absence

    found = api.patch(
        given_text(text, file),
        corrupt=corrupt,
        model=model,
        target=target,
        contrast=contrast,
        what=what,
        noising=noising,
        precision=out.precision,
    )
    warn(found)
    emit(found.document, out)
