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
from attncli.io.documents import Result
from attncli.io.formats import FORMATS, format_for_path
from attncli.io.result import format_row, write_csv, write_json, write_jsonl, write_npz
from attncli.pipeline.config import RunConfig
from attncli.pipeline.run import run


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
        "head": "0",
        "query_index": "0",
        "query": "a",
        "key_index": "1",
        "key": ",",
    }
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
    assert set(FORMATS) == {"table", "json", "jsonl", "csv", "npy", "npz", "parquet", "svg", "html"}


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


# ---- every format parsed back and compared with the in-memory result, bit for bit -----------------

CASES = {
    "two heads, causal": ("time flies like an arrow", RunConfig(heads=2, mask=("causal",)), None),
    "cross-attention": ("time flies", RunConfig(variant="additive", mask=("topk:2",)), "like an arrow"),
    "hostile chars": ('a,"b"\n\tc\u202e', RunConfig(tokenizer="char", heads=4, dim=8), None),
}


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


def _strict_json(data: bytes):
    def refuse(constant):
        raise ValueError(f"non-strict JSON constant {constant}")

    return json.loads(data, parse_constant=refuse)


@pytest.fixture(params=list(CASES), ids=list(CASES))
def result(request):
    text, config, context = CASES[request.param]
    return run(text, config, context=context)


def _check_doc(doc, r):
    assert doc["text"] == r.text and doc["tokens"] == list(r.tokens.strings)
    assert doc["context_tokens"] == (None if r.context_tokens is None else list(r.context_tokens.strings))
    assert len(doc["heads"]) == r.config.heads
    for h, head in enumerate(doc["heads"]):
        assert head["head"] == h
        assert _same(head["scores"], r.scores[h]) and _same(head["weights"], r.weights[h])
        assert _same(head["output"], r.head_outputs[h])
        assert ("masked" in head) == (r.masked is not None)
        if r.masked is not None:
            assert np.array_equal(np.array(head["masked"], dtype=bool), r.masked[h])
    assert _same(doc["output"], r.output)


def test_json_reads_back_bit_for_bit(result):
    buf = io.BytesIO()
    write_json(result, buf)
    _check_doc(_strict_json(buf.getvalue()), result)


def test_jsonl_reads_back_bit_for_bit_with_its_line(result):
    buf = io.BytesIO()
    write_jsonl(result, buf, line=7)
    assert buf.getvalue().endswith(b"\n") and buf.getvalue().count(b"\n") == 1
    doc = _strict_json(buf.getvalue())
    assert doc["line"] == 7 and list(doc)[:2] == ["schema", "line"]
    _check_doc(doc, result)


def test_csv_reads_back_bit_for_bit(result):
    buf = io.BytesIO()
    write_csv(result, buf)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue().decode("utf-8"), newline="")))
    h, m, n = result.weights.shape
    assert len(rows) == h * m * n and list(rows[0]) == [
        "head",
        "query_index",
        "query",
        "key_index",
        "key",
        "score",
        "weight",
    ]
    scores, weights = np.empty((h, m, n)), np.empty((h, m, n))
    for row in rows:
        hh, i, j = int(row["head"]), int(row["query_index"]), int(row["key_index"])
        assert row["query"] == result.tokens.strings[i] and row["key"] == result.key_tokens.strings[j]
        scores[hh, i, j], weights[hh, i, j] = float(row["score"]), float(row["weight"])
    assert _same(scores, result.scores) and _same(weights, result.weights)


def test_csv_with_a_line_column():
    buf = io.BytesIO()
    r = run("a b")
    write_csv(r, buf, line=3)
    write_csv(r, buf, header=False, line=5)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue().decode())))
    assert [row["line"] for row in rows] == ["3"] * 4 + ["5"] * 4 and next(iter(rows[0])) == "line"


def test_npy_is_the_weights_alone(result):
    buf = io.BytesIO()
    FORMATS["npy"].writers[Result](Result("attn show", print, result=result), buf, None)
    buf.seek(0)
    assert _same(np.load(buf, allow_pickle=False), result.weights)


def test_npz_holds_every_array_bit_for_bit(result):
    buf = io.BytesIO()
    write_npz(result, buf)
    buf.seek(0)
    z = np.load(buf, allow_pickle=False)
    for name in ("x", "q", "k", "v", "scores", "weights", "head_outputs", "output"):
        assert _same(z[name], getattr(result, name)), name
    assert z["tokens"].tolist() == list(result.tokens.strings)
    assert ("masked" in z) == (result.masked is not None)
    if result.context_tokens is not None:
        assert z["context_tokens"].tolist() == list(result.context_tokens.strings)
        assert _same(z["x_context"], result.x_context)


def test_precision_rounds_every_number_as_python_round_does():
    r = run("time flies like an arrow", RunConfig(heads=2))
    buf = io.BytesIO()
    write_json(r, buf, precision=4)
    doc = _strict_json(buf.getvalue())
    expected = [[round(x, 4) for x in row] for row in r.weights[1].tolist()]
    assert doc["heads"][1]["weights"] == expected


class _Recorder(io.BytesIO):
    def __init__(self):
        super().__init__()
        self.largest = 0

    def write(self, b):
        self.largest = max(self.largest, len(b))
        return super().write(b)


def test_json_streams_row_by_row():
    r = run("x" * 10 + "".join(chr(0x61 + i % 26) for i in range(290)), RunConfig(tokenizer="char"))
    stream = _Recorder()
    write_json(r, stream)
    row = max(len(b"[" + format_row(r.scores[0, i]) + b"]") for i in range(300))
    assert len(stream.getvalue()) > 500 * row and stream.largest < 2 * row  # the biggest write: tokens or one row


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_pictures_fetch_nothing_when_opened(tmp_path, theme):
    """Rich's SVG loads Fira Code from a CDN when opened; attn's names local monospace fonts and no URL but the
    SVG namespace (a name, never fetched), for -f svg, --save-svg and the HTML picture alike."""
    import re

    from tests.conftest import attn

    svg, saved, html = tmp_path / "a.svg", tmp_path / "b.svg", tmp_path / "c.html"
    assert attn("show", "time flies", "--theme", theme, "-f", "svg", "-o", svg).exit_code == 0
    assert attn("steps", "time flies", "--theme", theme, "--save-svg", saved, "--save-html", html).exit_code == 0
    for picture in (svg, saved, html):
        text = picture.read_text(encoding="utf-8")
        assert set(re.findall(r"[a-z]+://[^\s\"'<>)]*", text)) <= {"http://www.w3.org/2000/svg"}, picture.name
        for fetch in (r"@font-face", r"url\((?!#)", r"@import", r"\ssrc=", r"href=(?!.#)"):  # url(#id): in the file
            assert not re.search(fetch, text), (picture.name, fetch)
    assert "monospace" in svg.read_text(encoding="utf-8")
