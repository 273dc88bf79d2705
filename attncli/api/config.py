"""The options of a text run, checked as `attn` checks them: one RunConfig from the keywords, the options that
belong to some variants only, the options a real model (`model=`) has no use for, and the memory guard.

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

from attncli.errors import ConfigError
from attncli.pipeline.budget import max_bytes_from
from attncli.pipeline.config import RunConfig
from attncli.pipeline.limits import Limits, OutputCost

# The text-run keywords and their defaults (cli/options.py's `Run` declares the same options for the command line)
RUN_DEFAULTS: dict[str, Any] = {
    "tokenizer": "word",
    "variant": "scaled",
    "heads": 1,
    "dim": 16,
    "dk": None,
    "dv": None,
    "d_a": None,
    "mask": None,
    "positional": "none",
    "projection": "random",
    "seed": 0,
    "temperature": 1.0,
    "rank": None,
    "features": None,
}
MODEL_CLASH = RUN_DEFAULTS | {"dtype": "float64", "no_weights": False}  # and the run's precision, which a model keeps
HEAD_STATISTICS = OutputCost("head statistics", 6 * 8)  # about six [m, n] arrays, one head at a time (--stats)


def run_config(
    *,
    tokenizer: str = "word",
    variant: str = "scaled",
    heads: int = 1,
    dim: int = 16,
    dk: int | None = None,
    dv: int | None = None,
    d_a: int | None = None,
    mask: str | Sequence[str] | None = None,
    positional: str = "none",
    projection: str = "random",
    seed: int = 0,
    temperature: float = 1.0,
    rank: int | None = None,
    features: int | None = None,
    variants: Sequence[str] | None = None,
    dtype: str = "float64",
    weights: bool = True,
) -> RunConfig:
    """The RunConfig of these options; `mask` is "causal,window:2" or a sequence of such names. --rank and
    --features must belong to one of the `variants` run (default: `variant`)."""
    check_variant_options(list(variants or [variant]), rank, features)
    masks = tuple(mask.split(",")) if isinstance(mask, str) else tuple(mask or ())
    return RunConfig(
        tokenizer=tokenizer,
        variant=variant,
        heads=heads,
        dim=dim,
        d_k=dk,
        d_v=dv,
        d_a=d_a,
        mask=masks,
        positional=positional,
        projection=projection,
        seed=seed,
        temperature=temperature,
        rank=rank,
        features=features,
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


def check_model_options(model: object, run: dict[str, Any], **model_only: Any) -> None:
    """With `model`, no text-run option away from its default (a real model's tokenizer, widths and weights
    are its own; the default variant, scaled dot product, is what the models do); without it, none of the
    `model_only` options (layer, rollout, part) given. ConfigError naming them.

    >>> check_model_options(None, {"heads": 2}, layer=3)
    Traceback (most recent call last):
    attncli.errors.ConfigError: layer= needs model=
    """
    if model is None:
        lonely = [name for name, value in model_only.items() if value not in (None, False)]
        if lonely:
            raise ConfigError(f"{'= and '.join(lonely)}= {'needs' if len(lonely) == 1 else 'need'} model=")
        return
    clash = [name for name, value in run.items() if value != MODEL_CLASH[name]]
    if clash:
        raise ConfigError(f"model= uses the model's own tokenizer, embeddings and weights: drop {'=, '.join(clash)}=")


def check_chat(chat: bool, system: str | None) -> None:
    """`system=` is the system message of a chat: ConfigError without `chat=True` (a model= without chat= is
    check_model_options')."""
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
