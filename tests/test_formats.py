"""Formats round-trip to full precision and are strict."""

import csv
import io
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attncli.errors import DataError
from attncli.formats import FORMATS, format_for_path, format_row, write_csv, write_json, write_jsonl, write_npz
from attncli.pipeline import RunConfig, run


def _json(result, **kw):
    buf = io.BytesIO()
    write_json(result, buf, **kw)
    return json.loads(buf.getvalue(), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def test_json_round_trips_exactly():
    r = run("time flies like an arrow", RunConfig(heads=2, mask=("causal",)))
    doc = _json(r)
    assert doc["schema"] == "attncli.attention/1"
    assert doc["tokens"] == list(r.tokens.strings)
    assert doc["config"]["heads"] == 2 and doc["config"]["mask"] == ["causal"]
    for h in range(2):
        assert np.array_equal(np.array(doc["heads"][h]["weights"]), r.weights[h])
        assert np.array_equal(np.array(doc["heads"][h]["scores"]), r.scores[h])
        assert np.array_equal(np.array(doc["heads"][h]["masked"]), r.masked[h])
        assert np.array_equal(np.array(doc["heads"][h]["output"]), r.head_outputs[h])
    assert np.array_equal(np.array(doc["output"]), r.output)


def test_precision_rounds_only_when_asked():
    doc = _json(run("time flies"), precision=3)
    assert all(len(repr(w).split(".")[1]) <= 3 for row in doc["heads"][0]["weights"] for w in row)


def test_jsonl_is_one_line():
    buf = io.BytesIO()
    write_jsonl(run("time flies"), buf)
    assert buf.getvalue().count(b"\n") == 1 and json.loads(buf.getvalue())["tokens"] == ["time", "flies"]


def test_csv_is_tidy_long_form():
    r = run("a, b", RunConfig(heads=2))
    buf = io.BytesIO()
    write_csv(r, buf)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue().decode())))
    assert len(rows) == 2 * 3 * 3
    assert {k: v for k, v in rows[1].items() if k not in ("score", "weight")} == {
        "head": "0", "query_index": "0", "query": "a", "key_index": "1", "key": ","}
    assert float(rows[1]["score"]) == r.scores[0, 0, 1] and float(rows[1]["weight"]) == r.weights[0, 0, 1]


def test_npz_holds_every_array_without_pickle():
    r = run("time flies", RunConfig(mask=("causal",)))
    buf = io.BytesIO()
    write_npz(r, buf)
    buf.seek(0)
    z = np.load(buf, allow_pickle=False)
    assert np.array_equal(z["weights"], r.weights) and z["tokens"].tolist() == ["time", "flies"]
    assert z["masked"].dtype == bool


def test_extension_picks_the_format():
    assert format_for_path("out/R.JSON") == "json" and format_for_path("a.npz") == "npz"
    assert format_for_path("a.txt") is None
    assert set(FORMATS) == {"json", "jsonl", "csv", "npy", "npz"}


@given(arrays(np.float64, st.integers(1, 50), elements=st.floats(allow_nan=False, allow_infinity=False)))
def test_a_row_of_any_finite_floats_reads_back_bit_for_bit(row):
    back = np.array(json.loads(b"[" + format_row(row) + b"]"), dtype=np.float64)
    assert np.array_equal(back.view(np.uint64), row.view(np.uint64))  # -0.0 and subnormals included


def test_rows_of_booleans_and_of_other_dtypes():
    assert format_row(np.array([True, False])) == b"true,false"
    assert format_row(np.array([0.1], dtype=np.float32)) == repr(float(np.float32(0.1))).encode()
    assert format_row(np.arange(6.0).reshape(2, 3)[:, 1]) == b"1.0,4.0"  # a strided column


def test_non_finite_numbers_are_refused_before_any_byte():
    r = run("a b")
    r.output[0, 0] = np.nan
    buf = io.BytesIO()
    with pytest.raises(DataError, match="NaN or Infinity"):
        write_json(r, buf)
    assert buf.getvalue() == b""
