"""`attn compute`: hand-checked 2x2 numbers for every variant, every input route, every format, bad input."""

import csv
import io
import json
import math
import shutil
import subprocess
import sys

import numpy as np
import pytest

from attncli.core.variants import VARIANTS
from attncli.pipeline.given import compute
from attncli.pipeline.matrices import parse_json
from tests.conftest import ROOT, refused
from tests.conftest import attn as invoke
from tests.tolerance import U64, assert_rows_sum_to_one, assert_within, gamma


def attn(*args, input=None):
    """`attn compute ARGS...`"""
    return invoke("compute", *args, input=input)


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


# The worked example (docs/maths.md): two queries, two keys, values 10·I so that the output is 10 × the weights.
#   q0 = [1, 0], q1 = [0, 1];  k0 = [1, 0], k1 = [1, 1];  v0 = [10, 0], v1 = [0, 10]
# With two keys, a row's weights are [σ(s0 - s1), σ(s1 - s0)], σ the logistic function.
QKV = {"q": [[1, 0], [0, 1]], "k": [[1, 0], [1, 1]], "v": [[10, 0], [0, 10]]}
r2, t1 = 1 / math.sqrt(2), math.tanh(1)
HAND = {  # variant: (params, scores worked out on paper, weights to 4 decimals from a calculator)
    # qᵀk: q0·k0 = 1, q0·k1 = 1; q1·k0 = 0, q1·k1 = 1.  Row 1: σ(-1) = 0.2689.
    "dot": (None, [[1, 1], [0, 1]], [[0.5, 0.5], [0.2689, 0.7311]]),
    # divided by √2
    "scaled": (None, [[r2, r2], [0, r2]], [[0.5, 0.5], [0.3302, 0.6698]]),
    # ‖k1‖ = √2, every other norm is 1.  Row 0: σ(1 - 1/√2) = σ(0.2929) = 0.5727.
    "cosine": (None, [[1, r2], [0, r2]], [[0.5727, 0.4273], [0.3302, 0.6698]]),
    # d_a = 1, W₁q = q[0], W₂k = -k[1], b = 0, v = 1:  s = tanh(q[0] - k[1]).  σ(tanh 1) = σ(0.7616) = 0.6817.
    "additive": (
        {"W1": [[1, 0]], "W2": [[0, -1]], "b": [0], "v": [1]},
        [[t1, 0], [0, -t1]],
        [[0.6817, 0.3183], [0.6817, 0.3183]],
    ),
    # W = diag(1, -1):  s = q[0]k[0] - q[1]k[1].  Row 1: [0, -1], σ(1) = 0.7311.
    "multiplicative": ({"W": [[1, 0], [0, -1]]}, [[1, 1], [0, -1]], [[0.5, 0.5], [0.7311, 0.2689]]),
    # W_g = [0, 0, 1, -1]: the gate is σ(k[0] - k[1]): σ(1) = 0.7311 for k0, σ(0) = 0.5 for k1; times qᵀk.
    # Row 0: σ(0.7311 - 0.5) = 0.5575; row 1: σ(-0.5) = 0.3775.
    "gated": ({"W_g": [0, 0, 1, -1]}, [[sigmoid(1), 0.5], [0, 0.5]], [[0.5575, 0.4425], [0.3775, 0.6225]]),
}


# linformer --rank 1: both keys in one group, k̄ = [1, 0.5]; each query scores both keys alike, q·k̄ / √2.
HAND["linformer"] = (None, [[r2, r2], [r2 / 2, r2 / 2]], [[0.5, 0.5], [0.5, 0.5]])
OPTIONS = {"linformer": ["--rank", "1"]}
NOT_BY_HAND = {  # variant: why no 2x2 can be worked on paper, and where it is checked instead
    "performer": "its F random features come from --seed; tests/test_variants.py checks it against a slow reference",
}


