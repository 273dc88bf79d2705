"""AttentionResult -> json | jsonl | csv | npy, written to a binary stream.

JSON is strict (no NaN or Infinity), keys come in a fixed order, floats are
written as the shortest decimal that reads back as the same float64
(`--precision` rounds only when asked), and matrices are written row by row,
never built as one big string or list:

    >>> import io; from attncli.pipeline.run import run
    >>> buf = io.BytesIO(); write_json(run("a b"), buf)
    >>> import json; json.loads(buf.getvalue())["tokens"]
    ['a', 'b']

`FORMATS` is the registry that `-f` and `-o FILE.ext` read.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import orjson

from attncli.errors import ConfigError, DataError
from attncli.pipeline.result import AttentionResult

SCHEMA = "attncli.attention/1"

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


def _check_finite(name: str, a: np.ndarray) -> None:
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


def _matrix(stream: BinaryIO, a: np.ndarray, precision: int | None, sep: str) -> None:  # [rows, cols]
    """Write a 2-D array as nested JSON lists, one row at a time (no copy of the whole array)."""
    stream.write(b"[")
    joiner = ("," + sep).encode()
    for i in range(a.shape[0]):
        if i:
            stream.write(joiner)
        stream.write(b"[" + format_row(a[i], precision) + b"]")
    stream.write(b"]")


def config_dict(result: AttentionResult) -> dict:
    """The JSON "config": what was run, as the result's source records it."""
    return result.source.config_record(result)


def _json_arrays(result: AttentionResult) -> list[tuple[str, np.ndarray]]:
    out = []
    for h in range(result.config.heads):
        if result.weights is not None:
            out += [(f"heads[{h}].scores", result.scores[h]), (f"heads[{h}].weights", result.weights[h])]
        out.append((f"heads[{h}].output", result.head_outputs[h]))
    return out + [("output", result.output)]


def _no_weights(result: AttentionResult, fmt: str) -> None:
    if result.weights is None:
        raise ConfigError(
            f"-f {fmt} writes the weights, and --no-weights computed none: use -f json, jsonl or npz "
            "(they hold the outputs), or drop --no-weights"
        )


def write_json(
    result: AttentionResult,
    stream: BinaryIO,
    precision: int | None = None,
    lines: bool = False,
    extra: dict | None = None,
    line: int | None = None,
) -> None:
    """One JSON object (schema attncli.attention/1); with `lines`, all on one line (JSONL).

    `extra` adds optional keys after the others (e.g. "stats"); `line` (from `--lines`)
    adds the 1-based input line number after the schema. Every array is checked
    finite before the first byte is written. With --no-weights (config "weights": false)
    each head's "scores" and "weights" (and "masked", with a mask) are null: no n x n array.
    """
    for name, a in _json_arrays(result):
        _check_finite(name, a)
    sep, nl = ("", "") if lines else ("\n  ", "\n ")
    ctx = None if result.context_tokens is None else list(result.context_tokens.strings)
    fields = {
        "schema": SCHEMA,
        **({} if line is None else {"line": line}),
        "text": result.text,
        "context": result.context,
        "tokens": list(result.tokens.strings),
        "context_tokens": ctx,
        "config": config_dict(result),
    }
    stream.write(("{" + ("," + nl).join(f"{json.dumps(k)}: {dumps(v)}" for k, v in fields.items())).encode())
    stream.write(("," + nl + '"heads": [').encode())
    for h in range(result.config.heads):
        if h:
            stream.write(b", ")
        stream.write(f'{{"head": {result.head_index(h)}, "scores": '.encode())
        if result.weights is None:  # --no-weights: the keys stay, their values are null
            stream.write(b"null" + (b', "masked": null' if result.config.mask else b"") + b', "weights": null')
        else:
            _matrix(stream, result.scores[h], precision, sep)
            if result.masked is not None:
                stream.write(b', "masked": ')
                _matrix(stream, result.masked[h], precision, sep)
            stream.write(b', "weights": ')
            _matrix(stream, result.weights[h], precision, sep)
        stream.write(b', "output": ')
        _matrix(stream, result.head_outputs[h], precision, sep)
        stream.write(b"}")
    stream.write(("]," + nl + '"output": ').encode())
    _matrix(stream, result.output, precision, sep)
    for key, value in (extra or {}).items():
        stream.write(f",{nl}{json.dumps(key)}: {dumps(value, allow_nan=False)}".encode())
    stream.write(b"}\n")


def write_jsonl(
    result: AttentionResult,
    stream: BinaryIO,
    precision: int | None = None,
    line: int | None = None,
    extra: dict | None = None,
) -> None:
    write_json(result, stream, precision, lines=True, extra=extra, line=line)


CSV_HEADER = ["head", "query_index", "query", "key_index", "key", "score", "weight"]


