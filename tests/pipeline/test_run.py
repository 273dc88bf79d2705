"""run(): one config in, one result out, every array in the shape its stage promises."""

import subprocess
import sys

import numpy as np
import pytest

from attncli.errors import ConfigError, DataError
from attncli.pipeline.config import RunConfig
from attncli.pipeline.run import run


def test_default_run_shapes_and_rows():
    r = run("time flies like an arrow")
    assert r.tokens.strings == ("time", "flies", "like", "an", "arrow")
    assert r.x.shape == (5, 16) and r.q.shape == (1, 5, 16) and r.weights.shape == (1, 5, 5)
    assert r.output.shape == (5, 16) and r.head_outputs.shape == (1, 5, 16)
    assert np.allclose(r.weights.sum(-1), 1)
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
    assert np.allclose(r.output, r.head_outputs[0])


def test_without_positions_word_order_only_permutes_the_weights():
    a = run("the dog chased the cat")
    b = run("the cat chased the dog")
    perm = [0, 4, 2, 3, 1]  # b's tokens are a's tokens in this order
    assert np.allclose(b.weights[0], a.weights[0][np.ix_(perm, perm)])
    pa = run("the dog chased the cat", RunConfig(positional="sinusoidal"))
    pb = run("the cat chased the dog", RunConfig(positional="sinusoidal"))
    assert not np.allclose(pb.weights[0], pa.weights[0][np.ix_(perm, perm)])


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
    assert np.allclose(b.weights, a.weights[:, perm][:, :, perm])
    assert np.allclose(b.output, a.output[perm])
    for sa, sb in zip(head_summaries(a.weights), head_summaries(b.weights)):  # order-blind statistics agree
        assert sa["mean_entropy_bits"] == pytest.approx(sb["mean_entropy_bits"])
    pa = run(first, RunConfig(variant=variant, heads=2, positional="sinusoidal"))
    pb = run(second, RunConfig(variant=variant, heads=2, positional="sinusoidal"))
    assert not np.allclose(pb.weights, pa.weights[:, perm][:, :, perm])
