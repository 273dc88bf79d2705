"""A records document (tokens, compare, variants, heads): the whole document as JSON, or its rows.

>>> import io; buf = io.BytesIO()
>>> write_csv(Records("attn x", lambda precision, width: "", doc={"rows": [{"a": 1, "b": [2]}]}), buf)
>>> buf.getvalue()
b'a,b\\n1,[2]\\n'
"""

from __future__ import annotations

import csv
import io
from typing import Any, BinaryIO

from attncli.io.documents import Records
from attncli.io.encode import dumps


def _rounded(value: Any, precision: int | None) -> Any:
    return round(value, precision) if isinstance(value, float) and precision is not None else value


def write_json(records: Records, stream: BinaryIO, precision: int | None = None) -> None:
    """The whole document, exact (the rows' floats are not rounded)."""
    stream.write(dumps(records.doc, indent=1, allow_nan=False).encode() + b"\n")


def write_jsonl(records: Records, stream: BinaryIO, precision: int | None = None) -> None:
    """One row per line."""
    for row in records.doc["rows"]:
        stream.write(dumps({k: _rounded(v, precision) for k, v in row.items()}, allow_nan=False).encode() + b"\n")


def write_csv(records: Records, stream: BinaryIO, precision: int | None = None) -> None:
    """The rows under a header of their keys; a list or dict in a cell is written as JSON."""
    rows = records.doc["rows"]
    text = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text, lineterminator="\n")
    if rows:
        writer.writerow(rows[0].keys())
    writer.writerows(
        [dumps(v) if isinstance(v, (list, dict)) else _rounded(v, precision) for v in row.values()] for row in rows
    )
    text.detach()
