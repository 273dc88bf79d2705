"""A standard stream attn was started without (`attn ... >&-`, `<&-`): using it is one line, not an internal error.

Python sets `sys.stdout` (or `sys.stdin`) to None when its file descriptor was closed at start-up; then the first
`sys.stdout.buffer` is an AttributeError. `stand_in()` puts a `Closed` there instead: it is not a terminal, has
nothing to flush, and reading or writing it is a DataError saying what was closed.

    >>> Closed("stdin", "<&-").isatty()
    False
    >>> Closed("stdin", "<&-").buffer
    Traceback (most recent call last):
    attncli.errors.DataError: cannot read stdin: it is closed (attn was started with <&-)
"""

from __future__ import annotations

import errno
import sys
import typing

from attncli.errors import DataError


class Closed:
    """The stand-in for a closed standard stream `name` (see the module docstring)."""

    def __init__(self, name: str, how: str):
        self.name, self.how = name, how

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        return None

    def fileno(self) -> int:
        raise OSError(errno.EBADF, f"{self.name} is closed")

    def _refused(self) -> DataError:
        verb = "read" if self.name == "stdin" else "write the output to"
        hint = "" if self.name == "stdin" else "; -o FILE writes a file"
        return DataError(f"cannot {verb} {self.name}: it is closed (attn was started with {self.how}){hint}")

    @property
    def buffer(self):
        raise self._refused()

    def read(self, *args):
        raise self._refused()

    def write(self, text: str) -> int:
        raise self._refused()


def stand_in() -> None:
    """A `Closed` for sys.stdin and sys.stdout where Python found their descriptors closed (None)."""
    if sys.stdin is None:
        sys.stdin = typing.cast(typing.TextIO, Closed("stdin", "<&-"))
    if sys.stdout is None:
        sys.stdout = typing.cast(typing.TextIO, Closed("stdout", ">&-"))
