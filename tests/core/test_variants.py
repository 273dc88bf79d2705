"""`attn variants`, and every registered variant proven against its formula:
a slow reference written with Python loops and `math`, compared in float64."""

import csv
import io
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from typer.testing import CliRunner

from attncli.cli.app import app
from attncli.core.attention import attend
from attncli.core.masks import parse_masks
from attncli.core.variants import VARIANTS, variant_params
from attncli.errors import DataError

runner = CliRunner()


# ---- attn variants: generated from the registry ----------------------------------------------------


def test_the_registry_imports_without_numpy():
    """`attn --help` and `attn variants` read the registry before (or without) loading NumPy."""
    code = "import attncli.core.variants, attncli.core.masks, sys; assert 'numpy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_variants_json_lists_every_registered_variant():
    r = runner.invoke(app, ["variants", "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["schema"] == "attncli.variants/1"
    assert [row["name"] for row in doc["rows"]] == list(VARIANTS)
    for row in doc["rows"]:
        v = VARIANTS[row["name"]]
        assert row["formula"] == v.formula and row["paper"] == v.paper and row["summary"] == v.summary
        assert row["parameters"] == v.param_shapes and row["notes"] == list(v.notes)
    by_name = {row["name"]: row for row in doc["rows"]}
    assert by_name["additive"]["parameters"] == {
        "W1": "[h, d_a, d_q]",
        "W2": "[h, d_a, d_k]",
        "b": "[h, d_a]",
        "v": "[h, d_a]",
    }
    assert any("neither bounded nor scale-invariant" in note for note in by_name["cosine"]["notes"])


def test_variants_table_shows_formulas_and_shapes_literally():
    r = runner.invoke(app, ["variants", "--color", "never"], env={"COLUMNS": "120"})
    assert r.exit_code == 0
    for v in VARIANTS.values():
        assert v.name in r.stdout and v.formula in r.stdout
    assert "W1 [h, d_a, d_q]" in r.stdout  # brackets are text, not Rich markup


def test_variants_jsonl_and_csv_have_one_row_per_variant():
    lines = runner.invoke(app, ["variants", "-f", "jsonl"]).stdout.splitlines()
    assert [json.loads(line)["name"] for line in lines] == list(VARIANTS)
    rows = list(csv.DictReader(io.StringIO(runner.invoke(app, ["variants", "-f", "csv"]).stdout)))
    assert [row["name"] for row in rows] == list(VARIANTS)
    assert json.loads(rows[-1]["parameters"]) == VARIANTS[rows[-1]["name"]].param_shapes


def test_variants_rejects_array_formats():
    r = runner.invoke(app, ["variants", "-f", "npy"])
    assert r.exit_code == 2 and "npy" in r.stderr


# ---- every variant against a slow reference: Python loops, plain floats, `math` -----------------------
#
# Written from the seeds' formulas, one query and one key at a time, sharing no code with attncli except
# the seeded parameters. math.fsum sums exactly, so the reference is at least as accurate as NumPy.


def dot(a, b):
    return math.fsum(x * y for x, y in zip(a, b))


def sigmoid(z):
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


def ref_cosine(q, k, p):
    """(q/‖q‖)·(k/‖k‖): normalising first, as qᵀk itself can underflow (0.5 · 5e-324 rounds to 0)."""
    nq, nk = math.hypot(*q), math.hypot(*k)  # hypot neither overflows nor underflows
    return 0.0 if nq == 0 or nk == 0 else dot([x / nq for x in q], [y / nk for y in k])


def ref_performer(q, k, p):
    """ln((1/F) Σ_f e^(a_f + b_f)), a_f = w_f·q' − ‖q'‖²/2, b_f = w_f·k' − ‖k'‖²/2, x' = x / d^¼ (FAVOR+)."""
    c = len(q) ** -0.25
    qs, ks = [x * c for x in q], [x * c for x in k]
    t = [dot(w, qs) - dot(qs, qs) / 2 + dot(w, ks) - dot(ks, ks) / 2 for w in p["W"]]
    top = max(t)
    return top + math.log(math.fsum(math.exp(x - top) for x in t)) - math.log(len(t))


def ref_linformer(q, keys, p):
    """Every key's score at once: q · (the mean of the keys in its group) / √d (Linformer, pooled)."""
    group = p["group"]
    mean = {
        g: [math.fsum(k[c] for k, gk in zip(keys, group) if gk == g) / group.count(g) for c in range(len(q))]
        for g in set(group)
    }
    return [dot(q, mean[g]) / math.sqrt(len(q)) for g in group]


ROW_REFERENCE = {  # name -> scores(q, all keys, params of one head): variants whose score of a key needs the others
    "linformer": ref_linformer,
}

REFERENCE = {  # name -> score(q, k, params of one head), each variant's formula written out
    "dot": lambda q, k, p: dot(q, k),  # qᵀk
    "scaled": lambda q, k, p: dot(q, k) / math.sqrt(len(q)),  # qᵀk / √d
    "cosine": ref_cosine,  # qᵀk / (‖q‖‖k‖)
    "additive": lambda q, k, p: dot(
        p["v"],
        [
            math.tanh(dot(w1, q) + dot(w2, k) + b)  # vᵀ tanh(W₁q + W₂k + b)
            for w1, w2, b in zip(p["W1"], p["W2"], p["b"])
        ],
    ),
    "multiplicative": lambda q, k, p: math.fsum(
        q[i] * p["W"][i][j] * k[j]  # qᵀ W k
        for i in range(len(q))
        for j in range(len(k))
    ),
    "gated": lambda q, k, p: sigmoid(dot(p["W_g"], q + k)) * dot(q, k),  # σ(W_g [q; k]) · qᵀk
    "performer": ref_performer,  # ln φ(q)ᵀφ(k)
}


def ref_masked(i, scores, causal, window, topk):
    """Which keys query i may not see: causal j > i, window |i - j| > W, then top-k among the rest
    (the K largest scores; ties go to the lower key index)."""
    n = len(scores)
    masked = [(causal and j > i) or (window is not None and abs(i - j) > window) for j in range(n)]
    if topk is not None:
        keep = sorted((j for j in range(n) if not masked[j]), key=lambda j: (-scores[j], j))[:topk]
        masked = [masked[j] or j not in keep for j in range(n)]
    return masked


def ref_attention(q, k, v, name, params, causal=False, window=None, topk=None, temperature=1.0):
    """[m][d_q], [n][d_k], [n][d_v] lists -> scores, masked, weights [m][n], outputs [m][d_v]."""
    S, M, A, O = [], [], [], []
    for i, qi in enumerate(q):
        if name in ROW_REFERENCE:
            s = [x / temperature for x in ROW_REFERENCE[name](qi, k, params)]
        else:
            s = [REFERENCE[name](qi, kj, params) / temperature for kj in k]
        masked = ref_masked(i, s, causal, window, topk)
        live = [s[j] for j in range(len(k)) if not masked[j]]
        e = [0.0 if masked[j] else math.exp(s[j] - max(live)) for j in range(len(k))]
        total = math.fsum(e)
        w = [x / total if total else 0.0 for x in e]
        S.append(s), M.append(masked), A.append(w)
        O.append([math.fsum(w[j] * v[j][c] for j in range(len(k))) for c in range(len(v[0]))])
    return S, M, A, O


def near_tie_at_k(scores, masked, topk):
    """True when the K-th and (K+1)-th largest visible scores are within rounding of each other:
    then NumPy and the exact reference may both be right and still keep different keys."""
    live = sorted((s for s, gone in zip(scores, masked) if not gone), reverse=True)
    return topk < len(live) and live[topk - 1] - live[topk] <= 1e-12 * max(1.0, abs(live[topk - 1]))


moderate = st.floats(-10, 10, allow_nan=False, allow_subnormal=True)


MASK_COMBOS = [(c, w, t) for c in (False, True) for w in (False, True) for t in (False, True)]


@st.composite
def mask_choice(draw):
    """One of the 8 combinations of causal, window:W and topk:K, each equally likely."""
    causal, with_window, with_topk = MASK_COMBOS[draw(st.integers(0, 799)) % 8]  # sampled_from favours the first
    window = draw(st.integers(0, 3)) if with_window else None
    topk = draw(st.integers(1, 4)) if with_topk else None
    parts = (
        (["causal"] if causal else [])
        + ([f"window:{window}"] if with_window else [])
        + ([f"topk:{topk}"] if with_topk else [])
    )
    return causal, window, topk, parse_masks(",".join(parts))


# The approximations' options in these tests: small enough that they are not exact at n <= 6 keys (at rank >= n
# linformer is exactly scaled), and few features so that the slow reference stays quick.
OPTIONS = {"rank": 2, "features": 16}


def params_of(variant, h, d_q, d_k, d_a, seed=0, n=5):
    """The variant's seeded parameters (and random state, for n keys)."""
    return variant_params(variant, np.random.default_rng(seed), h, d_q, d_k, d_a, n, OPTIONS)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_variant_has_a_slow_reference(name):
    assert name in REFERENCE or name in ROW_REFERENCE, (
        f"write the slow reference of {name} in REFERENCE: its formula, one pair at a time"
    )


@pytest.mark.parametrize("name", list(VARIANTS))
@given(data=st.data())
def test_variant_matches_its_formula_to_1e_12(name, data):
    variant = VARIANTS[name]
    h, m, n = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    d_q, d_v, d_a = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    d_k = d_q if variant.equal_width else data.draw(st.integers(1, 4))
    q = data.draw(arrays(float, (h, m, d_q), elements=moderate))
    k = data.draw(arrays(float, (h, n, d_k), elements=moderate))
    v = data.draw(arrays(float, (h, n, d_v), elements=moderate))
    causal, window, topk, masks = data.draw(mask_choice())
    temperature = data.draw(st.sampled_from([0.5, 1.0, 3.0]))
    params = params_of(variant, h, d_q, d_k, d_a, seed=data.draw(st.integers(0, 3)), n=n)
    r = attend(q, k, v, variant, params, masks, temperature)
    for head in range(h):
        p = {name_: value[head].tolist() for name_, value in params.items()}
        S, M, A, O = ref_attention(
            q[head].tolist(), k[head].tolist(), v[head].tolist(), name, p, causal, window, topk, temperature
        )
        np.testing.assert_allclose(r.scores[head], S, rtol=1e-12, atol=1e-12)  # after / temperature
        masked = (r.masked[head] if r.masked is not None else np.zeros((m, n), bool)).tolist()
        if (
            masked != M
            and topk is not None
            and any(near_tie_at_k(s, ref_masked(i, s, causal, window, None), topk) for i, s in enumerate(S))
        ):
            # Two scores equal up to rounding at the K-th place: exact ties go to the lower index in both,
            # but when NumPy's rounding splits a tie that math.fsum keeps (or the reverse), either key is right.
            event("top-k kept a different one of two keys whose scores are equal up to rounding")
            continue
        assert masked == M
        np.testing.assert_allclose(r.weights[head], A, rtol=0, atol=1e-12)
        np.testing.assert_allclose(r.out[head], O, rtol=0, atol=1e-12 * max(1.0, np.abs(v).max()))


# ---- properties of every registered variant under every mask combination -------------------------------

huge = st.floats(-1e30, 1e30, allow_nan=False, allow_infinity=False)  # includes 0, subnormals and ±1e30


def check_weights(r, masked, topk):
    """Rows sum to 1 (0 where every key is masked), masked cells are exactly 0, top-k keeps at most K."""
    full = masked.all(axis=-1)  # window:W with more queries than keys leaves rows with no key
    assert np.allclose(r.weights.sum(-1)[~full], 1.0, rtol=0, atol=1e-12)
    assert (r.weights[full] == 0).all()
    assert (r.weights[masked] == 0).all() and (r.weights >= 0).all() and (r.weights <= 1).all()
    if topk is not None:
        assert ((~masked).sum(-1) <= topk).all() and ((r.weights != 0).sum(-1) <= topk).all()
    return bool(full.any())


@pytest.mark.parametrize("name", list(VARIANTS))
@given(data=st.data())
def test_properties_of_every_variant_and_mask(name, data):
    variant = VARIANTS[name]
    h, m, n, d_q, d_v, d_a = data.draw(st.tuples(*(st.integers(1, b) for b in (2, 5, 5, 4, 3, 3))))
    d_k = d_q if variant.equal_width else data.draw(st.integers(1, 4))
    q = data.draw(arrays(float, (h, m, d_q), elements=huge))
    k = data.draw(arrays(float, (h, n, d_k), elements=huge))
    v = data.draw(arrays(float, (h, n, d_v), elements=huge))
    window, topk = data.draw(st.integers(0, 3)), data.draw(st.integers(1, 4))
    temperature = data.draw(st.sampled_from([0.5, 1.0, 2.0]))
    params = params_of(variant, h, d_q, d_k, d_a, n=n)
    event(f"some |entry| > 1e20: {bool(max(np.abs(q).max(), np.abs(k).max()) > 1e20)}")
    any_full = False
    for causal, with_window, with_topk in MASK_COMBOS:  # all 8 combinations on the same q, k, v
        spec = ",".join(
            (["causal"] if causal else [])
            + ([f"window:{window}"] if with_window else [])
            + ([f"topk:{topk}"] if with_topk else [])
        )
        # Finite output for finite input up to 1e30: qᵀk is then at most 4·1e60, far below float64's 1.8e308.
        r = attend(q, k, v, variant, params, parse_masks(spec), temperature)
        assert np.isfinite(r.scores).all() and np.isfinite(r.weights).all() and np.isfinite(r.out).all()
        masked = r.masked if r.masked is not None else np.zeros((h, m, n), dtype=bool)
        any_full |= check_weights(r, masked, topk if with_topk else None)
    event(f"a fully masked row: {any_full}")

    # Attention is a function of the *set* of (key, value) pairs: permuting keys and values together leaves
    # every output unchanged, and permuting the queries permutes the output rows. Tested without causal and
    # window: they compare key position j with query position i, so a permutation moves keys across the
    # mask (the mask would have to be permuted too). top-k ranks scores, not positions, so it stays, except
    # where two scores tie at the K-th place: the tie goes to the lower key index, which is positional.
    # A variant whose parameters are indexed by key position (KEY_POSITIONAL) has them permuted with the keys.
    perm, qperm = data.draw(st.permutations(range(n))), data.draw(st.permutations(range(m)))
    moved_params = {p: (a[:, perm] if p in KEY_POSITIONAL.get(name, ()) else a) for p, a in params.items()}
    scale = max(1.0, float(np.abs(v).max()))
    for plain in ((), parse_masks(f"topk:{topk}")):
        base = attend(q, k, v, variant, params, plain, temperature)
        moved = attend(q, k[:, perm], v[:, perm], variant, moved_params, plain, temperature)
        rows = attend(q[:, qperm], k, v, variant, params, plain, temperature)
        same = np.ones((h, m), dtype=bool)  # the rows where the permutation cannot change which keys are kept
        if plain:
            kept = [
                [sorted(row) for row in np.where(r.masked, -np.inf, r.scores).reshape(-1, n).tolist()]
                for r in (base, moved)
            ]
            assert np.allclose(kept[0], kept[1], rtol=1e-12, atol=0)  # top-k keeps the same scores, ties or not
            same = ~np.array([near_tie_at_k(s, [False] * n, topk) for s in base.scores.reshape(-1, n).tolist()])
            same = same.reshape(h, m)
            event(f"top-k rows with a tie at the K-th score (not compared after permuting): {bool((~same).any())}")
        assert np.allclose(moved.weights[same], base.weights[:, :, perm][same], rtol=0, atol=1e-12)
        assert np.allclose(moved.out[same], base.out[same], rtol=0, atol=1e-12 * scale)
        assert np.allclose(rows.out, base.out[:, qperm], rtol=0, atol=1e-12 * scale)  # ties move with their row


# ---- what a variant cannot do, and why (each exception is shown to be real, so none goes stale) --------

KEY_POSITIONAL = {  # variant -> parameters with one entry per key position: permuting the keys must permute them
    "linformer": ("group",),  # its random partition is of positions, so alone it is not permutation-invariant
}


def test_linformer_is_not_permutation_invariant_unless_its_groups_move_too():
    variant = VARIANTS["linformer"]
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((3, 1, 6, 4))
    params = params_of(variant, 1, 4, 4, 4, n=6)
    perm = [5, 4, 3, 2, 1, 0]
    base = attend(q, k, v, variant, params)
    alone = attend(q, k[:, perm], v[:, perm], variant, params)
    moved = attend(q, k[:, perm], v[:, perm], variant, {"group": params["group"][:, perm]})
    # the moved groups agree within 1e-12; the unmoved ones differ by more than a thousand times that
    assert np.abs(alone.out - base.out).max() > 1e3 * 1e-12 and np.allclose(moved.out, base.out, rtol=0, atol=1e-12)


MAX = 1.7e308  # near float64's largest number

OVERFLOWS = {  # variants whose scores can overflow float64 for finite inputs (attend then raises, never NaN)
    "dot": "qᵀk of entries near 1e154 passes float64's largest number, 1.8e308",
    "scaled": "qᵀk overflows before the division by √d_k",
    "multiplicative": "qᵀW k overflows like qᵀk",
    "gated": "the gate is at most 1, but qᵀk itself overflows",
    "additive": "tanh is bounded, but W₁q and W₂k can overflow to +inf and -inf, and inf - inf is NaN",
    "linformer": "qᵀk̄ overflows like qᵀk (and a group's sum of keys near 1.8e308 overflows first)",
    "performer": "the features need ‖q‖² and ‖k‖², which overflow for entries near 1e154",
}


def extreme_inputs(params):
    rng = np.random.default_rng(11)
    yield np.full((1, 2, 4), MAX), np.full((1, 3, 4), MAX)  # every entry at the top of the range
    yield MAX * np.sign(rng.standard_normal((1, 2, 4))), 5e-324 * np.sign(rng.standard_normal((1, 3, 4)))
    if "W1" in params:  # additive: steer W₁q to +inf and W₂k to -inf in the first hidden unit
        yield MAX * np.sign(params["W1"][:, :1, :]), -MAX * np.sign(params["W2"][:, :1, :])


@pytest.mark.parametrize("name", list(VARIANTS))
def test_extreme_finite_inputs_give_finite_weights_or_a_clear_error(name):
    variant = VARIANTS[name]
    params = params_of(variant, 1, 4, 4, 4, seed=5, n=3)
    outcomes = []
    for q, k in extreme_inputs(params):
        v = np.ones((1, k.shape[1], 2))
        try:
            r = attend(q, k, v, variant, params)
        except DataError as e:  # the one-line error of the CLI, never a NaN in the output
            assert "overflow" in str(e)
            outcomes.append("error")
        else:
            assert np.isfinite(r.weights).all() and np.isfinite(r.out).all()
            outcomes.append("finite")
    if name in OVERFLOWS:
        assert "error" in outcomes, f"{name} no longer overflows: drop it from OVERFLOWS ({OVERFLOWS[name]})"
    else:
        assert outcomes == ["finite"] * len(outcomes), f"{name} overflows: say why in OVERFLOWS"


def test_one_e_thirty_is_still_finite_for_wide_dot_products():
    # The property tests stop at 1e30: then qᵀk ≤ d·1e60, finite for any width attn accepts (4096 · 1e60).
    q = np.full((1, 1, 4096), 1e30)
    r = attend(q, q, q, VARIANTS["dot"])
    assert r.scores[0, 0, 0] == pytest.approx(4096e60) and np.isfinite(r.out).all()


NOT_MONOTONE_IN_QK = {  # within a row, a larger qᵀk does not always get a larger weight, because:
    "cosine": "it divides by ‖k‖: a long key with a larger qᵀk can have a smaller cosine",
    "additive": "its scores come from tanh(W₁q + W₂k + b), not from qᵀk",
    "multiplicative": "it scores qᵀW k: W reorders the keys unless W = cI with c > 0",
    "gated": "each key has its own gate σ(W_g[q; k]), so a larger qᵀk can be gated below a smaller one",
    "linformer": "a key is scored through its group's mean key, shared with other keys of other qᵀk",
    "performer": "its scores are a random estimate of qᵀk/√d_k: F features err both ways",
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_weights_follow_the_dot_product_unless_the_variant_says_why(name):
    variant = VARIANTS[name]
    rng = np.random.default_rng(6)
    q, k, v = rng.standard_normal((1, 200, 4)), 2 * rng.standard_normal((1, 6, 4)), rng.standard_normal((1, 6, 2))
    w = attend(q, k, v, variant, params_of(variant, 1, 4, 4, 4, seed=6, n=6)).weights[0]  # [200, 6]
    qk = (q @ k.swapaxes(1, 2))[0]
    order = np.argsort(qk, axis=1)
    ranked = np.take_along_axis(w, order, axis=1)  # weights of each row, keys by increasing qᵀk
    monotone = (np.diff(ranked, axis=1) >= -1e-15).all()
    if name in NOT_MONOTONE_IN_QK:
        assert not monotone, f"{name} follows qᵀk after all: drop it from NOT_MONOTONE_IN_QK"
    else:
        assert monotone, f"{name} does not rank keys by qᵀk: say why in NOT_MONOTONE_IN_QK"


# ---- the claims `attn variants` makes in its notes --------------------------------------------------------


def test_the_notes_of_attn_variants_hold():
    rng = np.random.default_rng(8)
    q, k, v = rng.standard_normal((3, 1, 5, 4))
    dot_ = attend(q, k, v, VARIANTS["dot"])
    # scaled is dot at temperature √d_k
    # exact: ÷√4 and ÷2 are the same division by a power of 2 of the same scores
    assert np.array_equal(
        attend(q, k, v, VARIANTS["scaled"]).weights, attend(q, k, v, VARIANTS["dot"], temperature=2.0).weights
    )
    # multiplicative with W = I is dot
    # exact: q I = q, then the same product
    assert np.array_equal(attend(q, k, v, VARIANTS["multiplicative"], {"W": np.eye(4)[None]}).scores, dot_.scores)
    # gated with W_g = 0 is dot at half strength
    # exact: σ(0) = ½ times the same product, a power of 2
    assert np.array_equal(attend(q, k, v, VARIANTS["gated"], {"W_g": np.zeros((1, 8))}).scores, dot_.scores / 2)
    # cosine: scale-invariant, in [-1, 1], two weights of a row within a factor e²
    cos = attend(q, k, v, VARIANTS["cosine"])
    scaled_up = attend(q * rng.uniform(0.1, 10, (1, 5, 1)), k * rng.uniform(0.1, 10, (1, 5, 1)), v, VARIANTS["cosine"])
    assert np.allclose(cos.scores, scaled_up.scores, atol=1e-15) and (np.abs(cos.scores) <= 1).all()
    assert (cos.weights.max(-1) / cos.weights.min(-1) <= math.exp(2) + 1e-12).all()
    # additive: |s| ≤ Σ|v| whatever the input, and q, k may differ in width
    params = params_of(VARIANTS["additive"], 1, 4, 3, 6)
    big = attend(1e6 * q, 1e6 * k[..., :3], v, VARIANTS["additive"], params)
    assert (np.abs(big.scores) <= np.abs(params["v"]).sum() + 1e-12).all()
