"""An AttentionResult as json, jsonl, csv, npy or npz; and a stream of them, one per input line (`--lines`).

JSON is strict (no NaN or Infinity), floats are written as the shortest decimal that reads back
as the same float64 (`--precision` rounds only when asked), and matrices are written row by row,
never built as one big string or list.

>>> import io, json; from attncli.pipeline.run import run
>>> buf = io.BytesIO(); write_json(run("a b"), buf)
>>> json.loads(buf.getvalue())["tokens"]
['a', 'b']
"""

from __future__ import annotations

import io
import json
from typing import BinaryIO

import numpy as np
import orjson

from attncli.errors import DataError
from attncli.io.documents import Lines, Result
from attncli.io.encode import csv_field, dumps, token_marks
from attncli.pipeline.result import AttentionResult

SCHEMA = "attncli.attention/1"


# ---- exact numbers: floats as the shortest decimal that reads back the same, matrices row by row -------


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


def check_shapes(result: AttentionResult) -> None:
    """DataError when an array no longer has the shape the result's heads and tokens give it (changed in place
    after the run, e.g. `r.weights.resize(...)`): checked beside the finiteness, before a byte is written."""
    h, m, n = result.q.shape[0], len(result.tokens.strings), len(result.key_tokens.strings)
    arrays = {name: getattr(result, name) for name in ("scores", "masked", "weights")}
    wrong: list[tuple[str, tuple, tuple]] = [
        (name, a.shape, (h, m, n)) for name, a in arrays.items() if a is not None and a.shape != (h, m, n)
    ]
    if result.head_outputs.shape[:2] != (h, m):
        wrong.append(("head_outputs", result.head_outputs.shape, (h, m, "d_v")))
    if result.output.shape[:1] != (m,):
        wrong.append(("output", result.output.shape, (m, "d_model")))
    if wrong:
        name, got, want = wrong[0]
        raise DataError(
            f"the result's {name} has shape {got}, but its {h} heads and {m} x {n} tokens give {want}: "
            "it was changed after the run"
        )


def _json_arrays(result: AttentionResult) -> list[tuple[str, np.ndarray]]:
    check_shapes(result)
    out = []
    for h in range(result.q.shape[0]):  # the heads the result holds (one with --head)
        if result.scores is not None and result.weights is not None:
            out += [(f"heads[{h}].scores", result.scores[h]), (f"heads[{h}].weights", result.weights[h])]
        out.append((f"heads[{h}].output", result.head_outputs[h]))
    return [*out, ("output", result.output)]


