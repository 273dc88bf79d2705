"""Where text comes from: an argument, stdin (`-`) or a file; decoded strictly as UTF-8.

    >>> decode(b"caf\\xc3\\xa9", "stdin")
    'café'
    >>> decode(b"ab\\xff", "stdin")
    Traceback (most recent call last):
    ...
    attncli.errors.DataError: stdin is not valid UTF-8: byte 0xff at offset 2
"""

from __future__ import annotations

import io
import os
import sys
from typing import BinaryIO, Iterator

from attncli.errors import ConfigError, DataError


def decode(data: bytes, source: str) -> str:
    """Strict UTF-8, with the offset of the first bad byte in the message."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{source} is not valid UTF-8: byte 0x{data[e.start]:02x} at offset {e.start}") from None


def open_file(path: str) -> BinaryIO:
    if not os.path.exists(path):
        raise DataError(f"no such file: {path}")
    if os.path.isdir(path):
        raise DataError(f"{path} is a directory, expected a text file")
    try:
        return open(path, "rb")
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None


def read_file(path: str) -> str:
    with open_file(path) as f:
        try:
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


def open_lines(text: str | None, file: str | None) -> tuple[BinaryIO, str]:
    """The byte stream that `--lines` reads, and its name for messages: stdin for `-`, the file, or TEXT itself."""
    if text is not None and file is not None:
        raise ConfigError("give either TEXT or --file, not both")
    if file is not None:
        return open_file(file), file
    if text is None:
        raise ConfigError("no text: give TEXT, - to read stdin, or --file PATH")
    if text == "-":
        return sys.stdin.buffer, "stdin"
    try:
        return io.BytesIO(text.encode("utf-8")), "TEXT"
    except UnicodeEncodeError as e:
        raise DataError(f"TEXT is not valid UTF-8 at character {e.start}") from None


def iter_lines(stream: BinaryIO, name: str) -> Iterator[tuple[int, str]]:
    r"""`(line number from 1, text)` for each line, read lazily; the newline (\n or \r\n) is dropped.

    Lines are split on \n only, so the numbers agree with `wc -l`, `sed -n 3p` and editors:

    >>> list(iter_lines(io.BytesIO(b"a b\r\n\nc\x0cd"), "stdin"))
    [(1, 'a b'), (2, ''), (3, 'c\x0cd')]
    """
    for number, raw in enumerate(stream, 1):
        raw = raw[:-1] if raw.endswith(b"\n") else raw
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        yield number, decode(raw, f"{name} line {number}")
