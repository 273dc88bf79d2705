"""run(): one config in, one result out, every array in the shape its stage promises."""

import subprocess
import sys

import numpy as np
import pytest

from attncli.core.attention import merge_heads, split_heads
from attncli.errors import ConfigError, DataError
from attncli.pipeline.config import RunConfig
from attncli.pipeline.run import run
from tests.tolerance import U64, assert_rows_sum_to_one, assert_within, gamma, softmax_bound, weights_bound


def test_default_run_shapes_and_rows():
    r = run("time flies like an arrow")
    assert r.tokens.strings == ("time", "flies", "like", "an", "arrow")
    assert r.x.shape == (5, 16) and r.q.shape == (1, 5, 16) and r.weights.shape == (1, 5, 5)
    assert r.output.shape == (5, 16) and r.head_outputs.shape == (1, 5, 16)
    assert_rows_sum_to_one(r.weights, U64)
    assert (r.config.d_k, r.config.d_v) == (16, 16)


def test_heads_split_the_width():
    r = run("time flies like an arrow", RunConfig(heads=4, dim=16))
    assert r.q.shape == (4, 5, 4) and r.head_outputs.shape == (4, 5, 4) and r.output.shape == (5, 16)


def test_dk_dv_need_not_divide():
    r = run("a b c", RunConfig(heads=3, dim=16, d_k=5, d_v=7))
    assert r.q.shape == (3, 3, 5) and r.v.shape == (3, 3, 7) and r.output.shape == (3, 16)


def test_cross_attention_queries_from_text_keys_from_context():
    r = run("time flies", RunConfig(), context="like an arrow today")
    assert r.weights.shape == (1, 2, 4)
    assert r.key_tokens.strings == ("like", "an", "arrow", "today")


def test_identity_projection_uses_x_itself():
    r = run("time flies like", RunConfig(projection="identity"))
    assert np.array_equal(r.q[0], r.x) and np.array_equal(r.v[0], r.x)
    assert np.array_equal(r.output, r.head_outputs[0])  # exact: W_O = I, each x·1 plus zeros


def test_without_positions_word_order_only_permutes_the_weights():
    a = run("the dog chased the cat")
    b = run("the cat chased the dog")
    perm = [0, 4, 2, 3, 1]  # b's tokens are a's tokens in this order
    assert_within(b.weights[0], a.weights[0][np.ix_(perm, perm)], _order_bound(a))
    pa = run("the dog chased the cat", RunConfig(positional="sinusoidal"))
    pb = run("the cat chased the dog", RunConfig(positional="sinusoidal"))
    assert np.abs(pb.weights[0] - pa.weights[0][np.ix_(perm, perm)]).max() > 1e3 * _order_bound(pa)


def test_causal_mask_through_the_pipeline():
    r = run("time flies like an arrow", RunConfig(mask=("causal",)))
    assert (np.triu(r.weights[0], 1) == 0).all()
    assert r.config.mask == ("causal",)


@pytest.mark.parametrize(
    "config, message",
    [
        (RunConfig(heads=3), "not divisible by --heads 3"),
        (RunConfig(dim=0), "--dim must be"),
        (RunConfig(heads=-1), "--heads must be"),
        (RunConfig(variant="nope"), "unknown variant"),
        (RunConfig(temperature=0.0), "--temperature"),
        (RunConfig(temperature=float("nan")), "--temperature"),
        (RunConfig(projection="identity", d_k=4), "identity"),
        (RunConfig(mask=("sideways",)), "unknown mask"),
    ],
)
def test_bad_configs_name_the_value(config, message):
    with pytest.raises(ConfigError, match=message):
        run("a b", config)


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_empty_text(text):
    with pytest.raises(DataError, match=r"empty text|the word tokenizer produced no tokens"):
        run(text)


def test_importing_the_pipeline_does_not_import_rich_typer_or_click():
    code = (
        "import sys, attncli.pipeline.run; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'typer', 'click')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _order_bound(r) -> float:
    """What the weights of a text and of its permutation may differ by: the same float64 rows, added in other
    orders, each run within tests/tolerance.py's weights_bound of the exact (X W_Q, X W_K: d_model terms each,
    the score d_k more, the variant's own hidden d_a more; magnitude Σ|qₗ kₗ|, unscaled, or 1 for a cosine)
    and softmax_bound of its own rounding."""
    c = r.config
    magnitude = max(float((np.abs(r.q) @ np.abs(r.k).swapaxes(-1, -2)).max()), 1.0)
    terms = 2 * c.dim + c.d_k + c.d_a
    return 2 * (
        weights_bound(magnitude, terms, u=U64) + float(softmax_bound(np.ones(r.weights.shape[-1]), u=U64).max())
    )


def _permutation(a, b):  # token strings -> perm with b == a[perm] (repeated tokens matched in order)
    used, perm = set(), []
    for token in b:
        i = next(i for i, t in enumerate(a) if t == token and i not in used)
        used.add(i)
        perm.append(i)
    return perm


@pytest.mark.parametrize("variant", ["dot", "scaled", "cosine", "additive", "multiplicative", "gated"])
def test_word_order_pair_from_the_sample_file(variant):
    """sample_texts/word_order.txt: the two lines give the same weights up to the permutation of tokens
    without positions (every variant, every head), and different ones with sinusoidal positions."""
    from pathlib import Path

    from attncli.core.stats import head_summaries

    first, second = (
        (Path(__file__).resolve().parents[2] / "sample_texts" / "word_order.txt")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    a, b = run(first, RunConfig(variant=variant, heads=2)), run(second, RunConfig(variant=variant, heads=2))
    perm = _permutation(a.tokens.strings, b.tokens.strings)
    assert perm != list(range(len(perm)))
    w_bound = _order_bound(a)
    assert_within(b.weights, a.weights[:, perm][:, :, perm], w_bound)
    # O = concat(A V) W_O: V = X W_V (d_model terms), A V (n terms), W_O (d_model terms), each within γ of its
    # magnitude, and the weights' own error w_bound through |V| (tests/tolerance.py's bounds, in float64)
    c, w_o = a.config, np.abs(a.projections.w_o)
    v_mag = split_heads(np.abs(a.x) @ np.abs(a.projections.w_v), c.heads)  # [h, n, d_v] >= |V|
    o_bound = 2 * gamma(2 * c.dim + len(perm), U64) * (merge_heads(np.abs(a.weights) @ v_mag) @ w_o)
    o_bound += merge_heads(w_bound * v_mag.sum(-2, keepdims=True)) @ w_o
    assert_within(b.output, a.output[perm], o_bound[perm])
    for sa, sb in zip(head_summaries(a.weights), head_summaries(b.weights)):  # order-blind statistics agree
        assert sa["mean_entropy_bits"] == pytest.approx(sb["mean_entropy_bits"])
    pa = run(first, RunConfig(variant=variant, heads=2, positional="sinusoidal"))
    pb = run(second, RunConfig(variant=variant, heads=2, positional="sinusoidal"))
    assert np.abs(pb.weights - pa.weights[:, perm][:, :, perm]).max() > 1e3 * _order_bound(pa)
