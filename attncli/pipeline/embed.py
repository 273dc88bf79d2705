"""Tokens -> vectors: a deterministic embedding per token string, plus positions.

The same token string gets the same vector in every process and under every
tokenizer: its vector is drawn from a generator seeded by a BLAKE2b hash of
(seed, string), never Python's salted `hash`:

    >>> a = embed(["time", "flies", "time"], d_model=4, seed=0)
    >>> a.shape, bool((a[0] == a[2]).all())
    ((3, 4), True)

`POSITIONAL` is the registry of positional encodings (`--positional`).
"""

# NumPy loads on first use: the CLI offers POSITIONAL's names as choices, and `attn --help` starts without it.

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def token_seed(token: str, seed: int) -> int:
    """A stable 64-bit integer for (seed, token)."""
    digest = hashlib.blake2b(f"{seed}\x00{token}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


@functools.lru_cache(maxsize=2048)  # `attn show --lines` meets the same words again and again: at most 64 MiB
def token_vector(token: str, d_model: int, seed: int) -> np.ndarray:  # -> [d_model], read-only
    """The standard-normal vector of one string, from its own hash-seeded generator (made once, then shared)."""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    x = np.random.default_rng(token_seed(token, seed)).standard_normal(d_model)
    x.flags.writeable = False
    return x


def embed(strings: Sequence[str], d_model: int, seed: int) -> np.ndarray:  # n strings -> [n, d_model]
    """Each distinct string gets a standard-normal vector from its own hash-seeded generator."""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    x = np.empty((len(strings), d_model))
    for i, s in enumerate(strings):
        x[i] = token_vector(s, d_model, seed)
    return x


def no_positions(n: int, d_model: int) -> np.ndarray:  # -> [n, d_model]
    """No positional information: attention is then blind to token order."""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    return np.zeros((n, d_model))


def sinusoidal(n: int, d_model: int) -> np.ndarray:  # -> [n, d_model]
    """Vaswani et al. 2017: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)).

    >>> sinusoidal(2, 4).round(4).tolist()
    [[0.0, 1.0, 0.0, 1.0], [0.8415, 0.5403, 0.01, 1.0]]
    """
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    pos = np.arange(n)[:, None]  # [n, 1]
    two_i = np.arange(0, d_model, 2)  # [ceil(d/2)]
    angle = pos / np.power(10000.0, two_i / d_model)  # [n, ceil(d/2)]
    pe = np.zeros((n, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe


@dataclass(frozen=True)
class Positional:
    """A positional encoding of the registry: its name, its formula, and `encode(n, d_model)`."""

    name: str
    formula: str
    encode: Callable[[int, int], np.ndarray]  # (n, d_model) -> [n, d_model]


POSITIONAL: dict[str, Positional] = {
    "none": Positional("none", "X = E (order-blind)", no_positions),
    "sinusoidal": Positional(
        "sinusoidal", "X = E + PE, PE[p,2i] = sin(p/10000^(2i/d)), PE[p,2i+1] = cos(...)", sinusoidal
    ),
}
