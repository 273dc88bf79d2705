"""The one exception family the core raises.

Every message names the bad value, so that the CLI can print it as a single
line (`Error: ...`) and exit with `exit_code`:

    >>> raise DataError("empty text: nothing to tokenize")
    Traceback (most recent call last):
    ...
    attncli.errors.DataError: empty text: nothing to tokenize
"""


class AttnError(Exception):
    """Base class: something the user can fix. `exit_code` is what the CLI exits with."""

    exit_code = 1


class DataError(AttnError):
    """The input data is bad: empty text, a corrupt file, a ragged matrix (exit 1)."""

    exit_code = 1


class ConfigError(AttnError):
    """The options do not fit together: heads that do not divide the width, an unknown name (exit 2)."""

    exit_code = 2
