"""Bytes to text for everything a run reads: UTF-8, strictly unless asked, and never more than a bound.

    >>> decode(b"caf\\xc3\\xa9", "stdin")
    'café'
    >>> decode(b"ab\\xff", "stdin")
    Traceback (most recent call last):
    ...
    attncli.errors.DataError: stdin is not valid UTF-8: byte 0xff at offset 2 (--errors replace reads it with U+FFFD)
    >>> decode(b"ab\\xff", "stdin", "replace")
    'ab\ufffd'

`--errors replace` puts U+FFFD where the bytes are not UTF-8 and says so (through `warn`).
`read_bounded` refuses a stream past its limit after that many bytes: a bigger file, an
endless pipe or /dev/zero is never read into memory to the end.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import BinaryIO

from attncli.errors import ConfigError, DataError

ERRORS = ("strict", "replace")
MAX_INPUT_BYTES = 64 * 2**20  # one text, one line of --lines, or one JSON of attn compute
MAX_TOKENS = 4096  # --max-tokens: 4096² float64 cells are 128 MiB per array and head

Warn = Callable[[str], None]


def human_bytes(n: float) -> str:
    """Bytes in binary units, as messages show them.

    >>> human_bytes(512), human_bytes(64 * 2**20), human_bytes(3.5 * 2**40)
    ('512 bytes', '64 MiB', '3.5 TiB')
    """
    if n < 1024:
        return f"{n:,.0f} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"):
        n /= 1024
        if n < 1024 or unit == "YiB":
            return f"{n:,.1f} {unit}".replace(".0 ", " ")
    raise AssertionError  # unreachable


def decode(data: bytes, source: str, errors: str = "strict", warn: Warn | None = None) -> str:
    """UTF-8: strict (the offset of the first bad byte in the message), or with U+FFFD for bad bytes."""
    if errors not in ERRORS:
        raise ConfigError(f"--errors must be one of {', '.join(ERRORS)}, got {errors!r}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if errors == "strict":
            raise DataError(
                f"{source} is not valid UTF-8: byte 0x{data[e.start]:02x} at offset {e.start} "
                "(--errors replace reads it with U+FFFD)"
            ) from None
        text = data.decode("utf-8", "replace")
        if warn is not None:
            bad = text.count("\ufffd") - data.decode("utf-8", "ignore").count("\ufffd")
            warn(
                f"{source} is not valid UTF-8: {bad} bad sequence{'s' if bad != 1 else ''} read as U+FFFD "
                f"(the first, 0x{data[e.start]:02x}, at byte offset {e.start})"
            )
        return text


def read_bounded(
    stream: BinaryIO,
    source: str,
    hint: str = "use --lines to stream it one line at a time",
    limit: int = MAX_INPUT_BYTES,
) -> bytes:
    """All of `stream`, or DataError as soon as it passes `limit` bytes (an endless pipe ends here too)."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise DataError(f"{source} is larger than {human_bytes(limit)}, the most attn reads as one input: {hint}")
    return data


MAX_JSON_DEPTH = 64  # real configs nest 4 deep, tokenizer.json files about 8; Python's parser fails near 1000


def json_depth(data: bytes) -> int:
    """How deep the arrays and objects of a JSON document nest, counted without parsing it (strings skipped).

    >>> json_depth(b'{"a": [1, {"b": "[[["}]}'), json_depth(b"3"), json_depth(b"[" * 5000)
    (3, 0, 5000)
    """
    import numpy as np  # late: start-up (NumPy only when a JSON is read)

    bare = re.sub(rb'"(?:[^"\\]|\\.)*"', b"", data)
    step = np.zeros(256, np.int8)
    step[list(b"[{")], step[list(b"]}")] = 1, -1
    levels = np.cumsum(step[np.frombuffer(bare, np.uint8)], dtype=np.int64)
    return int(levels.max(initial=0))