def csv_field(value: str) -> str:
    """One CSV field, quoted only when it must be (as the csv module writes it).

    >>> csv_field("a"), csv_field("a,b"), csv_field(" "), csv_field("\\n"), csv_field("\\r")
    ('a', '"a,b"', ' ', '"\\n"', '"\\r"')
    """
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow([value])  # a field holding \r or \n is quoted
    return buf.getvalue()[:-2]


def write_csv(
    result: AttentionResult,
    stream: BinaryIO,
    precision: int | None = None,
    header: bool = True,
    line: int | None = None,
) -> None:
    """Tidy long form: one row per (head, query, key); with `line` (from --lines), a first column `line`."""
    _no_weights(result, "csv")
    _check_finite("scores", result.scores)
    _check_finite("weights", result.weights)
    lead = "" if line is None else f"{line},"
    if header:
        stream.write((("line," if line is not None else "") + ",".join(CSV_HEADER) + "\n").encode())
    q_fields = [csv_field(t) for t in result.tokens.strings]
    k_fields = [csv_field(t) for t in result.key_tokens.strings]
    for h in range(result.config.heads):
        name = result.head_index(h)  # the model's own head number with --head
        for i, q in enumerate(q_fields):
            scores = format_row(result.scores[h, i], precision).decode().split(",")
            weights = format_row(result.weights[h, i], precision).decode().split(",")
            prefix = f"{lead}{name},{i},{q},"
            stream.write(
                "".join(
                    [f"{prefix}{j},{k},{s},{w}\n" for j, (k, s, w) in enumerate(zip(k_fields, scores, weights))]
                ).encode()
            )


def arrays(result: AttentionResult) -> dict[str, np.ndarray]:
    """Every array of the run, by name (what `-o result.npz` holds)."""
    out = {
        "x": result.x,
        "q": result.q,
        "k": result.k,
        "v": result.v,
        "scores": result.scores,
        "weights": result.weights,
        "head_outputs": result.head_outputs,
        "output": result.output,
        "tokens": np.array(result.tokens.strings, dtype=str),
    }
    if result.weights is None:  # --no-weights: no scores, no weights
        del out["scores"], out["weights"]
    if result.x_context is not None:
        out["x_context"] = result.x_context
        out["context_tokens"] = np.array(result.context_tokens.strings, dtype=str)
    if result.masked is not None:
        out["masked"] = result.masked
    return out


def write_npy(result: AttentionResult, stream: BinaryIO, precision: int | None = None) -> None:
    """The weights [h, m, n] alone, as one .npy."""
    _no_weights(result, "npy")
    np.save(stream, result.weights, allow_pickle=False)


def write_npz(result: AttentionResult, stream: BinaryIO, precision: int | None = None) -> None:
    """Every array and the tokens, as one .npz (np.load reads it without pickle)."""
    np.savez(stream, **arrays(result))


def write_records(doc: dict, fmt: str, stream: BinaryIO, precision: int | None = None, command: str = "") -> None:
    """A small document whose list of flat dicts is doc["rows"]: json (the whole doc), jsonl or csv (the rows)."""
    rows = doc["rows"]

    def clean(value):
        if isinstance(value, float) and precision is not None:
            return round(value, precision)
        return value

    if fmt == "json":
        stream.write(dumps(doc, indent=1, allow_nan=False).encode() + b"\n")
    elif fmt == "jsonl":
        for row in rows:
            stream.write(dumps({k: clean(v) for k, v in row.items()}, allow_nan=False).encode() + b"\n")
    elif fmt == "csv":
        text = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=True)
        writer = csv.writer(text, lineterminator="\n")
        if rows:
            writer.writerow(rows[0].keys())
        writer.writerows(
            [clean(v) if not isinstance(v, (list, dict)) else json.dumps(v, ensure_ascii=False) for v in row.values()]
            for row in rows
        )
        text.detach()
    else:
        raise ConfigError(f"-f {fmt} is not available for {command or 'this command'}: use json, jsonl or csv")


@dataclass(frozen=True)
class Format:
    name: str
    extensions: tuple[str, ...]
    summary: str
    write: Callable[..., None]  # (result, binary stream, precision) -> None
    binary: bool = False  # never sent to a terminal


FORMATS: dict[str, Format] = {
    f.name: f
    for f in [
        Format("json", (".json",), "one JSON object, schema attncli.attention/1", write_json),
        Format("jsonl", (".jsonl",), "one JSON object per line", write_jsonl),
        Format("csv", (".csv",), "tidy long form: head, query, key, score, weight", write_csv),
        Format("npy", (".npy",), "the weights [h, m, n] as a .npy", write_npy, binary=True),
        Format("npz", (".npz",), "every array and the tokens as a .npz", write_npz, binary=True),
    ]
}


def format_for_path(path: str) -> str | None:
    """The format a file name implies by its extension, or None."""
    for f in FORMATS.values():
        if any(path.lower().endswith(ext) for ext in f.extensions):
            return f.name
    return None
