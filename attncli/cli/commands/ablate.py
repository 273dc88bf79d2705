"""`attn ablate`: switch a decoder's heads off one at a time and see its next token's logit move."""

from __future__ import annotations

from typing import Annotated

from attncli.cli.model import Chat, Contrast, Mode, RankBy, System, Target, model_value
from attncli.cli.options import File, Out, Text, options, row
from attncli.cli.output import emit
from attncli.cli.text import given_text, warn
from attncli.errors import ConfigError

ModelRequired = Annotated[str, row("decoder_model", callback=model_value)]
HeadList = Annotated[str | None, row("ablate_heads")]


def parse_heads(given: str) -> list[tuple[int, int]]:
    """--heads "0.3,5.1" -> [(0, 3), (5, 1)], or ConfigError naming the part that is not LAYER.HEAD.

    >>> parse_heads("0.3, 5.1")
    [(0, 3), (5, 1)]
    """
    out = []
    for part in given.split(","):
        layer, dot, head = part.strip().partition(".")
        try:
            out.append((int(layer), int(head)))
        except ValueError:
            raise ConfigError(f"--heads {part.strip()!r} is not LAYER.HEAD (such as 0.3)") from None
        if not dot:
            raise ConfigError(f"--heads {part.strip()!r} is not LAYER.HEAD (such as 0.3)")
    return out


@options(out=Out, writes=("Records",))
def ablate(
    model: ModelRequired,
    out: Out,
    text: Text = None,
    file: File = None,
    heads: HeadList = None,
    target: Target = None,
    mode: Mode = "zero",
    contrast: Contrast = None,
    rank_by: RankBy = None,
    chat: Chat = False,
    system: System = None,
) -> None:
    """Switch a decoder's heads off one at a time: how each moves the logit of the next token.

    Each head's slice of its output projection's input is set to zero (or its mean over the text), the rest of
    the model runs, and the change in the logit and log-probability of the model's own next token after the last
    position (or --target) is reported, the heads ranked by |Δ log-probability| (--rank-by; with --contrast the
    logit difference target − contrast). -f json|jsonl|csv: every head."""
    from attncli import api  # late: start-up (not for --help)

    chosen = None if heads is None else parse_heads(heads)
    found = api.ablate(
        given_text(text, file),
        model=model,
        heads=chosen,
        target=target,
        mode=mode,
        contrast=contrast,
        rank_by=rank_by,
        chat=chat,
        system=system,
        precision=out.precision,
    )
    warn(found)
    emit(found.document, out)
