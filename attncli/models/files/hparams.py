"""Reading config.json: the one error of the models layer and the readers of its numbers.

Every family's config reader (attncli/models/network/families/) takes its hyper-parameters through these,
so a bad value is always one line naming the key.
"""

from __future__ import annotations

import math

from attncli.errors import DataError


class ModelError(DataError):
    """A model folder or a text that cannot be used (exit 1); the message is one line naming the bad value. A
    layer, head or part the model does not have is a mistake on the command line: a ConfigError (exit 2)."""


def positive_int(c: dict, key: str, default: int) -> int:
    """A positive integer from config.json, or ModelError naming the key."""
    value = c.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelError(f"config.json: {key} must be a positive integer, not {value!r}")
    return value


def fraction(c: dict, key: str, default: float) -> float:
    """A number in [0, 1) from config.json (an epsilon, a dropout), or ModelError naming the key."""
    value = c.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ModelError(f"config.json: {key} must be a number in [0, 1), not {value!r}")
    return float(value)


def positive_number(c: dict, key: str, default: float | None) -> float | None:
    """A positive number from config.json (rope_theta, a soft-cap), None if absent or null and no default."""
    value = c.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ModelError(f"config.json: {key} must be a positive number (finite), not {value!r}")
    return float(value)


def token_id(c: dict, key: str, default: int) -> int:
    """A token id (an integer ≥ 0) from config.json, such as decoder_start_token_id, or ModelError naming the key."""
    value = c.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ModelError(f"config.json: {key} must be a token id (an integer ≥ 0), not {value!r}")
    return value