def test_every_variant_has_a_hand_checked_example():
    assert set(HAND) | set(NOT_BY_HAND) == set(VARIANTS), "add a 2x2 worked on paper for the new variant"


def test_linformer_at_full_rank_is_scaled_by_hand():
    r = attn("-v", "linformer", "-f", "json", input=json.dumps(QKV))  # default rank 8 >= 2 keys: one key a group
    head = json.loads(r.stdout)["heads"][0]
    assert np.allclose(head["scores"], HAND["scaled"][1], rtol=0, atol=1e-15)
    assert np.allclose(head["weights"], HAND["scaled"][2], rtol=0, atol=5e-5)


@pytest.mark.parametrize("name", list(HAND))
def test_hand_checked_2x2(name):
    params, scores, weights = HAND[name]
    doc_in = dict(QKV, **({"params": params} if params else {}))
    r = attn("-v", name, *OPTIONS.get(name, []), "-f", "json", input=json.dumps(doc_in))
    assert r.exit_code == 0, r.output
    head = json.loads(r.stdout)["heads"][0]
    s = np.array(head["scores"])
    assert np.allclose(s, scores, rtol=0, atol=1e-15)
    exact = [[sigmoid(row[0] - row[1]), sigmoid(row[1] - row[0])] for row in s.tolist()]
    assert np.allclose(head["weights"], exact, rtol=0, atol=1e-15)
    assert np.allclose(head["weights"], weights, rtol=0, atol=5e-5)
    assert np.allclose(head["output"], 10 * np.array(exact), rtol=0, atol=1e-14)  # v = 10·I


def test_json_follows_the_attn_show_schema():
    doc = json.loads(attn("-v", "dot", "-f", "json", input=json.dumps(QKV)).stdout)
    show = json.loads(invoke("show", "a b", "-f", "json").stdout)
    assert list(doc) == list(show) and list(doc["config"]) == list(show["config"])
    assert doc["schema"] == "attncli.attention/1" and doc["text"] is None
    assert doc["tokens"] == ["0", "1"] and doc["context_tokens"] == ["0", "1"]
    assert doc["config"] == {
        "tokenizer": "none",
        "variant": "dot",
        "heads": 1,
        "dim": 2,
        "d_k": 2,
        "d_v": 2,
        "d_a": 2,
        "mask": [],
        "positional": "none",
        "projection": "none",
        "temperature": 1.0,
        "seed": 0,
    }
    assert doc["output"] == doc["heads"][0]["output"]


def test_q_alone_is_self_attention_and_dk_may_differ_from_dv():
    q = [[1.0, 2.0, 0.0], [0.0, 1.0, 1.0], [2.0, 0.0, 1.0]]
    doc = json.loads(attn("-f", "json", input=json.dumps({"q": q})).stdout)
    assert doc["context_tokens"] is None and doc["config"]["d_k"] == doc["config"]["d_v"] == 3
    s = np.array(q) @ np.array(q).T / math.sqrt(3)
    assert np.allclose(doc["heads"][0]["scores"], s, rtol=0, atol=1e-15)
    doc = json.loads(attn("-f", "json", input=json.dumps({"q": q, "v": [[1.0], [2.0], [3.0]]})).stdout)
    assert np.array(doc["output"]).shape == (3, 1) and doc["config"]["d_v"] == 1  # output width follows v


def test_multiplicative_and_additive_take_q_and_k_of_different_widths():
    given = {"q": [[1.0, 2.0]], "k": [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]}
    r = compute(parse_json(json.dumps(given), "t"), "multiplicative", seed=3)
    assert r.scores.shape == (1, 1, 2) and r.params["W"].shape == (1, 2, 3)
    r = compute(parse_json(json.dumps(given), "t"), "additive", d_a=5)
    assert r.params["W1"].shape == (1, 5, 2) and r.params["W2"].shape == (1, 5, 3) and r.config.d_a == 5


