"""Long inputs and the approximations through the CLI: -v linformer / performer (with --rank, --features),
their error rows in attn compare, --no-weights and --dtype float32. No test depends on wall-clock time.

The registry-wide properties and the slow references of linformer and performer are in test_variants.py;
attncli.kernels and attncli.approx have their own tests (test_kernels.py, test_approx.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from attncli import approx
from attncli.attention import VARIANTS, attend
from attncli.cli import app
from attncli.pipeline import RunConfig, run

runner = CliRunner()
TEXT = "time flies like an arrow and fruit flies like a banana"
APPROX = [name for name, v in VARIANTS.items() if v.approximates]


def attn(*args, input=None):
    return runner.invoke(app, list(args), input=input)


def qkv_json(m=7, n=9, d=4, dv=3, seed=0):
    rng = np.random.default_rng(seed)
    return json.dumps({"q": rng.standard_normal((m, d)).tolist(), "k": rng.standard_normal((n, d)).tolist(),
                       "v": rng.standard_normal((n, dv)).tolist()})


# ---- linformer and performer as variants ---------------------------------------------------------------


def test_the_approximations_are_registered_with_their_options():
    assert APPROX == ["linformer", "performer"]
    assert VARIANTS["linformer"].options == {"rank": 8} and VARIANTS["performer"].options == {"features": 64}
    doc = json.loads(attn("variants", "-f", "json").stdout)
    rows = {row["name"]: row for row in doc["rows"]}
    assert rows["linformer"]["options"] == {"rank": 8} and rows["performer"]["approximates"] == "scaled"
    assert "options" not in rows["scaled"]  # the exact variants' records are as they were


@pytest.mark.parametrize("name", APPROX)
def test_their_weights_are_what_attncli_approx_implies(name):
    """The registered variant (scores, then softmax) against approx.linformer/performer with the same generator."""
    r = run(TEXT, RunConfig(variant=name, heads=2, rank=3, features=16, seed=4))
    q, k, v = r.q, r.k, r.v
    gen = np.random.default_rng([4, 2])  # the run's generator of variant parameters
    if name == "linformer":
        w, out = approx.linformer(q, k, v, 1 / np.sqrt(q.shape[-1]), 3, gen)
    else:
        w, out = approx.performer(q, k, v, 1 / np.sqrt(q.shape[-1]), 16, gen)
    np.testing.assert_allclose(r.weights, w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r.head_outputs, out, rtol=0, atol=1e-12)


def test_linformer_at_rank_n_is_scaled_and_its_groups_share_a_score():
    exact = run(TEXT, RunConfig(heads=2))
    full = run(TEXT, RunConfig(variant="linformer", heads=2, rank=11))  # 11 tokens: every key its own group
    np.testing.assert_allclose(full.weights, exact.weights, rtol=0, atol=1e-12)
    low = run(TEXT, RunConfig(variant="linformer", rank=2))
    group = low.params["group"][0]
    assert sorted(np.bincount(group).tolist()) == [5, 6]  # 11 keys in 2 groups of nearly equal size
    for g in (0, 1):  # keys of one group have one score in every row
        assert np.ptp(low.scores[0][:, group == g], axis=1).max() == 0


def test_performer_approaches_scaled_as_the_features_grow():
    # Its error grows fast with |q||k| (the estimator's variance goes like e^(|q' + k'|²)): small inputs here.
    rng = np.random.default_rng(5)
    q, k, v = 0.4 * rng.standard_normal((3, 1, 12, 8))
    exact = attend(q, k, v, VARIANTS["scaled"]).weights
    variant = VARIANTS["performer"]
    kl = [approx.approx_error(exact, attend(q, k, v, variant, variant.make_params(
        np.random.default_rng(0), 1, 8, 8, 8, features=f)).weights)["mean_kl"] for f in (4, 256, 16384)]
    assert kl[2] < kl[1] < kl[0] and kl[2] < 1e-4


def test_performer_scores_stay_finite_where_the_features_underflow():
    """Huge inputs: every φ(q)·φ(k) underflows, and the log-sum-exp is redone term by term."""
    rng = np.random.default_rng(2)
    q, k, v = 1e3 * rng.standard_normal((3, 1, 4, 4))
    variant = VARIANTS["performer"]
    params = variant.make_params(np.random.default_rng(0), 1, 4, 4, 4, features=8)
    r = attend(q, k, v, variant, params)
    assert np.isfinite(r.scores).all() and np.allclose(r.weights.sum(-1), 1)
    x = lambda y: y / 4 ** 0.25  # noqa: E731
    w = params["W"][0]
    a = x(q[0]) @ w.T - (x(q[0]) ** 2).sum(-1, keepdims=True) / 2  # [m, F]
    b = x(k[0]) @ w.T - (x(k[0]) ** 2).sum(-1, keepdims=True) / 2  # [n, F]
    t = a[:, None, :] + b[None, :, :]  # [m, n, F]
    top = t.max(-1)
    want = top + np.log(np.exp(t - top[..., None]).sum(-1)) - np.log(8)
    np.testing.assert_allclose(r.scores[0], want, rtol=1e-13)


@pytest.mark.parametrize("name", APPROX)
def test_show_and_compute_run_the_approximations(name):
    r = attn("show", TEXT, "-v", name, "--rank" if name == "linformer" else "--features", "4", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    option = "rank" if name == "linformer" else "features"
    assert doc["config"][option] == 4 and doc["config"]["variant"] == name
    assert np.allclose(np.array(doc["heads"][0]["weights"]).sum(-1), 1)
    table = attn("show", TEXT, "-v", name, "--color", "never")
    assert table.exit_code == 0 and "an approximation of scaled" in " ".join(table.stdout.split())
    c = attn("compute", "-v", name, "-f", "json", input=qkv_json())
    assert c.exit_code == 0, c.output
    assert json.loads(c.stdout)["config"][option] == VARIANTS[name].options[option]


def test_options_of_a_variant_that_does_not_take_them_are_an_error():
    r = attn("show", TEXT, "--rank", "4")
    assert r.exit_code == 2 and "--rank is an option of -v linformer" in r.stderr
    r = attn("compute", "-v", "linformer", "--features", "4", input=qkv_json())
    assert r.exit_code == 2 and "--features is an option of -v performer" in r.stderr
    r = attn("show", TEXT, "-v", "linformer", "--rank", "0")
    assert r.exit_code == 2 and "--rank must be between 1" in r.stderr
    r = attn("compute", "-v", "performer", "-f", "json",
             input=json.dumps({"q": [[1.0, 0.0]], "params": {"W": [[1.0, 0.0]]}}))
    assert r.exit_code == 1 and "has no parameters" in r.stderr  # its features are drawn, not given


def test_steps_shows_the_terms_of_each_approximation():
    r = attn("steps", "time flies like", "-v", "linformer", "--rank", "2", "-f", "json")
    doc = json.loads(r.stdout)
    by_name = {s["name"]: s for s in doc["steps"]}
    group = np.array(by_name["trace:group"]["array"][0]).astype(int)
    k, k_bar = np.array(by_name["k"]["array"][0]), np.array(by_name["trace:k_bar"]["array"][0])
    for j, g in enumerate(group):
        np.testing.assert_allclose(k_bar[j], k[group == g].mean(0), rtol=0, atol=1e-15)
    table = attn("steps", "time flies like", "-v", "performer", "--features", "4", "--color", "never")
    assert table.exit_code == 0 and "check: S['time', 'time'] = ln((1/F)" in table.stdout


# ---- attn compare: the error of an approximation against exact attention -------------------------------


def test_compare_reports_each_approximations_error_against_scaled():
    r = attn("compare", TEXT, "--tokenizers", "word", "--variants", "scaled,linformer,performer", "--rank", "3",
             "--features", "16", "--mask", "causal", "-f", "json")
    assert r.exit_code == 0, r.output
    rows = {row["variant"]: row for row in json.loads(r.stdout)["rows"]}
    assert rows["scaled"]["error_vs"] is None and rows["scaled"]["max_abs_error"] is None
    exact = run(TEXT, RunConfig(mask=("causal",)))
    for name in APPROX:
        got = run(TEXT, RunConfig(variant=name, mask=("causal",), rank=3, features=16))
        want = approx.approx_error(exact.weights, got.weights)  # the same Q, K, V: same tokens, seed, projections
        assert rows[name]["error_vs"] == "scaled"
        assert rows[name]["max_abs_error"] == want["max_abs_error"] > 0.01
        assert rows[name]["mean_kl"] == pytest.approx(want["mean_kl"], rel=1e-12) and want["mean_kl"] > 0
    assert rows["linformer"]["score_madds"] < rows["scaled"]["score_madds"]  # what its linear path costs


def test_compare_error_rows_in_the_table_and_csv_and_only_with_an_approximation():
    table = attn("compare", TEXT, "--tokenizers", "word,char", "--variants", "scaled,performer", "--color", "never")
    assert table.exit_code == 0, table.output
    plain = " ".join(table.stdout.split())
    assert "max |A − A_scaled|" in plain and "mean KL (nats)" in plain and "KL(A_scaled ‖ A)" in plain
    csv_out = attn("compare", TEXT, "--tokenizers", "word", "--variants", "scaled,linformer", "-f", "csv").stdout
    assert "error_vs,max_abs_error,mean_kl" in csv_out.splitlines()[0]
    plain = attn("compare", TEXT, "--variants", "scaled,dot", "-f", "json")
    assert all("max_abs_error" not in row for row in json.loads(plain.stdout)["rows"])
    assert "A_scaled" not in attn("compare", TEXT, "--color", "never").stdout


def test_linformer_at_full_rank_has_no_error_in_compare():
    r = attn("compare", "time flies like an arrow", "--tokenizers", "word", "--variants", "linformer", "-f", "json")
    row = json.loads(r.stdout)["rows"][0]  # 5 tokens, default rank 8: every key its own group
    assert row["max_abs_error"] < 1e-15 and abs(row["mean_kl"]) < 1e-14
