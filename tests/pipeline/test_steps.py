"""attn steps: every stage is there, each number follows from the one before, the JSON is strict and exact."""

import doctest
import io
import json
import math

import numpy as np
import pytest
from rich.console import Console

from attncli.core.attention import softmax
from attncli.core.variants import VARIANTS, Cell
from attncli.io.steps import write_json, write_npz
from attncli.pipeline import steps as steps_module
from attncli.pipeline.config import RunConfig
from attncli.pipeline.embed import embed, sinusoidal
from attncli.pipeline.run import run
from attncli.pipeline.steps import steps
from attncli.render import compare as render_compare
from attncli.render import steps as render_steps
from attncli.render.matrix import Matrix
from attncli.render.steps import CHECKS, Words, show_steps
from tests.tolerance import U64, assert_within, gamma, matmul_bound, softmax_bound


def _plain(renderable, width=100) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def _strict(data: bytes) -> dict:
    def no_constants(c):
        raise ValueError(f"non-strict JSON constant {c}")

    return json.loads(data, parse_constant=no_constants)


def test_doctests():
    assert doctest.testmod(steps_module).failed == 0
    assert doctest.testmod(render_steps).failed == 0
    assert doctest.testmod(render_compare).failed == 0


def test_stages_in_the_order_of_the_pipeline():
    r = run("time flies like an arrow", RunConfig(positional="sinusoidal", mask=("causal",), heads=2), trace=True)
    assert [s.name for s in steps(r)] == [
        "e",
        "pe",
        "x",
        "q",
        "k",
        "v",
        "trace:qk",
        "scores",
        "masked_scores",
        "weights",
        "head_outputs",
        "concat",
        "output",
    ]
    assert [s.name for s in steps(run("a b", trace=True))] == [
        "x",
        "q",
        "k",
        "v",
        "trace:qk",
        "scores",
        "weights",
        "head_outputs",
        "output",
    ]


def test_each_stage_follows_from_the_one_before():
    r = run("time flies like an arrow", RunConfig(positional="sinusoidal", mask=("causal",), heads=2), trace=True)
    s = {step.name: step.array for step in steps(r)}
    assert np.array_equal(s["e"], embed(r.tokens.strings, 16, 0))
    # the step PE is X - E of X = E + PE: two float64 roundings, each within u of |X| or |PE|
    pe_bound = gamma(2, U64) * (np.abs(s["x"]) + np.abs(s["pe"]))
    assert_within(s["pe"], sinusoidal(5, 16), pe_bound)
    assert_within(s["x"], s["e"] + s["pe"], pe_bound)
    p = r.projections
    # head 1 is the second block of columns; two products of 16 terms in any order: twice γ₁₆ |x| |W_Q|
    assert_within(s["q"][1], (s["x"] @ p.w_q)[:, 8:], 2 * matmul_bound(s["x"], p.w_q, U64)[:, 8:])
    assert_within(s["scores"], s["trace:qk"] / math.sqrt(8), 2 * gamma(2, U64) * np.abs(s["scores"]))  # √8, ÷
    assert np.isneginf(s["masked_scores"][:, 0, 1:]).all() and np.isfinite(s["masked_scores"][:, 4]).all()
    assert_within(s["weights"], softmax(s["scores"], r.masked), 2 * softmax_bound(s["weights"], s["scores"], U64))
    assert_within(s["head_outputs"], s["weights"] @ s["v"], 2 * matmul_bound(s["weights"], s["v"], U64))
    assert np.array_equal(s["concat"][:, 8:], s["head_outputs"][1])  # a reshape: the same floats
    assert_within(s["output"], s["concat"] @ p.w_o, 2 * matmul_bound(s["concat"], p.w_o, U64))


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_shows_its_own_terms(variant):
    r = run("time flies", RunConfig(variant=variant), context="like an arrow", trace=True)
    names = [s.name for s in steps(r)]
    assert names[:5] == ["x", "x_context", "q", "k", "v"] and names[-4:] == [
        "scores",
        "weights",
        "head_outputs",
        "output",
    ]
    expected = {
        "dot": [],
        "scaled": ["trace:qk"],
        "cosine": ["trace:qk", "trace:q_norm", "trace:k_norm"],
        "additive": ["trace:W1q + b", "trace:W2k", "trace:tanh(W1q + W2k + b)"],
        "multiplicative": ["trace:qW"],
        "gated": ["trace:qk", "trace:gate"],
        "linformer": ["trace:group", "trace:k_bar"],
        "performer": ["trace:Wq' - |q'|^2/2", "trace:Wk' - |k'|^2/2"],
    }
    if variant in expected:
        assert names[5:-4] == expected[variant]
    for step in steps(r):
        assert len(step.axes) == step.array.ndim
        for axis, size in zip(step.axes, step.shape):
            assert {"query": 2, "key": 3, "head": 1}.get(axis, size) == size
    plain = _plain(show_steps(r, width=120))
    assert "check: S[" in plain or variant == "dot"


