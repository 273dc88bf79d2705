"""A padded batch of texts gives every text's attention as the text alone does, on every family."""

import numpy as np
import pytest

from attncli.core.stats import CorpusStats
from attncli.models import encode, forward
from attncli.models.batch import batches, forward_weights

TEXTS = ["time flies like an arrow", "a", "the cat sat on the mat and the cat slept", "fruit flies", "an arrow"]


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_a_padded_batch_equals_one_text_at_a_time(family, request):
    model = request.getfixturevalue(family)
    texts = [np.asarray(encode(model, t).ids) for t in TEXTS]
    assert len({len(ids) for ids in texts}) > 2  # the batch pads
    for ids, weights in zip(texts, forward_weights(model, texts)):
        alone = np.stack(forward(model, ids).weights)  # [L, h, n, n]
        assert weights.shape == alone.shape
        np.testing.assert_allclose(weights, alone, rtol=0, atol=1e-6)
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)  # no weight left on the padding


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
    for name, m in one.moments.items():
        np.testing.assert_allclose(many.moments[name].mean(), m.mean(), rtol=0, atol=1e-6)
        np.testing.assert_allclose(many.moments[name].std(), m.std(), rtol=0, atol=1e-6)


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
