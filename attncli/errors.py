"""The one exception family the core raises.

Every message names the bad value, so that the CLI can print it as a single
line (`Error: ...`) and exit with `exit_code`, by one rule: 2 for anything wrong
with the command line (ConfigError), 1 for input data that cannot be used
(DataError); 130 for Ctrl-C is the CLI's own (128 + the signal).

    >>> raise DataError("empty text: nothing to tokenize")
    Traceback (most recent call last):
    ...
    attncli.errors.DataError: empty text: nothing to tokenize

`meant` finds the name a mistyped one was likely meant to be, for a message's "did you mean":

    >>> meant("casual", ["causal", "window", "topk"])
    'causal'
    >>> meant("heads", ["help", "color"]) is None
    True
"""

from collections.abc import Iterable

CLOSE = 0.75  # difflib's similarity: shwo/show 0.75, colour/color 0.91; heads/help 0.44, rollout/color 0.5


def meant(name: str, names: Iterable[str]) -> str | None:
    """The one of `names` that `name` is a likely typo of, or None."""
    import difflib  # late: start-up (difflib: only for a typo)

    found = difflib.get_close_matches(name, list(names), n=1, cutoff=CLOSE)
    return found[0] if found else None


class AttnError(Exception):
    """Base class: something the user can fix. `exit_code` is what the CLI exits with."""

    exit_code = 1


class DataError(AttnError):
    """The input data is bad: empty text, a corrupt file, a ragged matrix (exit 1)."""

    exit_code = 1


class ConfigError(AttnError):
    """Anything wrong with the command line (exit 2): an unknown or mismatched option, options that do not fit
    together (heads that do not divide the width), a layer, head or part the model does not have."""

    exit_code = 2
