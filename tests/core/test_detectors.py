"""Head detectors on constructed attention patterns whose right answer is known, and mergeable moments."""

import numpy as np

from attncli.core.corpus import CorpusStats, Moments, batch_rows, induction_rows, text_rows
from tests.tolerance import assert_within, moments_bound


def _one(pattern: np.ndarray) -> np.ndarray:  # [n, n] -> [L=1, h=1, n, n]
    return pattern[None, None]


def test_a_previous_token_head_scores_one():
    n = 6
    a = np.eye(n, k=-1)
    a[0, 0] = 1.0
    rows = text_rows(_one(a), np.arange(n), causal=True)
    # exact: sums of 0s and one 1.0 (times a distance of 1), and 1 log 1 = 0 log 0 = 0
    assert np.all(rows["previous-token"] == 1.0) and rows["first-token"].sum() == 1.0  # only row 1 looks at 0
    assert np.all(rows["distance"] == 1.0) and np.all(rows["entropy"] == 0.0)


def test_a_sink_head_and_a_diagonal_head():
    n = 5
    sink = np.zeros((n, n))
    sink[:, 0] = 1.0
    # exact: each row's one weight of 1.0
    assert np.all(text_rows(_one(sink), np.arange(n), causal=False)["first-token"] == 1.0)
    assert np.all(text_rows(_one(np.eye(n)), np.arange(n), causal=False)["diagonal"] == 1.0)


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
    assert np.all(induction_rows(_one(a), prefix, period) == 1.0)  # exact: one weight of 1.0 per row
    assert induction_rows(_one(a), prefix, period).shape == (1, 1, period - 1)
    assert np.all(induction_rows(_one(np.eye(n)), prefix, period) == 0.0)


def test_moments_of_parts_merge_to_the_moments_of_the_whole():
    rng = np.random.default_rng(0)
    values = rng.random((2, 3, 50))
    whole, left, right = Moments(), Moments(), Moments()
    whole.add(values)
    left.add(values[..., :20])
    right.add(values[..., 20:])
    merged = left.merge(right)
    mean_bound, std_bound = moments_bound(50, (values * values).sum(-1), values.mean(axis=-1))
    assert merged.count == 50
    assert_within(merged.mean(), values.mean(axis=-1), mean_bound)
    # NumPy's std is two-pass (Σ(v - mean)²), Moments' one-pass: both within std_bound of the exact
    assert_within(merged.std(), values.std(axis=-1), std_bound)
    assert_within(whole.std(), merged.std(), std_bound)


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
    for name, m in one.moments.items():  # the same rows, summed in another order
        mean_bound, std_bound = moments_bound(m.count, m.squares, m.mean())
        assert_within(both.moments[name].mean(), m.mean(), mean_bound, name)
        assert_within(both.moments[name].std(), m.std(), std_bound, name)


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
