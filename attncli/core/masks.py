"""The masks: one registry entry per kind, which `parse_masks` and `apply_masks` loop over.

A mask marks cells that a query may not attend to (True = masked). Most act on positions only
(query i, key j); top-k acts on the scores, after the others.
"""

# NumPy loads on first use: the CLI parses --mask (and attn --help lists the masks) without it.

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attncli.errors import ConfigError, meant


def causal_mask(m: int, n: int, arg=None):  # -> [m, n] bool, True = masked
    """Query i may not see key j > i."""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    return np.arange(n)[None, :] > np.arange(m)[:, None]


def window_mask(m: int, n: int, arg: int):  # -> [m, n] bool
    """Query i sees only keys with |i - j| <= W."""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    return np.abs(np.arange(n)[None, :] - np.arange(m)[:, None]) > arg


def topk_mask(scores, masked, arg: int):  # [h, m, n], [h, m, n] -> [h, m, n] bool
    """Keep the K largest scores of each row among the unmasked; ties go to the lower key index."""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    s = np.where(masked, -np.inf, scores)
    order = np.argsort(-s, axis=-1, kind="stable")  # stable: equal scores keep key order
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(s.shape[-1]), s.shape), axis=-1)
    return masked | (ranks >= arg)


@dataclass(frozen=True)
class MaskKind:
    """One kind of mask. `cells(m, n, arg) -> [m, n]` for a positional mask; with `on_scores`,
    `cells(scores, masked, arg) -> masked`, applied after every positional one."""

    name: str
    help: str
    cells: Callable
    arg_name: str = ""  # "W", "K": the argument it needs (empty: none)
    min_arg: int = 0
    on_scores: bool = False

    @property
    def needs_arg(self) -> bool:
        return bool(self.arg_name)


MASKS: dict[str, MaskKind] = {
    kind.name: kind
    for kind in [
        MaskKind("causal", "query i sees keys j <= i", causal_mask),
        MaskKind("window", "window:W — query i sees keys with |i - j| <= W", window_mask, "W"),
        MaskKind(
            "topk", "topk:K — each row keeps its K largest scores (ties: lower key index)", topk_mask, "K", 1, True
        ),
    ]
}

MAX_MASK_ARG = 10**9  # a window or a K at least as long as the text already masks nothing


@dataclass(frozen=True)
class Mask:
    """A parsed mask: `causal`, `window:W` or `topk:K`. `arg` is W or K."""

    name: str
    arg: int | None = None

    def __str__(self) -> str:
        return self.name if self.arg is None else f"{self.name}:{self.arg}"

    @property
    def kind(self) -> MaskKind:
        return MASKS[self.name]


def parse_masks(spec: str | None) -> tuple[Mask, ...]:
    """'causal,window:2' -> (Mask('causal'), Mask('window', 2)); '' or 'none' -> ().

    W and K are whole numbers in ASCII digits (not '²' or '٣', which str.isdigit accepts), W >= 0,
    1 <= K, both at most MAX_MASK_ARG.
    """
    if not spec or spec.strip() in ("", "none"):
        return ()
    out = []
    for part in spec.split(","):
        name, _, arg = part.strip().partition(":")
        if name not in MASKS:
            close = meant(name.strip(), MASKS)
            hint = f"did you mean {close}{':' * MASKS[close].needs_arg}{MASKS[close].arg_name}? " if close else ""
            raise ConfigError(f"unknown mask {part.strip()!r}: {hint}choose causal, window:W or topk:K")
        kind = MASKS[name]
        if kind.needs_arg:
            digits = arg.strip()
            if not (digits.isascii() and digits.isdigit()):
                raise ConfigError(f"mask {part.strip()!r} needs a whole number, e.g. {name}:2")
            if len(digits.lstrip("0")) > len(str(MAX_MASK_ARG)) or int(digits) > MAX_MASK_ARG:
                raise ConfigError(
                    f"mask {part.strip()[:40]!r}: {kind.arg_name} must be at most "
                    f"{MAX_MASK_ARG:,} (one as long as the text already masks nothing)"
                )
            value = int(digits)
            if value < kind.min_arg:
                raise ConfigError(f"mask {part.strip()!r}: {kind.arg_name} must be at least {kind.min_arg}")
            out.append(Mask(name, value))
        elif arg:
            raise ConfigError(f"mask {name!r} takes no argument, got {part.strip()!r}")
        else:
            out.append(Mask(name))
    return tuple(out)


def apply_masks(scores, masks: tuple[Mask, ...]):  # [h, m, n] -> [h, m, n] bool or None
    """The boolean matrix of masked cells (True = masked), or None when no mask is on."""
    if not masks:
        return None
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    h, m, n = scores.shape
    masked = np.zeros((h, m, n), dtype=bool)
    for mask in masks:
        if not mask.kind.on_scores:
            masked |= mask.kind.cells(m, n, mask.arg)
    for mask in masks:
        if mask.kind.on_scores:
            masked = mask.kind.cells(scores, masked, mask.arg)
    return masked


def acts_on_scores(masks) -> bool:
    """Whether any of `masks` (Mask or 'topk:3' strings) needs the scores, not only the positions."""
    return any(MASKS[str(m).partition(":")[0]].on_scores for m in masks)