def test_additive_hidden_width_comes_from_the_given_parameters():
    params = {"W1": [[1, 0], [0, 1], [1, 1]], "W2": [[0, 1], [1, 1], [0, 0]], "b": [0, 0, 1], "v": [1, 2, 3]}
    r = compute(parse_json(json.dumps({"q": [[1.0, 0.0]], "params": params}), "t"), "additive")
    assert r.config.d_a == 3
    # s = vᵀ tanh(W₁q + W₂k + b) with q = k = [1, 0]: W₁q = [1, 0, 1], W₂k = [0, 1, 0], b = [0, 0, 1]
    assert r.scores[0, 0, 0] == pytest.approx(math.tanh(1) + 2 * math.tanh(1) + 3 * math.tanh(2), abs=1e-15)


def test_seeded_parameters_are_reproducible_and_given_ones_win():
    g = parse_json(json.dumps(QKV), "t")
    a, b, c = compute(g, "gated", seed=1), compute(g, "gated", seed=1), compute(g, "gated", seed=2)
    assert a.weights.tobytes() == b.weights.tobytes() and a.weights.tobytes() != c.weights.tobytes()
    given = parse_json(json.dumps(dict(QKV, params={"W_g": [0, 0, 0, 0]})), "t")
    # exact: σ(0) = ½ times integer qᵀk
    assert np.array_equal(compute(given, "gated", seed=1).scores[0], 0.5 * np.array([[1, 1], [0, 1]]))


def test_npy_files_give_the_same_numbers_as_json(tmp_path):
    for name in "qkv":
        np.save(tmp_path / f"{name}.npy", np.array(QKV[name], dtype=np.float32 if name == "v" else np.int64))
    r = attn(
        "--q",
        str(tmp_path / "q.npy"),
        "--k",
        str(tmp_path / "k.npy"),
        "--v",
        str(tmp_path / "v.npy"),
        "-v",
        "cosine",
        "-f",
        "json",
    )
    assert r.exit_code == 0, r.output
    assert r.stdout == attn("-v", "cosine", "-f", "json", input=json.dumps(QKV)).stdout


def test_input_file_masks_and_temperature(tmp_path):
    (tmp_path / "qkv.json").write_text(json.dumps(QKV))
    doc = json.loads(
        attn(
            "--input", str(tmp_path / "qkv.json"), "-v", "dot", "--mask", "causal", "--temperature", "2", "-f", "json"
        ).stdout
    )
    assert doc["heads"][0]["masked"] == [[False, True], [False, False]]
    assert doc["heads"][0]["weights"][0] == [1.0, 0.0]
    assert doc["heads"][0]["weights"][1] == pytest.approx([sigmoid(-0.5), sigmoid(0.5)], abs=1e-15)


@pytest.mark.parametrize("fmt", ["table", "jsonl", "csv", "npy", "npz"])
def test_every_format_works(fmt, tmp_path):
    out = tmp_path / f"r.{'txt' if fmt == 'table' else fmt}"
    r = attn("-v", "dot", "-f", fmt, "-o", str(out), "--color", "never", input=json.dumps(QKV))
    assert r.exit_code == 0, r.output
    if fmt == "table":
        text = out.read_text()
        assert "given Q [2, 2], K [2, 2], V [2, 2] (stdin)" in text and "0.73" in text and "O = A V" in text
    elif fmt == "jsonl":
        assert json.loads(out.read_text())["tokens"] == ["0", "1"]
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out.read_text())))
        assert [(row["query"], row["key"]) for row in rows] == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
    elif fmt == "npy":
        expected = np.array([[[0.5, 0.5], [sigmoid(-1), sigmoid(1)]]])
        # float64 softmax of scores 0 and 1 (γ₂ + 5u, and u for the spread of 1) against σ's exp, + and ÷ (7u)
        assert_within(np.load(out), expected, (gamma(2, U64) + 13 * U64) * expected)
    else:
        with np.load(out) as z:
            assert np.array_equal(z["q"][0], QKV["q"]) and np.array_equal(z["output"], z["head_outputs"][0])


