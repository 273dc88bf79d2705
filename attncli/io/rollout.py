"""`attn show --model DIR --rollout`: the rolled-out matrix as json (schema attncli.rollout/1), jsonl,
csv (query, key, weight), npy (the matrix) or npz (with the weights it came from).

Every string goes through the one escaping JSON encoder: a token can hold anything a text holds.
"""

from __future__ import annotations

import csv
import io
from typing import Any, BinaryIO

import numpy as np

from attncli.io.documents import Rollout
from attncli.io.encode import dumps, token_marks
from attncli.models.runs.run import ROLLOUT_SCHEMA


def _rows(a: np.ndarray, precision: int | None) -> list:  # [n, n] -> nested lists
    return (a if precision is None else np.round(a, precision)).tolist()


def write_json(doc: Rollout, stream: BinaryIO, precision: int | None = None, lines: bool = False) -> None:
    r = doc.rollout
    nl = "" if lines else "\n"
    head = {
        "schema": ROLLOUT_SCHEMA,
        "text": r.text,
        "tokens": list(r.tokens.strings),
        **token_marks(r.tokens),
        **({} if r.context is None else {"context": r.context}),
        **({} if r.context_tokens is None else {"context_tokens": list(r.context_tokens.strings)}),
        "config": {
            "model": r.model.name,
            "layer": r.layer,
            "layers": [0, r.layer],
            "method": r.method,
            **({} if r.pair is None else {"pair": r.pair}),
        },
    }
    stream.write(dumps(head)[:-1].encode() + f', "rollout": [{nl}'.encode())
    rows = [dumps(row, allow_nan=False) for row in _rows(r.matrix, precision)]
    stream.write(f",{nl}".join(rows).encode() + b"]}\n")


def write_jsonl(doc: Rollout, stream: BinaryIO, precision: int | None = None) -> None:
    write_json(doc, stream, precision, lines=True)


def write_csv(doc: Rollout, stream: BinaryIO, precision: int | None = None) -> None:
    r = doc.rollout
    text = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["query_index", "query", "key_index", "key", "weight"])
    strings, keys = r.tokens.strings, r.key_tokens.strings
    for i, row in enumerate(_rows(r.matrix, precision)):
        writer.writerows([i, strings[i], j, keys[j], repr(w)] for j, w in enumerate(row))
    text.detach()


def write_npy(doc: Rollout, stream: BinaryIO, precision: int | None = None) -> None:
    np.save(stream, doc.rollout.matrix, allow_pickle=False)


def write_npz(doc: Rollout, stream: BinaryIO, precision: int | None = None) -> None:
    r = doc.rollout
    arrays: dict[str, Any] = {
        "rollout": r.matrix,
        "weights": r.weights,
        "tokens": np.array(r.tokens.strings, dtype=str),
    }
    if r.context_tokens is not None:  # an encoder–decoder's cross part: the columns are the source's tokens
        arrays["context_tokens"] = np.array(r.context_tokens.strings, dtype=str)
    np.savez(stream, **arrays)
