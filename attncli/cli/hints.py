"""What to suggest when a run is refused for its size: the CLI's own words (commands, options, formats).

`attncli.pipeline.limits` estimates bytes and cells and refuses what does not fit; `limits_for` gives
it these suggestions for one command, and what the command's output adds to the run.
"""

from __future__ import annotations

import os
from functools import partial

from attncli.core.variants import VARIANTS
from attncli.pipeline.limits import Estimate, Limits, OutputCost, max_bytes_from

JSON_LISTS = "JSON of the largest array"
HEAD_STATISTICS = "head statistics"

# What each rendering holds on top of the run: the head statistics of a table (about six [m, n] arrays
# for one head at a time), a steps table's temporaries, and `attn steps -f json`'s Python lists and
# string (~160 bytes for each number of the largest array).
OUTPUTS = {
    "none": None,
    "table": OutputCost(HEAD_STATISTICS, 6 * 8),
    "steps-table": OutputCost("table temporaries", 4 * 8),
    "steps-json": OutputCost(JSON_LISTS, 160, of_largest=True),
}


def limits_for(max_tokens: int | None, command: str, render: str = "none") -> Limits:
    """--max-tokens and ATTN_MAX_MEMORY for `command` ("show", "show --lines", "steps", "compare", "compute",
    "tokens"), whose result is rendered to `render` (one of OUTPUTS)."""
    return Limits(max_tokens, max_bytes_from(os.environ), OUTPUTS[render], partial(hints, command))


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
        if hidden in estimate.parts and heavy & {hidden, JSON_LISTS}:
            out.append(f"a smaller --d-a (steps keeps {variant.name}'s [h, m, n, d_a] term)")
    if JSON_LISTS in heavy:
        out.append("-f npz (written array by array, without JSON's Python lists)")
    if HEAD_STATISTICS in heavy and command == "show":
        out.append("no --stats")
    if heavy & {"W_Q, W_K, W_V, W_O", "variant parameters"}:
        out.append("a smaller --dim, --dk or --dv")
    if command in ("show", "show --lines", "compute") and "attention" in heavy:
        if "outputs-only" in fits:
            out.append("--no-weights (the outputs only, in blocks: never an n × n matrix)")
        if "float32" in fits:
            out.append("--dtype float32 (half the bytes)")
    return out