def test_the_readme_pipe_works():
    """python docs/make_qkv.py | attn compute -v cosine -f json | jq '.heads[0].weights'"""
    make = subprocess.run([sys.executable, str(ROOT / "docs" / "make_qkv.py")], capture_output=True, check=True)
    p = subprocess.run(
        [sys.executable, "-m", "attncli", "compute", "-v", "cosine", "-f", "json"],
        input=make.stdout,
        capture_output=True,
        check=True,
    )
    if shutil.which("jq"):
        weights = json.loads(
            subprocess.run(["jq", ".heads[0].weights"], input=p.stdout, capture_output=True, check=True).stdout
        )
    else:
        weights = json.loads(p.stdout)["heads"][0]["weights"]
    assert np.array(weights).shape == (3, 4)
    assert_rows_sum_to_one(weights, U64)  # attn compute's float64 weights


BAD_JSON = [
    ('{"q": [[1, 0], [0, 1]', "Error: stdin is not valid JSON: Expecting ',' delimiter at line 1"),
    ("", "Error: stdin is empty"),
    ("[[1, 2]]", "Error: stdin must hold a JSON object"),
    ('{"q": [[1, 0], [0]]}', "Error: q is ragged: q[1] has 1 entry but q[0] has 2"),
    ('{"q": [[1, 0]], "k": [[1, 0], [1, 2, 3]]}', "Error: k is ragged: k[1] has 3 entries but k[0] has 2"),
    ('{"q": [[1, "2"]]}', 'Error: q[0][1] is a string ("2"), expected a number'),
    ('{"q": [[1, true]]}', "Error: q[0][1] is a boolean, expected a number"),
    ('{"q": [[1, null]]}', "Error: q[0][1] is null, expected a number"),
    ('{"q": [[1, 0]], "v": [[NaN]]}', "Error: v[0][0] is NaN: values must be finite"),
    ('{"q": [[-Infinity, 0]]}', "Error: q[0][0] is Infinity (or too large for float64): values must be finite"),
    ('{"q": [[1e999, 0]]}', "Error: q[0][0] is Infinity (or too large for float64)"),
    ('{"q": [[1' + "0" * 400 + "]]}", "Error: q[0][0] is too large for float64"),
    ('{"q": []}', "Error: q is empty: give at least one row"),
    ('{"q": [[]]}', "Error: q[0] is empty"),
    ('{"q": [1, 2]}', "Error: q[0] must be a row (a list of numbers), got a number; one vector is written [[1, 2, 3]]"),
    ('{"q": {"a": 1}}', "Error: q must be a matrix (a list of rows of numbers), got an object"),
    ('{"k": [[1]]}', 'Error: stdin has no "q"'),
    ('{"Q": [[1]]}', "Error: unknown field 'Q' in stdin: expected q, k, v, params"),
    ('{"q": [[1]], "q": [[2]]}', "Error: stdin gives 'q' twice"),
    (
        '{"q": [[1, 0]], "k": [[1, 0, 0]]}',
        "Error: variant scaled needs q and k of equal width: q is [1, 2], k is [1, 3]",
    ),
    (
        '{"q": [[1, 0]], "k": [[1, 0], [0, 1]], "v": [[1, 1]]}',
        "Error: k and v must have the same number of rows (one value per key): k is [2, 2], v is [1, 2]",
    ),
    ('{"q": [[1, 0]], "params": {"W": [[1]]}}', "Error: variant scaled has no parameters, but params gives W"),
    ('{"q": [[1e200, 0]]}', "Error: the scaled scores overflow float64 (inputs up to 1e+200); rescale the inputs"),
]


@pytest.mark.parametrize("doc, message", BAD_JSON)
def test_bad_json_is_one_line_naming_the_field(doc, message):
    r = attn(input=doc)
    assert refused(r).startswith(message) and r.stdout == ""


