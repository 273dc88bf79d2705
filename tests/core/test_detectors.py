"""Head detectors on constructed attention patterns whose right answer is known, and mergeable moments."""

import numpy as np

from attncli.core.stats import CorpusStats, Moments, batch_rows, induction_rows, text_rows


def _one(pattern: np.ndarray) -> np.ndarray:  # [n, n] -> [L=1, h=1, n, n]
    return pattern[None, None]


def test_a_previous_token_head_scores_one():
    n = 6
    a = np.eye(n, k=-1)
    a[0, 0] = 1.0
    rows = text_rows(_one(a), np.arange(n), causal=True)
    assert np.allclose(rows["previous-token"], 1.0) and rows["first-token"].sum() == 1.0  # only row 1 looks at 0
    assert np.allclose(rows["distance"], 1.0) and np.allclose(rows["entropy"], 0.0)


def test_a_sink_head_and_a_diagonal_head():
    n = 5
    sink = np.zeros((n, n))
    sink[:, 0] = 1.0
    assert np.allclose(text_rows(_one(sink), np.arange(n), causal=False)["first-token"], 1.0)
    assert np.allclose(text_rows(_one(np.eye(n)), np.arange(n), causal=False)["diagonal"], 1.0)


def test_a_duplicate_token_head_looks_at_earlier_copies_only():
    ids = np.array([7, 3, 7, 9, 3, 7])
    a = np.zeros((6, 6))
    a[0, 0] = a[1, 1] = a[3, 3] = 1.0  # first occurrences: no earlier copy, not counted
    a[2, 0] = 1.0  # 7 -> the earlier 7
    a[4, 1] = 1.0  # 3 -> the earlier 3
    a[5, [0, 2]] = 0.5  # 7 -> both earlier 7s
    assert text_rows(_one(a), ids, causal=True)["duplicate-token"].tolist() == [[[1.0, 1.0, 1.0]]]
    a[5] = 0.0
    a[5, 5] = 1.0  # looks at itself, not at an earlier copy
    assert text_rows(_one(a), ids, causal=True)["duplicate-token"].tolist() == [[[1.0, 1.0, 0.0]]]


def test_an_induction_head_looks_at_the_token_after_the_earlier_copy():
    prefix, period = 1, 4  # [BOS] r0 r1 r2 r3 r0 r1 r2 r3
    n = prefix + 2 * period
    a = np.zeros((n, n))
    for i in range(n):
        j = i - period + 1 if i >= prefix + period else i
        a[i, j] = 1.0
    assert np.allclose(induction_rows(_one(a), prefix, period), 1.0)
    assert induction_rows(_one(a), prefix, period).shape == (1, 1, period - 1)
    assert np.allclose(induction_rows(_one(np.eye(n)), prefix, period), 0.0)


def test_moments_of_parts_merge_to_the_moments_of_the_whole():
    rng = np.random.default_rng(0)
    values = rng.random((2, 3, 50))
    whole, left, right = Moments(), Moments(), Moments()
    whole.add(values)
    left.add(values[..., :20])
    right.add(values[..., 20:])
    merged = left.merge(right)
    assert merged.count == 50 and np.allclose(merged.mean(), values.mean(axis=-1))
    assert np.allclose(merged.std(), values.std(axis=-1)) and np.allclose(whole.std(), merged.std())


def test_corpus_stats_of_two_partitions_equal_one_pass():
    rng = np.random.default_rng(1)
    texts = []
    for n in (3, 5, 4):
        w = rng.random((2, 2, n, n))
        texts.append((w / w.sum(-1, keepdims=True), rng.integers(0, 3, n)))
    one = CorpusStats()
    for w, ids in texts:
        one.add_text(w, ids, causal=False)
    a, b = CorpusStats(), CorpusStats()
    a.add_text(*texts[0], causal=False)
    for w, ids in texts[1:]:
        b.add_text(w, ids, causal=False)
    both = a.merge(b)
    assert (both.texts, both.tokens) == (3, 12)
    for name, m in one.moments.items():
        assert np.allclose(both.moments[name].mean(), m.mean()) and np.allclose(both.moments[name].std(), m.std())


def test_a_padded_batch_gives_the_rows_of_its_texts_one_after_another():
    rng = np.random.default_rng(2)
    lengths, n = np.array([3, 1, 5, 4]), 5
    weights = rng.random((4, 2, 3, n, n))  # padding rows hold anything; padding keys get no weight
    ids = rng.integers(0, 3, (4, n))
    for b, m in enumerate(lengths):
        weights[b, ..., :m, m:] = 0.0
        weights[b, ..., :m, :m] /= weights[b, ..., :m, :m].sum(-1, keepdims=True)
    for causal in (False, True):
        batched = batch_rows(weights, ids, lengths, causal)
        alone = [text_rows(weights[b, ..., :m, :m], ids[b, :m], causal) for b, m in enumerate(lengths)]
        for name, values in batched.items():
            np.testing.assert_array_equal(values, np.concatenate([rows[name] for rows in alone], axis=-1))
    many = CorpusStats()
    many.add_batch(weights, ids, lengths, causal=True)
    assert (many.texts, many.tokens) == (4, 13)
