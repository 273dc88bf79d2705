"""Where text comes from: an argument, stdin (`-`) or a file; decoded strictly as UTF-8.

    >>> decode(b"caf\\xc3\\xa9", "stdin")
    'café'
    >>> decode(b"ab\\xff", "stdin")
    Traceback (most recent call last):
    ...
    attncli.errors.DataError: stdin is not valid UTF-8: byte 0xff at offset 2
"""

from __future__ import annotations

import os
import sys

from attncli.errors import ConfigError, DataError


def decode(data: bytes, source: str) -> str:
    """Strict UTF-8, with the offset of the first bad byte in the message."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{source} is not valid UTF-8: byte 0x{data[e.start]:02x} at offset {e.start}") from None


def read_file(path: str) -> str:
    if not os.path.exists(path):
        raise DataError(f"no such file: {path}")
    if os.path.isdir(path):
        raise DataError(f"{path} is a directory, expected a text file")
    try:
        with open(path, "rb") as f:
            return decode(f.read(), path)
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None


def read_text(text: str | None, file: str | None) -> str:
    """TEXT as given, `-` for stdin, or the contents of --file (exactly one of them)."""
    if text is not None and file is not None:
        raise ConfigError("give either TEXT or --file, not both")
    if file is not None:
        return read_file(file)
    if text is None:
        raise ConfigError("no text: give TEXT, - to read stdin, or --file PATH")
    if text == "-":
        return decode(sys.stdin.buffer.read(), "stdin")
    try:  # argv undecodable bytes arrive as lone surrogates
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise DataError(f"TEXT is not valid UTF-8 at character {e.start}") from None
    return text