def _weights(result: AttentionResult, fmt: str) -> tuple[np.ndarray, np.ndarray]:  # -> scores, weights [h, m, n]
    return result.attention(
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
        check_finite(name, a)
    sep, nl = ("", "") if lines else ("\n  ", "\n ")
    ctx = None if result.context_tokens is None else list(result.context_tokens.strings)
    fields = {
        "schema": SCHEMA,
        **({} if line is None else {"line": line}),
        "text": result.text,
        "context": result.context,
        "tokens": list(result.tokens.strings),
        "texts": list(result.tokens.text_of()),
        **token_marks(result.tokens),
        "context_tokens": ctx,
        "config": result.source.config_record(result),
    }
    stream.write(("{" + ("," + nl).join(f"{json.dumps(k)}: {dumps(v)}" for k, v in fields.items())).encode())
    stream.write(("," + nl + '"heads": [').encode())
    for h in range(result.q.shape[0]):  # the heads the result holds (one with --head)
        if h:
            stream.write(b", ")
        stream.write(f'{{"head": {result.head_index(h)}, "scores": '.encode())
        if result.scores is None or result.weights is None:  # --no-weights: the keys stay, their values are null
            stream.write(b"null" + (b', "masked": null' if result.config.mask else b"") + b', "weights": null')
        else:
            write_matrix(stream, result.scores[h], precision, sep)
            if result.masked is not None:
                stream.write(b', "masked": ')
                write_matrix(stream, result.masked[h], precision, sep)
            stream.write(b', "weights": ')
            write_matrix(stream, result.weights[h], precision, sep)
        stream.write(b', "output": ')
        write_matrix(stream, result.head_outputs[h], precision, sep)
        stream.write(b"}")
    stream.write(("]," + nl + '"output": ').encode())
    write_matrix(stream, result.output, precision, sep)
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


def write_csv(
    result: AttentionResult,
    stream: BinaryIO,
    precision: int | None = None,
    header: bool = True,
    line: int | None = None,
) -> None:
    """Tidy long form: one row per (head, query, key); with `line` (from --lines), a first column `line`."""
    all_scores, all_weights = _weights(result, "csv")
    check_shapes(result)
    check_finite("scores", all_scores)
    check_finite("weights", all_weights)
    lead = "" if line is None else f"{line},"
    if header:
        stream.write((("line," if line is not None else "") + ",".join(CSV_HEADER) + "\n").encode())
    q_fields = [csv_field(t) for t in result.tokens.strings]
    k_fields = [csv_field(t) for t in result.key_tokens.strings]
    for h in range(result.q.shape[0]):  # the heads the result holds (one with --head)
        name = result.head_index(h)  # the model's own head number with --head
        for i, q in enumerate(q_fields):
            scores = format_row(all_scores[h, i], precision).decode().split(",")
            weights = format_row(all_weights[h, i], precision).decode().split(",")
            prefix = f"{lead}{name},{i},{q},"
            stream.write(
                "".join(
                    [f"{prefix}{j},{k},{s},{w}\n" for j, (k, s, w) in enumerate(zip(k_fields, scores, weights))]
                ).encode()
            )


def arrays(result: AttentionResult) -> dict[str, np.ndarray]:
    """Every array of the run, by name (what `-o result.npz` holds)."""
    out = {"x": result.x, "q": result.q, "k": result.k, "v": result.v}
    if result.scores is not None and result.weights is not None:  # (none with --no-weights)
        out.update(scores=result.scores, weights=result.weights)
    out.update(head_outputs=result.head_outputs, output=result.output)
    out["tokens"] = np.array(result.tokens.strings, dtype=str)
    if result.x_context is not None and result.context_tokens is not None:
        out["x_context"] = result.x_context
        out["context_tokens"] = np.array(result.context_tokens.strings, dtype=str)
    if result.masked is not None:
        out["masked"] = result.masked
    return out


def write_npy(result: AttentionResult, stream: BinaryIO, precision: int | None = None) -> None:
    """The weights [h, m, n] alone, as one .npy."""
    np.save(stream, _weights(result, "npy")[1], allow_pickle=False)


def write_npz(result: AttentionResult, stream: BinaryIO, precision: int | None = None) -> None:
    """Every array and the tokens, as one .npz (np.load reads it without pickle)."""
    np.savez(stream, **arrays(result))  # type: ignore[arg-type]  # numpy types **kwds as bool


# ---- documents: what FORMATS calls ----------------------------------------------------------------


def json_document(doc: Result, stream: BinaryIO, precision: int | None = None) -> None:
    write_json(doc.result, stream, precision, extra=doc.extra)


def jsonl_document(doc: Result, stream: BinaryIO, precision: int | None = None) -> None:
    write_json(doc.result, stream, precision, lines=True, extra=doc.extra)


def csv_document(doc: Result, stream: BinaryIO, precision: int | None = None) -> None:
    write_csv(doc.result, stream, precision)


def npy_document(doc: Result, stream: BinaryIO, precision: int | None = None) -> None:
    write_npy(doc.result, stream, precision)


def npz_document(doc: Result, stream: BinaryIO, precision: int | None = None) -> None:
    write_npz(doc.result, stream, precision)


def jsonl_lines(doc: Lines, stream: BinaryIO, precision: int | None = None) -> None:
    """One object per input line, with its "line" number (and `doc.extra`'s keys at the end), as each is done."""

    def line(i: int, number: int, result: AttentionResult) -> bytes:
        out = io.BytesIO()
        write_json(result, out, precision, lines=True, extra=doc.extra(result) if doc.extra else None, line=number)
        return out.getvalue()

    for data in doc.written(line):
        stream.write(data)
        stream.flush()  # a reader downstream sees each line as soon as it is done


def csv_lines(doc: Lines, stream: BinaryIO, precision: int | None = None) -> None:
    """The tidy rows of every line under one header, with a first column `line`."""

    def rows(i: int, number: int, result: AttentionResult) -> bytes:
        out = io.BytesIO()
        write_csv(result, out, precision, header=i == 0, line=number)
        return out.getvalue()

    for data in doc.written(rows):
        stream.write(data)
        stream.flush()
