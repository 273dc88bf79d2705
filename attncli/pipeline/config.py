"""One frozen `RunConfig` says how a text run goes: tokenizer, variant, widths, masks, seed.

>>> RunConfig(heads=2).resolve().d_k
8
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from attncli.core.masks import parse_masks
from attncli.core.variants import VARIANTS, get_variant, option_values
from attncli.errors import ConfigError
from attncli.pipeline.embed import POSITIONAL
from attncli.pipeline.ranges import check_range

PROJECTIONS = ("random", "identity")
DTYPES = ("float64", "float32")


@dataclass(frozen=True)
class RunConfig:
    """Every choice of a run. `d_k`/`d_v` None means dim // heads (filled in by `resolve`)."""

    tokenizer: str = "word"
    variant: str = "scaled"
    heads: int = 1
    dim: int = 16
    d_k: int | None = None
    d_v: int | None = None
    d_a: int | None = None  # hidden width of the additive variant (None: d_k)
    mask: tuple[str, ...] = ()
    positional: str = "none"
    projection: str = "random"
    seed: int = 0
    temperature: float = 1.0
    dtype: str = "float64"  # float32: Q, K, V, scores, weights and outputs in float32 (attncli.core.efficient)
    weights: bool = True  # False (--no-weights): the outputs only, never an n x n matrix (attncli.core.efficient)
    rank: int | None = None  # linformer's R (None: its default; resolve fills it in, and drops it for others)
    features: int | None = None  # performer's F (likewise)

    def resolve(self) -> RunConfig:
        """Check every value and fill in d_k, d_v, d_a; raises ConfigError naming the bad one."""
        get_variant(self.variant)
        if self.positional not in POSITIONAL:
            raise ConfigError(f"unknown positional encoding {self.positional!r}: choose {', '.join(POSITIONAL)}")
        if self.projection not in PROJECTIONS:
            raise ConfigError(f"unknown projection {self.projection!r}: choose {', '.join(PROJECTIONS)}")
        check_ranges(dim=self.dim, heads=self.heads, dk=self.d_k, dv=self.d_v, d_a=self.d_a, seed=self.seed)
        check_temperature(self.temperature)
        if self.projection == "identity" and (self.d_k is not None or self.d_v is not None):
            raise ConfigError("--projection identity uses Q = K = V = X: drop --dk/--dv")
        if (self.d_k is None or self.d_v is None) and self.dim % self.heads:
            raise ConfigError(
                f"--dim {self.dim} is not divisible by --heads {self.heads}: "
                f"choose a multiple of {self.heads}, or give --dk and --dv"
            )
        masks = tuple(str(m) for m in parse_masks(",".join(self.mask)))
        d_k = self.d_k or self.dim // self.heads
        options = check_options(
            self.variant,
            self.dtype,
            self.weights,
            masks,
            self.temperature,
            {"rank": self.rank, "features": self.features},
        )
        return replace(
            self,
            mask=masks,
            d_k=d_k,
            d_v=self.d_v or self.dim // self.heads,
            d_a=self.d_a or d_k,
            rank=options.get("rank"),
            features=options.get("features"),
        )


def check_ranges(**values: int | None) -> None:
    """ConfigError naming the first option (given by its keyword) outside its range (pipeline/ranges.py's
    RANGES); None is not given.

    >>> check_ranges(heads=2, d_a=None, seed=7)
    >>> check_ranges(d_a=0)
    Traceback (most recent call last):
    attncli.errors.ConfigError: --d-a must be between 1 and 4096, got 0
    """
    for name, value in values.items():
        check_range(name, value)


def check_temperature(temperature: float) -> None:
    """ConfigError unless the softmax temperature is a positive finite number."""
    if not (math.isfinite(temperature) and temperature > 0):
        raise ConfigError(f"--temperature must be a positive finite number, got {temperature}")


def check_options(variant: str, dtype: str, weights: bool, masks, temperature: float, options: dict) -> dict:
    """--dtype, --no-weights, --rank and --features: ConfigError if they do not fit; the variant's options filled in."""
    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r}: choose {', '.join(DTYPES)}")
    check_ranges(**options)
    if not weights:
        get_variant(variant).check_outputs_only(masks, temperature)
    return option_values(VARIANTS[variant], options)
