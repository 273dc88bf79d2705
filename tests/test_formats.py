"""Formats round-trip to full precision and are strict."""

import csv
import io
import json

import numpy as np

from attncli.formats import FORMATS, format_for_path, write_csv, write_json, write_jsonl, write_npz
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
    assert rows[1] == {"head": "0", "query_index": "0", "query": "a", "key_index": "1", "key": ",",
                       "score": repr(float(r.scores[0, 0, 1])), "weight": repr(float(r.weights[0, 0, 1]))}


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
