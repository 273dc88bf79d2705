"""Long inputs and the approximations through the CLI: -v linformer / performer (with --rank, --features),
their error rows in attn compare, --no-weights and --dtype float32. No test depends on wall-clock time.

The registry-wide properties and the slow references of linformer and performer are in test_variants.py;
attncli.core.kernels and attncli.core.approx have their own tests (test_kernels.py, test_approx.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncli.core import approx
from attncli.core.attention import attend
from attncli.core.variants import VARIANTS
from attncli.pipeline.config import RunConfig
from attncli.pipeline.run import run
from tests.conftest import attn, refused
from tests.tolerance import U64, assert_rows_sum_to_one, assert_within, softmax_sum_bound

TEXT = "time flies like an arrow and fruit flies like a banana"
APPROX = [name for name, v in VARIANTS.items() if v.approximates]


def qkv_json(m=7, n=9, d=4, dv=3, seed=0):
    rng = np.random.default_rng(seed)
    return json.dumps(
        {
            "q": rng.standard_normal((m, d)).tolist(),
            "k": rng.standard_normal((n, d)).tolist(),
            "v": rng.standard_normal((n, dv)).tolist(),
        }
    )


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
    kl = [
        approx.approx_error(
            exact,
            attend(q, k, v, variant, variant.make_params(np.random.default_rng(0), 1, 8, 8, 8, features=f)).weights,
        )["mean_kl"]
        for f in (4, 256, 16384)
    ]
    assert kl[2] < kl[1] < kl[0] and kl[2] < 1e-4


def test_performer_scores_stay_finite_where_the_features_underflow():
    """Huge inputs: every φ(q)·φ(k) underflows, and the log-sum-exp is redone term by term."""
    rng = np.random.default_rng(2)
    q, k, v = 1e3 * rng.standard_normal((3, 1, 4, 4))
    variant = VARIANTS["performer"]
    params = variant.make_params(np.random.default_rng(0), 1, 4, 4, 4, features=8)
    r = attend(q, k, v, variant, params)
    assert np.isfinite(r.scores).all()
    assert_rows_sum_to_one(r.weights, U64)
    x = lambda y: y / 4**0.25  # noqa: E731
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
    assert_rows_sum_to_one(np.array(doc["heads"][0]["weights"]), U64)  # the float64 pipeline's
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
    r = attn(
        "compute", "-v", "performer", "-f", "json", input=json.dumps({"q": [[1.0, 0.0]], "params": {"W": [[1.0, 0.0]]}})
    )
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
    r = attn(
        "compare",
        TEXT,
        "--tokenizers",
        "word",
        "--variants",
        "scaled,linformer,performer",
        "--rank",
        "3",
        "--features",
        "16",
        "--mask",
        "causal",
        "-f",
        "json",
    )
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
    table = attn(
        "compare",
        TEXT,
        "--tokenizers",
        "word,char",
        "--variants",
        "scaled,performer",
        "--color",
        "never",
        "--width",
        "120",
    )
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


# ---- --no-weights: the outputs without an n x n matrix -------------------------------------------------

# Every variant with an outputs-only path, with the masks it takes there.
OUTPUTS_ONLY = [
    ("scaled", ""),
    ("scaled", "causal"),
    ("dot", "causal"),
    ("cosine", ""),
    ("multiplicative", "causal"),
    ("linformer", ""),
    ("performer", ""),
]


def show_json(*args, text=TEXT):
    r = attn("show", text, "-f", "json", "--heads", "2", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def options_for(variant):
    return [] if variant not in APPROX else ["--rank" if variant == "linformer" else "--features", "5"]


@pytest.mark.parametrize("variant, mask", OUTPUTS_ONLY)
def test_no_weights_outputs_equal_the_weights_path(variant, mask):
    args = ["-v", variant, *options_for(variant), *(["--mask", mask] if mask else [])]
    full = json.loads(attn("show", TEXT, "--heads", "2", "-f", "json", *args).stdout)
    lean = json.loads(attn("show", TEXT, "--heads", "2", "-f", "json", "--no-weights", *args).stdout)
    assert lean["config"]["weights"] is False and "weights" not in full["config"]
    np.testing.assert_allclose(lean["output"], full["output"], rtol=0, atol=1e-12)
    for h in range(2):
        np.testing.assert_allclose(lean["heads"][h]["output"], full["heads"][h]["output"], rtol=0, atol=1e-12)
    lean32 = json.loads(
        attn("show", TEXT, "--heads", "2", "-f", "json", "--no-weights", "--dtype", "float32", *args).stdout
    )
    np.testing.assert_allclose(lean32["output"], full["output"], rtol=0, atol=1e-5)
    c_full = json.loads(attn("compute", "-f", "json", *args, input=qkv_json()).stdout)
    c_lean = attn("compute", "-f", "json", "--no-weights", *args, input=qkv_json())
    assert c_lean.exit_code == 0, c_lean.output
    np.testing.assert_allclose(json.loads(c_lean.stdout)["output"], c_full["output"], rtol=0, atol=1e-12)


def arrays_in(doc):
    """Every list of lists of numbers in a JSON document, as a shape."""
    if isinstance(doc, dict):
        for value in doc.values():
            yield from arrays_in(value)
    elif isinstance(doc, list) and doc and isinstance(doc[0], list):
        yield np.array(doc).shape
    elif isinstance(doc, list):
        for value in doc:
            yield from arrays_in(value)


def test_no_weights_json_is_strict_and_holds_no_n_by_n_array():
    text = " ".join(f"w{i}" for i in range(30))  # 30 tokens, d_model 16
    full = show_json("--mask", "causal", text=text)
    assert (30, 30) in set(arrays_in(full))
    r = attn("show", text, "-f", "json", "--heads", "2", "--mask", "causal", "--no-weights")
    doc = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} in strict JSON"))
    assert (30, 30) not in set(arrays_in(doc)) and set(arrays_in(doc)) == {(30, 8), (30, 16)}
    for head in doc["heads"]:  # the keys of the schema stay, with null values
        assert list(head) == ["head", "scores", "masked", "weights", "output"]
        assert head["scores"] is head["masked"] is head["weights"] is None
    assert list(doc) == list(full) and doc["config"]["mask"] == ["causal"]


def test_no_weights_formats_lines_and_npz(tmp_path):
    lines = attn("show", "-", "--lines", "--no-weights", input="time flies\n\nfruit flies like a banana\n")
    docs = [json.loads(line) for line in lines.stdout.splitlines()]
    assert [d["line"] for d in docs] == [1, 3] and all(d["heads"][0]["weights"] is None for d in docs)
    path = tmp_path / "out.npz"
    assert attn("show", TEXT, "--no-weights", "-o", str(path)).exit_code == 0
    with np.load(path) as z:
        assert "weights" not in z and "scores" not in z and z["output"].shape == (11, 16)
    for fmt in ("csv", "npy"):
        r = attn("show", TEXT, "--no-weights", "-f", fmt, "-o", str(tmp_path / f"out.{fmt}"))
        assert r.exit_code == 2 and "--no-weights computed none" in r.stderr
        assert not (tmp_path / f"out.{fmt}").exists()  # nothing half-written


@pytest.mark.parametrize(
    "args, message",
    [
        (["-v", "additive"], "--no-weights works with -v scaled, dot, cosine, multiplicative, linformer, performer"),
        (["-v", "gated"], "drop --no-weights"),
        (["--mask", "window:2"], "takes --mask causal only, not window:2"),
        (["--mask", "causal,topk:2"], "not topk:2"),
        (["-v", "linformer", "--mask", "causal"], "-v linformer takes no --mask"),
        (["-v", "performer", "--temperature", "2"], "needs --temperature 1"),
        (["--stats"], "--stats describes the weights"),
    ],
)
def test_what_no_weights_cannot_do_is_a_usage_error(args, message):
    r = attn("show", TEXT, "--no-weights", *args)
    refused(r, message, code=2)
    r = attn("compute", "--no-weights", *[a for a in args if a != "--stats"], input="not even read")
    if "--stats" not in args:  # compute checks the options before it reads its input
        assert r.exit_code == 2 and message in r.stderr


def test_no_weights_never_allocates_an_n_by_n_matrix():
    import tracemalloc

    from attncli.pipeline.given import compute
    from attncli.pipeline.matrices import Given

    n, d = 4096, 16
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, n, d))
    given = Given(q, k, v, True, "test")
    for variant, options in (("scaled", {}), ("linformer", {"rank": 64}), ("performer", {"features": 64})):
        tracemalloc.start()
        r = compute(given, variant, "causal" if variant == "scaled" else None, weights=False, **options)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert r.weights is None and r.output.shape == (n, d)
        assert peak < n * n * 8 / 8, f"{variant}: {peak / 2**20:.1f} MiB (the weights would be 128 MiB)"


# ---- --dtype float32 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_float32_is_float32_end_to_end_and_close_to_float64(variant):
    config = RunConfig(variant=variant, heads=2, mask=("causal",), rank=3, features=32)
    exact = run(TEXT, config)
    r = run(TEXT, RunConfig(**{**config.__dict__, "dtype": "float32"}))
    for name in ("x", "q", "k", "v", "scores", "weights", "head_outputs", "output"):
        assert getattr(r, name).dtype == np.float32, name
    np.testing.assert_allclose(r.weights, exact.weights, rtol=0, atol=1e-5)
    np.testing.assert_allclose(r.output, exact.output, rtol=0, atol=1e-5)
    assert (r.weights[r.masked] == 0).all()
    assert_within(r.weights.sum(-1), 1, softmax_sum_bound(r.weights.shape[-1]))


def test_float32_json_reads_back_exactly_and_float64_is_unchanged():
    doc = show_json("--dtype", "float32", "--mask", "causal")
    r = run(TEXT, RunConfig(heads=2, dtype="float32", mask=("causal",)))
    assert doc["config"]["dtype"] == "float32"
    for h in range(2):  # each float32 number is written as the float64 of the same value: exact either way
        for name, a in (("scores", r.scores), ("weights", r.weights), ("output", r.head_outputs)):
            back = np.array(doc["heads"][h][name])
            assert np.array_equal(back, a[h].astype(np.float64)) and np.array_equal(back.astype(np.float32), a[h])
    default = attn("show", TEXT, "-f", "json").stdout
    assert attn("show", TEXT, "-f", "json", "--dtype", "float64").stdout == default  # the same bytes
    assert "dtype" not in json.loads(default)["config"]


def test_compute_float32_takes_a_float32_npy_exactly_and_refuses_what_float32_cannot_hold(tmp_path):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((6, 4)).astype(np.float32)
    np.save(tmp_path / "q.npy", q)
    r = attn("compute", "--q", str(tmp_path / "q.npy"), "--dtype", "float32", "-o", str(tmp_path / "r.npz"))
    assert r.exit_code == 0, r.output
    with np.load(tmp_path / "r.npz") as z:
        assert z["q"].dtype == np.float32 and np.array_equal(z["q"][0], q) and z["weights"].dtype == np.float32
    big = attn("compute", "--dtype", "float32", input=json.dumps({"q": [[1e39, 0.0]]}))
    assert big.exit_code == 1 and "beyond float32's range" in big.stderr
    over = attn("compute", "-v", "dot", "--dtype", "float32", input=json.dumps({"q": [[1e20, 1e20]]}))
    assert over.exit_code == 1 and "overflow float32" in over.stderr and "--dtype float64" in over.stderr


def test_float32_long_text_shows_the_heatmap():
    text = "the quick brown fox jumps over the lazy dog " * 8  # 351 characters
    r = attn("show", text, "-t", "char", "--dtype", "float32", "--color", "never")
    assert r.exit_code == 0, r.output
    assert "float32: Q, K, V, scores, weights and outputs" in " ".join(r.stdout.split())
    assert "░" in r.stdout or "▓" in r.stdout or "█" in r.stdout  # the pooled heatmap, not a table


# ---- start-up: nothing new is imported by a short run ------------------------------------------------------


@pytest.mark.parametrize("args", [["--help"], ["show", "time flies like an arrow"]])
def test_short_commands_import_neither_kernels_nor_approximations(args):
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "attncli", *args],
        capture_output=True,
        text=True,
        env={"PATH": "", "NO_COLOR": "1", "PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parents[2])},
    )
    assert r.returncode == 0, r.stderr
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "attncli.cli.app" in imported
    for module in (
        "attncli.core.kernels",
        "attncli.core.approx",
        "attncli.core.efficient",
        "threadpoolctl",
    ):
        assert module not in imported, module
