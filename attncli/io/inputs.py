"""Where text comes from: an argument, stdin (`-`) or a file, decoded by `attncli.pipeline.read`.

One text is read whole, so at most MAX_INPUT_BYTES of it; `--lines` streams (each line at most
that long).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

from attncli.errors import ConfigError, DataError
from attncli.pipeline.read import MAX_INPUT_BYTES, Warn, decode, human_bytes, read_bounded


def decode_arg(text: str, source: str, errors: str = "strict", warn: Warn | None = None) -> str:
    """An argument (TEXT, --context): undecodable argv bytes arrive as lone surrogates; find their byte offset."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")  # the bytes the shell gave
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")  # a surrogate that came from no byte (only in-process)
    return decode(raw, source, errors, warn)


def open_file(path: str) -> BinaryIO:
    if not os.path.exists(path):
        raise DataError(f"no such file: {path}")
    if os.path.isdir(path):
        raise DataError(f"{path} is a directory, expected a text file")
    try:
        return open(path, "rb")
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None


def read_file(path: str, errors: str = "strict", warn: Warn | None = None) -> str:
    with open_file(path) as f:
        try:
            return decode(read_bounded(f, path), path, errors, warn)
        except OSError as e:
            raise DataError(f"cannot read {path}: {e.strerror}") from None


def read_text(
    text: str | None, file: str | None, errors: str = "strict", warn: Warn | None = None, keep_newline: bool = False
) -> str:
    """TEXT as given, `-` for stdin, or the contents of --file (exactly one of them).

    The one newline that ends a file or stdin (what `echo` and editors add) is not part of the text
    unless `keep_newline` (--keep-newline); TEXT itself is taken as it is.
    """
    if text is not None and file is not None:
        raise ConfigError("give either TEXT or --file, not both")
    if file is not None:
        return _chomp(read_file(file, errors, warn), keep_newline)
    if text is None:
        raise ConfigError("no text: give TEXT, - to read stdin, or --file PATH")
    if text == "-":
        return _chomp(decode(read_bounded(sys.stdin.buffer, "stdin"), "stdin", errors, warn), keep_newline)
    return decode_arg(text, "TEXT", errors, warn)


def _chomp(text: str, keep: bool) -> str:
    """`text` without its one final line ending (\\n or \\r\\n), unless `keep`.

    >>> _chomp("ab\\n", False), _chomp("ab\\n\\n", False), _chomp("ab\\r\\n", False), _chomp("ab\\n", True)
    ('ab', 'ab\\n', 'ab', 'ab\\n')
    """
    if keep:
        return text
    return text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text


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
        return io.BytesIO(text.encode("utf-8", "surrogateescape")), "TEXT"  # decoded line by line, as stdin is
    except UnicodeEncodeError:
        return io.BytesIO(text.encode("utf-8", "surrogatepass")), "TEXT"


def iter_lines(
    stream: BinaryIO, name: str, errors: str = "strict", warn: Warn | None = None, limit: int = MAX_INPUT_BYTES
) -> Iterator[tuple[int, str]]:
    r"""`(line number from 1, text)` for each line, read lazily; the newline (\n or \r\n) is dropped.

    Lines are split on \n only, so the numbers agree with `wc -l`, `sed -n 3p` and editors:

    >>> list(iter_lines(io.BytesIO(b"a b\r\n\nc\x0cd"), "stdin"))
    [(1, 'a b'), (2, ''), (3, 'c\x0cd')]

    A line longer than `limit` bytes is an error, found without reading the rest of it.
    """
    number = 0
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
            raise DataError(
                f"{name} line {number} is longer than {human_bytes(limit)}, the most attn reads as one text"
            )
        raw = raw[:-1] if raw.endswith(b"\n") else raw
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        yield number, decode(raw, f"{name} line {number}", errors, warn)