@pytest.mark.parametrize("variant", [name for name, v in VARIANTS.items() if v.check is not None])
def test_every_worked_check_is_computed_in_core_and_worded_in_render(variant):
    r = run("time flies", RunConfig(variant=variant, temperature=0.5), trace=True)
    cell = Cell(r.q[0, 1], r.k[0, 0], float(r.scores[0, 1, 0]), r.config.d_k or 0, r.trace, r.params, 1)
    check = VARIANTS[variant].check
    assert check is not None
    worked = check(cell)
    assert worked.form in CHECKS and worked.values["s"] == r.scores[0, 1, 0]
    assert worked.values.get("qk", cell.qk) == cell.qk == pytest.approx(float(np.dot(r.q[0, 1], r.k[0, 0])))
    words = Words("[flies, time]", "flies", "time", " / T(0.5)", str)
    assert CHECKS[worked.form](worked, words).endswith(" = " + str(worked.values["s"]))


def test_json_is_strict_exact_and_complete():
    r = run("time flies like", RunConfig(mask=("causal",), heads=2, variant="additive"), trace=True)
    buf = io.BytesIO()
    write_json(r, buf)
    doc = _strict(buf.getvalue())
    assert doc["schema"] == "attncli.steps/1"
    assert doc["tokens"][1] == {"token": "flies", "text": "flies", "id": 1, "start": 5, "end": 10}
    by_name = {s["name"]: s for s in doc["steps"]}
    for step in steps(r):
        got = by_name[step.name]
        assert got["shape"] == list(step.shape) and got["axes"] == list(step.axes)
        if step.name != "masked_scores":
            assert np.array_equal(np.array(got["array"]), step.array)  # exact: repr round-trips
    masked = by_name["masked_scores"]["array"][0]
    assert masked[0] == [r.scores[0, 0, 0], None, None]  # -inf is null
    assert set(doc["params"]) == {"W_Q", "W_K", "W_V", "W_O", "W1", "W2", "b", "v"}
    assert np.array_equal(np.array(doc["params"]["W_O"]), r.projections.w_o)
    line = io.BytesIO()
    write_json(r, line, lines=True)
    assert line.getvalue().count(b"\n") == 1 and _strict(line.getvalue()) == doc


def test_npz_holds_every_step():
    r = run("time flies", RunConfig(variant="gated"), trace=True)
    buf = io.BytesIO()
    write_npz(r, buf)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as z:
        assert {"x", "q", "trace_gate", "weights", "output", "W_Q", "W_g", "tokens"} <= set(z.files)
        assert np.array_equal(z["weights"], r.weights)


def test_grid_elides_rows_and_columns_with_visible_markers():
    a = np.arange(40 * 30, dtype=float).reshape(40, 30)
    plain = _plain(Matrix(a, [f"r{i}" for i in range(40)], None, "big", 2, max_rows=10), width=80)
    lines = plain.splitlines()
    assert "…" in lines[1] and any(line.strip().startswith("⋮") for line in lines)
    assert "… 21 dims (5–25) hidden: --width 243 or -f json" in plain and "⋮ 31 queries (5–35) hidden" in plain
    assert "r0 " in plain and "r39" in plain and "r20 " not in plain
    assert max(len(line) for line in lines) <= 80


def test_weights_have_a_row_sum_and_masked_scores_show_minus_infinity():
    plain = _plain(show_steps(run("time flies like", RunConfig(mask=("causal",)), trace=True)))
    assert "Σ" in plain and plain.count("1.00") >= 3
    assert "−∞" in plain and "S' = S with −∞ where masked (causal)" in plain
    for stage in ("tokenize", "embed", "project", "score", "mask", "softmax", "mix", "merge"):
        assert f"· {stage}" in plain


def test_the_2x2_example_by_hand():
    """Two tokens, d = 2, Q = K = V = X: every number of `attn steps` follows from X with pen and paper."""
    r = run("time flies", RunConfig(dim=2, projection="identity"), trace=True)
    (x00, x01), (x10, x11) = r.x.tolist()
    s00, s01 = (x00 * x00 + x01 * x01) / math.sqrt(2), (x00 * x10 + x01 * x11) / math.sqrt(2)
    a00 = math.exp(s00) / (math.exp(s00) + math.exp(s01))
    assert r.scores[0, 0].tolist() == pytest.approx([s00, s01])
    assert r.weights[0, 0, 0] == pytest.approx(a00)
    assert r.output[0, 0] == pytest.approx(a00 * x00 + (1 - a00) * x10)


def test_the_docs_2x2_numbers_are_the_programs():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text(encoding="utf-8")
    r = run("time flies", RunConfig(dim=2, projection="identity"))
    for value in [*r.x.ravel(), *r.scores[0].ravel(), *r.weights[0].ravel(), *r.output.ravel()]:
        assert f"{abs(value):.4f}" in page, value
