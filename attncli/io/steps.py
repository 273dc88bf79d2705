"""`attn steps -f json|jsonl|npz`: every stage of a run, whole (schema attncli.steps/1)."""

from __future__ import annotations

import json
from typing import BinaryIO

import numpy as np

from attncli.io.documents import Steps
from attncli.io.encode import dumps, token_marks
from attncli.pipeline.result import AttentionResult, Step
from attncli.pipeline.steps import SCHEMA, params, steps


def _nested(a: np.ndarray, precision: int | None):
    """An array as nested lists of floats; -inf becomes None (strict JSON has no infinity)."""
    a = np.asarray(a, dtype=float)
    if precision is not None:
        a = np.round(a, precision)
    if np.isfinite(a).all():
        return a.tolist()
    return np.where(np.isfinite(a), a, np.array(None, dtype=object)).tolist()


def _token_list(tokens) -> list[dict]:
    return [
        {"token": s, "text": t, "id": int(i), "start": int(a), "end": int(b)}
        for s, t, i, (a, b) in zip(tokens.strings, tokens.text_of(), tokens.ids, tokens.offsets)
    ]


def step_record(step: Step, precision: int | None = None) -> dict:
    """One stage as JSON: its name, title (in words), formula, shape, axes and whole array (and its note, if any)."""
    doc = {
        "name": step.name,
        "title": step.title,
        "formula": step.formula,
        "shape": list(step.shape),
        "axes": list(step.axes),
        "array": _nested(step.array, precision),
    }
    if step.note:
        doc["note"] = step.note
    return doc


def write_json(
    result: AttentionResult,
    stream: BinaryIO,
    precision: int | None = None,
    lines: bool = False,
    extra: dict | None = None,
) -> None:
    """Schema attncli.steps/1: text, tokens, config, then every step whole, one step per line, the parameters,
    and `extra`'s keys after them (--contrib's "contributions")."""
    nl = "" if lines else "\n"
    head = {
        "schema": SCHEMA,
        "text": result.text,
        "context": result.context,
        "tokens": _token_list(result.tokens),
        **token_marks(result.tokens),
        "context_tokens": None if result.context_tokens is None else _token_list(result.context_tokens),
        "config": result.source.config_record(result),
    }
    stream.write(dumps(head)[:-1].encode())
    stream.write(f', "steps": [{nl}'.encode())
    for i, step in enumerate(steps(result)):
        stream.write(((", " + nl if i else "") + dumps(step_record(step, precision), allow_nan=False)).encode())
    stream.write(f'],{nl} "params": {{'.encode())
    for i, (name, a) in enumerate(params(result).items()):
        stream.write(f"{', ' if i else ''}{json.dumps(name)}: ".encode())
        stream.write(json.dumps(_nested(a, precision), allow_nan=False).encode())
    stream.write(b"}")
    for key, value in (extra or {}).items():
        stream.write(f",{nl} {json.dumps(key)}: {dumps(value, allow_nan=False)}".encode())
    stream.write(b"}\n")


def write_npz(result: AttentionResult, stream: BinaryIO, precision: int | None = None) -> None:
    """Every step and weight matrix by name, in one .npz (np.load reads it without pickle)."""
    arrays = {step.name.replace(":", "_"): step.array for step in steps(result)}
    arrays.update(params(result))
    arrays["tokens"] = np.array(result.tokens.strings, dtype=str)
    np.savez(stream, **arrays)  # type: ignore[arg-type]  # numpy types **kwds as bool


def json_document(doc: Steps, stream: BinaryIO, precision: int | None = None) -> None:
    write_json(doc.result, stream, precision, extra=doc.extra)


def jsonl_document(doc: Steps, stream: BinaryIO, precision: int | None = None) -> None:
    write_json(doc.result, stream, precision, lines=True, extra=doc.extra)


def npz_document(doc: Steps, stream: BinaryIO, precision: int | None = None) -> None:
    write_npz(doc.result, stream, precision)
