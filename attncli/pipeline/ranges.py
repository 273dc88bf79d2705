"""The range of every option that has one, written once, and the one check of it with its one message.

Plain data (no NumPy): the pipeline checks a RunConfig's values against it whoever built the config, io checks
--precision and --width, the models --generate's seed, top-k and length, the command line --workers, and the
API's option table (api/options.py) reads each row's range here. A key is the option's row name in that table;
`flag` is how a message names it where the row's name is not its flag (sampling's --top-k).

    >>> check_range("heads", 2); check_range("d_a", None)
    >>> check_range("d_a", 0)
    Traceback (most recent call last):
    attncli.errors.ConfigError: --d-a must be between 1 and 4096, got 0
    >>> check_range("width", 10)
    Traceback (most recent call last):
    attncli.errors.ConfigError: --width must be between 20 and 10000 columns, got 10
"""

from __future__ import annotations

from dataclasses import dataclass

from attncli.errors import ConfigError

MAX_OPTION = 65536  # --rank, --features
MAX_DIM = 4096
MAX_HEADS = 256
MAX_SEED = 2**63 - 1  # NumPy takes any size, but a seed should survive JSON and every other tool as an int64
MIN_WIDTH, MAX_WIDTH = 20, 10_000  # --width (and COLUMNS); every table fits from 40 columns up


@dataclass(frozen=True)
class Range:
    """From `least` to `most` (None: no upper bound), both included; `unit` follows the bound in the message,
    `top` is how the message writes `most` (2**63 - 1), `flag` the option's flag when it is not its name's."""

    least: int
    most: int | None = None
    unit: str = ""
    top: str | None = None
    flag: str | None = None

    def said(self) -> str:
        """The range as a message says it: `between 1 and 4096`, `at least 1`."""
        if self.most is None:
            return f"at least {self.least}"
        return f"between {self.least} and {self.top or self.most}{self.unit}"


RANGES: dict[str, Range] = {  # an option -> its range, one for every command and API function that takes it
    "dim": Range(1, MAX_DIM),
    "heads": Range(1, MAX_HEADS),
    "dk": Range(1, MAX_DIM),
    "dv": Range(1, MAX_DIM),
    "d_a": Range(1, MAX_DIM),
    "seed": Range(0, MAX_SEED, top="2**63 - 1"),  # a text run's, attn compute's and --generate's sampling's
    "rank": Range(1, MAX_OPTION),
    "features": Range(1, MAX_OPTION),
    "precision": Range(0, 17),
    "width": Range(MIN_WIDTH, MAX_WIDTH, " columns"),
    "workers": Range(1, 64),
    "top_k": Range(1, 100),  # attn lens's
    "sample_top_k": Range(1, flag="--top-k"),  # --generate's sampling's
    "generate": Range(1),
    "max_tokens": Range(1),
    "max_lines": Range(1),
}


def check_range(name: str, value: int | None) -> None:
    """ConfigError when `value` of the option `name` (a key of RANGES) is outside its range; None is not given."""
    bound = RANGES[name]
    if value is None or (bound.least <= value and (bound.most is None or value <= bound.most)):
        return
    raise ConfigError(f"{bound.flag or '--' + name.replace('_', '-')} must be {bound.said()}, got {value}")
