"""A padded batch of texts gives every text's attention as the text alone does, on every family."""

import numpy as np
import pytest

from attncli.core.corpus import CorpusStats
from attncli.models import encode, forward
from attncli.models.runs.batch import batches, forward_weights
from tests.tolerance import U32, assert_within, softmax_sum_bound, weights_bound

TEXTS = ["time flies like an arrow", "a", "the cat sat on the mat and the cat slept", "fruit flies", "an arrow"]


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_a_padded_batch_equals_one_text_at_a_time(family, request):
    model = request.getfixturevalue(family)
    texts = [np.asarray(encode(model, t).ids) for t in TEXTS]
    assert len({len(ids) for ids in texts}) > 2  # the batch pads
    for ids, weights in zip(texts, forward_weights(model, texts)):
        alone = np.stack(forward(model, ids).weights)  # [L, h, n, n]
        assert weights.shape == alone.shape
        assert_within(weights, alone, run_bound(model, ids)[:, None, None, None], "batched")
        assert_within(weights.sum(-1), 1.0, softmax_sum_bound(len(ids)))  # no weight left on the padding


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_statistics_of_batches_equal_those_of_single_texts(family, request):
    model = request.getfixturevalue(family)
    texts = [np.asarray(encode(model, t).ids) for t in TEXTS * 3]
    one, many = CorpusStats(), CorpusStats()
    for ids in texts:
        one.add_text(np.stack(forward(model, ids).weights), ids, model.causal)
    for batch in batches([len(ids) for ids in texts], 4, 40):
        for i, weights in zip(batch, forward_weights(model, [texts[i] for i in batch])):
            many.add_text(weights, texts[i], model.causal)
    assert (one.texts, one.tokens) == (many.texts, many.tokens)
    # every statistic of a row is a sum over its n keys of a weight times a factor of at most n (a distance in
    # tokens, a count) or 1 + log2(1 / w) (entropy): it moves by at most n · that · the weights' bound; a mean
    # over texts or a standard deviation moves by no more than the largest move of what it is taken over
    n = max(len(ids) for ids in texts)
    smallest = min(float(w[w > 0].min()) for ids in texts for w in forward(model, ids).weights)
    bound = n * max(n, 1 + np.log2(1 / smallest)) * max(float(run_bound(model, ids).max()) for ids in texts)
    for name, m in one.moments.items():
        assert_within(many.moments[name].mean(), m.mean(), bound, name)
        assert_within(many.moments[name].std(), m.std(), bound, name)


def run_bound(model, ids) -> np.ndarray:  # -> [L]
    """What two float32 runs of the same text (alone, and padded in a batch) may differ by in each layer's
    weights: each is within tests/tolerance.py's weights_bound of the exact run, at that layer's depth, with its
    scores' Σ |qₗ kₗ| / √d_k as their magnitude (and LayerNorm's d_model-term sums as one more)."""
    bounds = []
    for layer in range(model.n_layer):
        s = forward(model, ids, upto_layer=layer, steps_layer=layer).steps
        magnitude = float((np.abs(s.q) @ np.abs(s.k).swapaxes(-1, -2)).max()) * s.scale
        bounds.append(2 * weights_bound(magnitude, 3 * model.d_model + model.d_k, layer + 1) + 2 * (len(ids) + 5) * U32)
    return np.array(bounds)


def test_batches_keep_within_their_bounds():
    lengths = [7, 3, 9, 3, 1, 12, 5, 5]
    cut = batches(lengths, 3, 20)
    assert sorted(i for b in cut for i in b) == list(range(len(lengths)))
    for b in cut:
        assert len(b) <= 3 and (len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 20)


NEWER = ["deberta-v3", "gemma3_text", "modernbert", "mpnet", "olmo2", "phi3", "qwen2-longrope", "smollm3"]


@pytest.mark.parametrize("name", NEWER)
def test_a_padded_batch_equals_one_text_at_a_time_on_the_newer_layouts(name):
    """Position terms built from the split q and k (DeBERTa), an encoder's sliding window (ModernBERT), a bias table
    (MPNet), NoPE layers, per-layer RoPE, whole-projection q/k norms, and longrope, whose factors follow each text's
    length (12 tokens or fewer: short) and not the batch's. Within the bound of the golden folders: their scores
    reach 10 and more, where a product summed in another order moves a weight by a few 1e-7."""
    from attncli.models import load_model
    from tests.models.test_golden import GOLDEN, TOLERANCE

    model = load_model(GOLDEN / name)
    long = "the quick brown fox jumps over the lazy dog while time flies like an arrow and fruit flies"
    texts = [np.asarray(encode(model, t).ids) for t in [*TEXTS, long]]
    for ids, weights in zip(texts, forward_weights(model, texts)):
        alone = np.stack(forward(model, ids).weights)  # [L, h, n, n]
        np.testing.assert_allclose(weights, alone, rtol=0, atol=TOLERANCE)
