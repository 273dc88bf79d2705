"""The options of a text run, checked as `attn` checks them: one RunConfig from the keywords, the options that
belong to some variants only, and the memory guard (the options a real model has no use for: api/options.py).

The keywords are the command line's options by their long names (`--dk` is `dk=`, `--d-a` is `d_a=`), with
the same defaults; a message names the option as the command line writes it, which is also the keyword:

    >>> run_config(heads=2, mask="causal,window:1").mask
    ('causal', 'window:1')
    >>> run_config(rank=4)
    Traceback (most recent call last):
    attncli.errors.ConfigError: --rank is an option of -v linformer, not of scaled
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from attncli.api.options import DEFAULTS
from attncli.errors import ConfigError
from attncli.pipeline.budget import max_bytes_from
from attncli.pipeline.config import RunConfig
from attncli.pipeline.limits import Limits, OutputCost

HEAD_STATISTICS = OutputCost("head statistics", 6 * 8)  # about six [m, n] arrays, one head at a time (--stats)


def run_config(
    *, variants: Sequence[str] | None = None, dtype: str = "float64", weights: bool = True, **run: Any
) -> RunConfig:
    """The RunConfig of these options (`run`: api/options.py's RUN but --context, each its default unless given);
    `mask` is "causal,window:2" or a sequence of such names. --rank and --features must belong to one of the
    `variants` run (default: `variant`)."""
    unknown = sorted(k for k in run if k not in DEFAULTS or k == "context")
    if unknown:
        raise TypeError(f"run_config() got an unexpected keyword argument {unknown[0]!r}")
    o = DEFAULTS | run
    check_variant_options(list(variants or [o["variant"]]), o["rank"], o["features"])
    mask = o["mask"]
    masks = tuple(mask.split(",")) if isinstance(mask, str) else tuple(mask or ())
    return RunConfig(
        tokenizer=o["tokenizer"],
        variant=o["variant"],
        heads=o["heads"],
        dim=o["dim"],
        d_k=o["dk"],
        d_v=o["dv"],
        d_a=o["d_a"],
        mask=masks,
        positional=o["positional"],
        projection=o["projection"],
        seed=o["seed"],
        temperature=o["temperature"],
        rank=o["rank"],
        features=o["features"],
        dtype=dtype,
        weights=weights,
    )


def check_variant_options(variants: list[str], rank: int | None, features: int | None) -> None:
    """--rank and --features belong to the variants that take them: ConfigError when no chosen variant does."""
    from attncli.core.variants import VARIANTS  # late: start-up (not for import attncli or --help)

    for name, value in (("rank", rank), ("features", features)):
        takers = [v for v, spec in VARIANTS.items() if name in spec.options]
        if value is not None and not any(v in takers for v in variants):
            raise ConfigError(f"--{name} is an option of -v {', '.join(takers)}, not of {', '.join(variants)}")


def check_chat(chat: bool, system: str | None) -> None:
    """`system=` is the system message of a chat: ConfigError without `chat=True` (a system= without model= is
    api/options.py's check_model's)."""
    if system is not None and not chat:
        raise ConfigError("--system is the system message of --chat: add --chat")


def check_show(stats: bool, no_weights: bool, head: int | None, mean_heads: bool) -> None:
    """`attn show`'s options that exclude each other: ConfigError naming them."""
    if stats and no_weights:
        raise ConfigError("--stats describes the weights, and --no-weights computes none: drop one of them")
    if head is not None and mean_heads:
        raise ConfigError("--head draws one head and --mean-heads their mean: drop one of them")


def limits_of(limits: Limits | None, max_tokens: int | None, output: OutputCost | None = None) -> Limits:
    """`limits` if given (the command line's, with its hints), else `max_tokens` per text and ATTN_MAX_MEMORY
    per run, with `output` (what writing the result holds on top of the run)."""
    return limits if limits is not None else Limits(max_tokens, max_bytes_from(os.environ), output)