BAD_PARAMS = [
    ("multiplicative", {"W": [[1]]}, "Error: params.W must be [d_q, d_k] = [2, 2] (d_q = 2, d_k = 2), got [1, 1]"),
    ("multiplicative", {"W": [1, 2]}, "Error: params.W[0] must be a row (a list of numbers), got a number"),
    ("multiplicative", {"V": [[1]]}, "Error: params.V is not a parameter of multiplicative: it takes W"),
    ("additive", {"W1": [[1, 0]]}, "Error: params for additive must give W1, W2, b, v; missing W2, b, v"),
    (
        "additive",
        {"W1": [[1, 0]], "W2": [[0, 1]], "b": [0, 0], "v": [1]},
        "Error: params.b must be [d_a] = [1] (d_q = 2, d_k = 2, d_a = 1), got [2]",
    ),
    ("gated", {"W_g": [1, 2, 3]}, "Error: params.W_g must be [d_q + d_k] = [4] (d_q = 2, d_k = 2), got [3]"),
    ("gated", {"W_g": [1, 2, 3, "x"]}, 'Error: params.W_g[3] is a string ("x"), expected a number'),
    ("gated", [1], "Error: params must be an object {name: array}, got a list"),
]


@pytest.mark.parametrize("variant, params, message", BAD_PARAMS)
def test_bad_params_name_the_parameter_and_its_shape(variant, params, message):
    r = attn("-v", variant, input=json.dumps({"q": [[1, 0]], "params": params}))
    assert refused(r).startswith(message)


def _npy_cases(tmp):
    np.save(tmp / "ok.npy", np.ones((2, 2)))
    np.save(tmp / "vec.npy", np.ones(3))
    np.save(tmp / "cube.npy", np.ones((2, 2, 2)))
    np.save(tmp / "text.npy", np.array([["a", "b"]]))
    np.save(tmp / "bool.npy", np.ones((2, 2), dtype=bool))
    np.save(tmp / "empty.npy", np.ones((0, 2)))
    np.save(tmp / "nan.npy", np.array([[1.0, np.nan]]))
    np.save(tmp / "objects.npy", np.array([[{"a": 1}]], dtype=object), allow_pickle=True)
    np.savez(tmp / "both.npz", q=np.ones((2, 2)))
    (tmp / "text.json").write_text('{"q": [[1]]}')
    np.save(tmp / "long.npy", np.ones((3, 2)))
    return [
        (["--q", "missing.npy"], 1, "Error: no such file: missing.npy (--q)"),
        (["--q", "vec.npy"], 1, "Error: --q vec.npy has shape [3]: expected a 2-D matrix [rows, width]"),
        (["--q", "ok.npy", "--k", "cube.npy"], 1, "Error: --k cube.npy has shape [2, 2, 2]: expected a 2-D matrix"),
        (["--q", "text.npy"], 1, "Error: --q text.npy has dtype <U1, expected numbers (int or float)"),
        (["--q", "bool.npy"], 1, "Error: --q bool.npy has dtype bool, expected numbers"),
        (["--q", "empty.npy"], 1, "Error: --q empty.npy is empty: shape [0, 2]"),
        (["--q", "nan.npy"], 1, "Error: --q nan.npy has NaN at [0, 1]: values must be finite"),
        (["--q", "objects.npy"], 1, "Error: --q objects.npy holds Python objects, which would need pickle to load"),
        (["--q", "both.npz"], 1, "Error: --q both.npz is a .npz archive"),
        (["--q", "text.json"], 1, "Error: --q text.json is not a .npy file"),
        (
            ["--q", "ok.npy", "--v", "long.npy"],
            1,
            "Error: k and v must have the same number of rows (one value per key): k is [2, 2], v is [3, 2]",
        ),
        (["--input", "missing.json"], 1, "Error: no such file: missing.json (--input)"),
        (["--k", "ok.npy"], 2, "Error: --k and --v need --q"),
        (["--q", "ok.npy", "--input", "text.json"], 2, "Error: give either --input JSON or --q/--k/--v"),
    ]


