"""AttentionResult -> json | jsonl | csv | npy, written to a binary stream.

JSON is strict (no NaN or Infinity), keys come in a fixed order, floats are
written with `repr` so they round-trip exactly (`--precision` rounds only when
asked), and matrices are written row by row, never built as one big string:

    >>> import io; from attncli.pipeline import run
    >>> buf = io.BytesIO(); write_json(run("a b"), buf)
    >>> import json; json.loads(buf.getvalue())["tokens"]
    ['a', 'b']

`FORMATS` is the registry that `-f` and `-o FILE.ext` read.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import BinaryIO, Callable

import numpy as np

from attncli.errors import ConfigError
from attncli.pipeline import AttentionResult

SCHEMA = "attncli.attention/1"


def _num(x: float, precision: int | None) -> str:
    return repr(x if precision is None else round(x, precision))


def _matrix(stream: BinaryIO, a: np.ndarray, precision: int | None, sep: str) -> None:  # [rows, cols]
    """Write a 2-D array as nested JSON lists, one row at a time."""
    stream.write(b"[")
    for i, row in enumerate(a.tolist() if a.dtype == bool else a.astype(float)):
        if i:
            stream.write(("," + sep).encode())
        if a.dtype == bool:
            stream.write(("[" + ",".join("true" if c else "false" for c in row) + "]").encode())
        else:
            stream.write(("[" + ",".join(_num(c, precision) for c in row.tolist()) + "]").encode())
    stream.write(b"]")


def config_dict(result: AttentionResult) -> dict:
    c = result.config
    return {"tokenizer": c.tokenizer, "variant": c.variant, "heads": c.heads, "dim": c.dim, "d_k": c.d_k,
            "d_v": c.d_v, "d_a": c.d_a, "mask": list(c.mask), "positional": c.positional,
            "projection": c.projection, "temperature": c.temperature, "seed": c.seed,
            **({} if c.model is None else {"model": c.model, "layer": c.layer}),
            **({} if c.head is None else {"head": c.head})}


def write_json(result: AttentionResult, stream: BinaryIO, precision: int | None = None, lines: bool = False,
               extra: dict | None = None) -> None:
    """One JSON object (schema attncli.attention/1); with `lines`, all on one line (JSONL).
    `extra` adds optional keys after the others (e.g. "stats")."""
    sep, nl = ("", "") if lines else ("\n  ", "\n ")
    ctx = None if result.context_tokens is None else list(result.context_tokens.strings)
    fields = {"schema": SCHEMA, "text": result.text, "context": result.context,
              "tokens": list(result.tokens.strings), "context_tokens": ctx, "config": config_dict(result)}
    stream.write(("{" + ("," + nl).join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
                                        for k, v in fields.items())).encode())
    stream.write(("," + nl + '"heads": [').encode())
    for h in range(result.config.heads):
        if h:
            stream.write(b", ")
        stream.write(f'{{"head": {result.head_index(h)}, "scores": '.encode())
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
        stream.write(f",{nl}{json.dumps(key)}: {json.dumps(value, ensure_ascii=False, allow_nan=False)}".encode())
    stream.write(b"}\n")


def write_jsonl(result: AttentionResult, stream: BinaryIO, precision: int | None = None) -> None:
    write_json(result, stream, precision, lines=True)


CSV_HEADER = ["head", "query_index", "query", "key_index", "key", "score", "weight"]


def write_csv(result: AttentionResult, stream: BinaryIO, precision: int | None = None, header: bool = True) -> None:
    """Tidy long form: one row per (head, query, key)."""
    text = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text, lineterminator="\n")
    if header:
        writer.writerow(CSV_HEADER)
    q_tokens, k_tokens = result.tokens.strings, result.key_tokens.strings
    for h in range(result.config.heads):
        name = result.head_index(h)  # the model's own head number with --head
        for i, q in enumerate(q_tokens):
            scores, weights = result.scores[h, i].tolist(), result.weights[h, i].tolist()
            writer.writerows([name, i, q, j, k, _num(scores[j], precision), _num(weights[j], precision)]
                             for j, k in enumerate(k_tokens))
    text.detach()


def arrays(result: AttentionResult) -> dict[str, np.ndarray]:
    """Every array of the run, by name (what `-o result.npz` holds)."""
    out = {"x": result.x, "q": result.q, "k": result.k, "v": result.v, "scores": result.scores,
           "weights": result.weights, "head_outputs": result.head_outputs, "output": result.output,
           "tokens": np.array(result.tokens.strings, dtype=str)}
    if result.x_context is not None:
        out["x_context"] = result.x_context
        out["context_tokens"] = np.array(result.context_tokens.strings, dtype=str)
    if result.masked is not None:
        out["masked"] = result.masked
    return out


def write_npy(result: AttentionResult, stream: BinaryIO, precision: int | None = None) -> None:
    """The weights [h, m, n] alone, as one .npy."""
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
        stream.write(json.dumps(doc, ensure_ascii=False, indent=1, allow_nan=False).encode() + b"\n")
    elif fmt == "jsonl":
        for row in rows:
            stream.write(json.dumps({k: clean(v) for k, v in row.items()}, ensure_ascii=False,
                                    allow_nan=False).encode() + b"\n")
    elif fmt == "csv":
        text = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=True)
        writer = csv.writer(text, lineterminator="\n")
        if rows:
            writer.writerow(rows[0].keys())
        writer.writerows([clean(v) if not isinstance(v, (list, dict)) else json.dumps(v, ensure_ascii=False)
                          for v in row.values()] for row in rows)
        text.detach()
    else:
        raise ConfigError(f"-f {fmt} is not available for {command or 'this command'}: use json, jsonl or csv")


@dataclass(frozen=True)
class Format:
    name: str
    extensions: tuple[str, ...]
    summary: str
    write: Callable[..., None]  # (result, binary stream, precision) -> None


FORMATS: dict[str, Format] = {
    f.name: f
    for f in [
        Format("json", (".json",), "one JSON object, schema attncli.attention/1", write_json),
        Format("jsonl", (".jsonl",), "one JSON object per line", write_jsonl),
        Format("csv", (".csv",), "tidy long form: head, query, key, score, weight", write_csv),
        Format("npy", (".npy",), "the weights [h, m, n] as a .npy", write_npy),
        Format("npz", (".npz",), "every array and the tokens as a .npz", write_npz),
    ]
}


def format_for_path(path: str) -> str | None:
    """The format a file name implies by its extension, or None."""
    for f in FORMATS.values():
        if any(path.lower().endswith(ext) for ext in f.extensions):
            return f.name
    return None
