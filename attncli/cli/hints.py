"""What to suggest when a run is refused for its size: the CLI's own words (commands, options, formats).

`attncli.pipeline.limits` estimates bytes and cells and refuses what does not fit; `limits_for` gives
it these suggestions for one command, and what the command's output adds to the run.
"""

from __future__ import annotations

import os
from functools import partial

from attncli.api.config import HEAD_STATISTICS
from attncli.core.variants import VARIANTS
from attncli.io.formats import JSON_LISTS
from attncli.pipeline.limits import (
    ATTENTION,
    PROJECTIONS,
    VARIANT_PARAMETERS,
    Estimate,
    Limits,
    OutputCost,
    max_bytes_from,
)


def limits_for(max_tokens: int | None, command: str, output: OutputCost | None = None) -> Limits:
    """--max-tokens and ATTN_MAX_MEMORY for `command` ("show", "show --lines", "steps", "compare", "compute",
    "tokens"), whose output holds `output` on top of the run (a format's or the head statistics')."""
    return Limits(max_tokens, max_bytes_from(os.environ), output, partial(hints, command))


def hints(command: str, config, estimate: Estimate | None, fits: dict[str, int]) -> list[str]:
    """What would make a run smaller, in the order worth trying; the formats only when the rendering
    is a large part of `estimate`; --no-weights and --dtype float32 where they fit (`fits`)."""
    out = []
    if command == "show":
        out.append("a shorter text, or --lines to run each line of it on its own")
    elif command in ("compare", "steps", "show --lines"):
        out.append("a shorter text" + (" (line)" if command == "show --lines" else ""))
    if command == "compare" or (config is not None and config.tokenizer == "char"):
        out.append("the word or bpe tokenizer (fewer tokens)")
    if config is not None and config.heads > 1:
        out.append("fewer --heads")
    if estimate is None:
        return out
    heavy = {k for k, v in estimate.parts.items() if v >= estimate.total / 4}
    variant = VARIANTS[config.variant] if config is not None else None
    if variant is not None and variant.hidden:
        hidden = f"{variant.name}'s {variant.hidden}"  # the part run_bytes names it by
        if hidden in estimate.parts and heavy & {hidden, JSON_LISTS.label}:
            out.append(f"a smaller --d-a (steps keeps {variant.name}'s [h, m, n, d_a] term)")
    if JSON_LISTS.label in heavy:
        out.append("-f npz (written array by array, without JSON's Python lists)")
    if HEAD_STATISTICS.label in heavy and command == "show":
        out.append("no --stats")
    if heavy & {PROJECTIONS, VARIANT_PARAMETERS}:
        out.append("a smaller --dim, --dk or --dv")
    if command in ("show", "show --lines", "compute") and ATTENTION in heavy:
        if "outputs-only" in fits:
            out.append("--no-weights (the outputs only, in blocks: never an n × n matrix)")
        if "float32" in fits:
            out.append("--dtype float32 (half the bytes)")
    return out
