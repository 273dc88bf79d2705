"""Exact, terminal-safe encoders that every writer uses: strict JSON text, float rows, CSV fields.

JSON is strict (no NaN or Infinity), floats are written as the shortest decimal that reads back
as the same float64 (`--precision` rounds only when asked), and matrices are written row by row,
never built as one big string or list.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import BinaryIO

import numpy as np
import orjson

from attncli.errors import DataError

# Code points that json.dumps(ensure_ascii=False) writes raw but a terminal may act on or hide: DEL and the C1
# controls (U+009B is CSI), format characters (bidi overrides and isolates, zero-width, BOM, tags), the line and
# paragraph separators, and lone surrogates (which are not even encodable as UTF-8). `dumps` writes them as
# \uXXXX escapes instead, so `attn ... -f json` on a terminal is as inert as a table, and the parsed strings
# are exactly the same. tests/test_hostile.py checks this class against the running Python's Unicode tables.
_UNSAFE_IN_JSON = re.compile(
    "[\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def _json_escape(match: re.Match) -> str:
    o = ord(match.group())
    if o > 0xFFFF:  # JSON writes an astral code point as its UTF-16 surrogate pair
        o -= 0x10000
        return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
    return f"\\u{o:04x}"


def dumps(value, **kwargs) -> str:
    r"""json.dumps with readable UTF-8, but every terminal-unsafe code point escaped (see _UNSAFE_IN_JSON):

    >>> dumps(["café", "\x9b2J", "\u202e"])
    '["café", "\\u009b2J", "\\u202e"]'
    """
    return _UNSAFE_IN_JSON.sub(_json_escape, json.dumps(value, ensure_ascii=False, **kwargs))


def check_finite(name: str, a: np.ndarray) -> None:
    if a.dtype != bool and not np.isfinite(a).all():
        raise DataError(f"{name} holds NaN or Infinity, which strict JSON and CSV cannot carry: use -f npy or npz")


def format_row(row: np.ndarray, precision: int | None = None) -> bytes:  # [cols] -> b"a,b,c"
    """One row of numbers (or booleans) as JSON values separated by commas, with no brackets.

    Floats are the shortest decimal that reads back as the same float64 (orjson's
    formatting: exact, ~25x faster than `repr` per number); `precision` rounds first,
    with Python's correctly rounded `round`:

    >>> format_row(np.array([0.1, 1e-7, 2.0])), format_row(np.array([2/3]), 3)
    (b'0.1,1e-7,2.0', b'0.667')
    """
    if precision is not None and row.dtype != bool:
        out = orjson.dumps([round(x, precision) for x in row.tolist()])
    else:
        dtype = bool if row.dtype == bool else np.float64
        out = orjson.dumps(np.ascontiguousarray(row, dtype=dtype), option=orjson.OPT_SERIALIZE_NUMPY)
    return out[1:-1]


def write_matrix(stream: BinaryIO, a: np.ndarray, precision: int | None, sep: str) -> None:  # [rows, cols]
    """Write a 2-D array as nested JSON lists, one row at a time (no copy of the whole array)."""
    stream.write(b"[")
    joiner = ("," + sep).encode()
    for i in range(a.shape[0]):
        if i:
            stream.write(joiner)
        stream.write(b"[" + format_row(a[i], precision) + b"]")
    stream.write(b"]")


def csv_field(value: str) -> str:
    """One CSV field, quoted only when it must be (as the csv module writes it).

    >>> csv_field("a"), csv_field("a,b"), csv_field(" "), csv_field("\\n"), csv_field("\\r")
    ('a', '"a,b"', ' ', '"\\n"', '"\\r"')
    """
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow([value])  # a field holding \r or \n is quoted
    return buf.getvalue()[:-2]