def test_bad_npy_and_files_are_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args, code, message in _npy_cases(tmp_path):
        r = attn(*args)
        assert refused(r, code=code).startswith(message), args


def test_no_traceback_and_no_warning_in_a_real_process():
    p = subprocess.run(
        [sys.executable, "-m", "attncli", "compute", "-v", "dot"], input=b'{"q": [[1e300, 1e300]]}', capture_output=True
    )
    assert p.returncode == 1
    assert p.stderr == b"Error: the dot scores overflow float64 (inputs up to 1e+300); rescale the inputs\n"


def test_a_tiny_temperature_is_named_when_the_scores_overflow():
    r = attn("--temperature", "1e-310", input='{"q": [[1, 0]]}')
    assert r.exit_code == 1
    assert r.stderr == (
        "Error: the scaled scores overflow float64 (inputs up to 1, temperature 1e-310); "
        "rescale the inputs or raise --temperature\n"
    )


def test_large_json_is_parsed_in_bulk():
    rows = [[float(i + j) for j in range(64)] for i in range(300)]
    g = parse_json(json.dumps({"q": rows, "v": [[1.0]] * 300}), "t")
    assert g.q.shape == (300, 64) and g.q[299, 63] == 362.0 and g.v.shape == (300, 1)


def _forged(path, shape, data: bytes = b"\0" * 64) -> str:
    """A .npy file whose header claims `shape` (float64) over `data`."""
    import struct

    header = f"{{'descr': '<f8', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)
    return str(path)


def test_a_forged_npy_header_is_refused_before_anything_is_allocated(tmp_path, monkeypatch):
    one_d = _forged(tmp_path / "a.npy", (10**12,))
    three_d = _forged(tmp_path / "b.npy", (10**4, 10**4, 10**4))
    two_d = _forged(tmp_path / "c.npy", (1000, 10**9))
    r = attn("--q", one_d)
    assert (
        r.exit_code == 1
        and r.stderr == f"Error: --q {one_d} has shape [1000000000000]: expected a 2-D matrix [rows, width]\n"
    )
    assert "has shape [10000, 10000, 10000]: expected a 2-D matrix" in attn("--q", three_d).stderr
    monkeypatch.setenv("ATTN_MAX_MEMORY", "none")
    r = attn("--q", two_d, "--no-weights", "--dtype", "float32")
    assert r.exit_code == 1
    assert "declares shape [1000, 1000000000] of float64 (8,000,000,000,000 bytes of data) but holds 64" in r.stderr


def test_an_integer_of_thousands_of_digits_is_a_number_too_large():
    r = attn(input='{"q": [[' + "9" * 5000 + ", 1]]}")
    assert r.exit_code == 1 and r.stderr == "Error: q[0][0] is too large for float64\n"


def test_a_json_is_priced_before_it_is_parsed(monkeypatch):
    monkeypatch.setenv("ATTN_MAX_MEMORY", "1M")
    doc = '{"q": [' + ",".join(["[1, 2, 3, 4]"] * 10_000) + "]}"
    r = attn("--no-weights", input=doc)
    assert r.exit_code == 1
    assert r.stderr.startswith(
        "Error: stdin holds up to 40,000 numbers, about 1.8 MiB once parsed, more than the 1 MiB"
    )


def test_too_many_rows_are_refused_whatever_the_path():
    r = attn("--no-weights", input='{"q": [' + ",".join(["[1]"] * 70_000) + "]}")
    assert r.exit_code == 1
    assert r.stderr == "Error: stdin has 70,000 rows of Q, more than 65,536: the work grows as rows of Q × rows of K\n"
