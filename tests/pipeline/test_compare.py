"""Statistics, checked by hand: entropy, head statistics, token facts, the compare rows."""

import doctest
import math
from pathlib import Path

import numpy as np
import pytest

from attncli.core import stats
from attncli.core.stats import head_summaries as head_stats
from attncli.core.stats import row_entropy, top_keys
from attncli.errors import ConfigError
from attncli.pipeline import compare
from attncli.pipeline.compare import (
    byte_pieces,
    compare_runs,
    coverage,
    mix_madds,
    score_madds,
    split_names,
    summary_row,
    token_rows,
    unknown,
    weight_bytes,
)
from attncli.pipeline.config import RunConfig
from attncli.pipeline.run import run
from attncli.pipeline.tokenize import Tokens, char, tokenize, word

SAMPLES = Path(__file__).resolve().parents[2] / "sample_texts"


def test_doctests():
    assert doctest.testmod(stats).failed == 0 and doctest.testmod(compare).failed == 0


def test_row_entropy_by_hand():
    w = np.array([[0.5, 0.5, 0, 0], [1, 0, 0, 0], [0.25] * 4, [0.25, 0.75, 0, 0], [0, 0, 0, 0]])
    expected = [1.0, 0.0, 2.0, -(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75)), 0.0]
    assert row_entropy(w) == pytest.approx(expected)
    assert row_entropy(w)[0] == 1.0 and math.copysign(1, row_entropy(w)[1]) == 1  # exact, and never -0.0


def test_head_stats_by_hand():
    s = head_stats(np.array([[[0.5, 0.5], [0.25, 0.75]]]))[0]
    assert s["mean_entropy_bits"] == pytest.approx((1 + 0.8112781244591328) / 2)
    assert s["max_entropy_bits"] == 1.0 and s["entropy_ratio"] == pytest.approx(s["mean_entropy_bits"])
    assert s["largest_weight"] == 0.75 and s["largest_at"] == [1, 1]
    assert s["diagonal_mass"] == pytest.approx((0.5 + 0.75) / 2)
    assert s["mean_distance"] == pytest.approx((0.5 * 1 + 0.25 * 1) / 2)  # Σ_j a_ij |i - j|, averaged
    assert s["mean_row_max"] == pytest.approx((0.5 + 0.75) / 2)
    assert s["top_keys"] == [[0, 1], [1, 0]] and s["top_weights"] == [[0.5, 0.5], [0.75, 0.25]]


def test_a_row_emptied_by_a_mask_is_left_out_and_cross_attention_has_no_diagonal():
    w = np.array([[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])  # 2 queries, 3 keys
    s = head_stats(w, self_attention=False)[0]
    assert s["mean_entropy_bits"] == 0.0 and s["mean_distance"] == 0.0 and s["mean_row_max"] == 1.0
    assert s["diagonal_mass"] is None
    assert head_stats(np.zeros((1, 1, 1)))[0]["entropy_ratio"] is None  # log2 1 = 0: no ratio


def test_top_keys_largest_first_ties_to_the_lower_index():
    assert top_keys(np.array([[0.1, 0.3, 0.3, 0.3]]), 3).tolist() == [[1, 2, 3]]
    assert top_keys(np.array([[0.6, 0.4]]), 3).tolist() == [[0, 1]]


def test_head_stats_of_a_real_run_agree_with_the_weights():
    r = run("time flies like an arrow", RunConfig(heads=2))
    for h, s in enumerate(head_stats(r.weights)):
        assert s["largest_weight"] == r.weights[h].max()
        assert s["diagonal_mass"] == pytest.approx(np.trace(r.weights[h]) / 5)
        assert 0 < s["entropy_ratio"] <= 1


def test_byte_pieces_unknown_and_coverage_on_the_multilingual_line():
    text = (SAMPLES / "multilingual.txt").read_text(encoding="utf-8")
    bpe = tokenize(text, "bpe")
    pieces = byte_pieces(bpe)
    assert sum(pieces) > 10  # CJK and emoji fall apart into byte-level tokens
    assert all(bpe.offsets[i][1] - bpe.offsets[i][0] == 1 for i, p in enumerate(pieces) if p)  # one character each
    assert not any(byte_pieces(char(text))) and not any(byte_pieces(word(text)))
    assert not any(unknown(bpe))
    for tokens in (bpe, char(text), word(text)):
        assert coverage(text, tokens)[0]


def test_sentencepiece_byte_fallback_tokens_count_as_pieces():
    t = Tokens(("▁a", "<0xE2>", "<0x80>"), (1, 2, 3), ((0, 1), (2, 3), (3, 4)), "x")
    assert byte_pieces(t) == [False, True, True]


def test_unknown_tokens_of_a_wordpiece_file(wordpiece_json):
    t = tokenize("Time flies like a zebra", wordpiece_json)
    assert t.unk_token == "[UNK]"
    assert sum(unknown(t)) == 2
    kinds = [row["kind"] for row in token_rows("Time flies like a zebra", t)]
    assert kinds == ["no span", "", "", "", "unknown", "unknown", "no span"]
    assert coverage("Time flies like a zebra", t)[0]  # offsets point at "Time" though the token is "time"


@pytest.mark.parametrize(
    "offsets, why",
    [
        (((0, 1), (4, 5)), "are in no token"),  # "bc" dropped
        (((0, 1), (1, 3)), "are in no token"),  # the end is dropped
        (((0, 3), (1, 5)), "overlaps"),
        (((0, 1), (3, 9)), "outside the text"),
    ],
)
def test_coverage_says_what_is_wrong(offsets, why):
    ok, message = coverage("abc d", Tokens(("x", "y"), (0, 1), offsets, "x"))
    assert not ok and why in message


def test_token_rows():
    rows = token_rows("time flies", word("time flies"))
    assert rows[1] == {"index": 1, "token": "flies", "id": 1, "start": 5, "end": 10, "span": "flies", "kind": ""}


def test_costs():
    assert score_madds("scaled", 2, 5, 5, 8, 8) == 2 * 5 * 5 * 8
    assert score_madds("dot", 1, 3, 4, 2, 2) == 24
    assert score_madds("additive", 1, 3, 4, 2, 5) == (3 + 4) * 5 * 2 + 3 * 4 * 5
    assert score_madds("multiplicative", 1, 3, 4, 2, 2) == 3 * 2 * 2 + 3 * 4 * 2
    assert mix_madds(2, 5, 5, 8) == 400
    assert weight_bytes(run("a b")) == 4 * 16 * 16 * 8  # W_Q, W_K, W_V, W_O, float64
    assert weight_bytes(run("a b", RunConfig(projection="identity"))) == 0
    additive = run("a b", RunConfig(variant="additive"))
    assert weight_bytes(additive) == 4 * 16 * 16 * 8 + sum(a.nbytes for a in additive.params.values())


def test_summary_row_of_the_three_tokenizers():
    text = "time flies like an arrow"
    rows = [summary_row(r) for r in compare_runs(text, ["char", "word", "bpe"], ["scaled"], RunConfig())]
    assert [r["n_tokens"] for r in rows] == [24, 5, 5]
    assert [r["cells"] for r in rows] == [576, 25, 25]
    assert [r["distinct"] for r in rows] == [14, 5, 5]
    assert [r["vocab_size"] for r in rows] == [None, None, 2000]
    assert rows[2]["embedding_bytes"] == 2000 * 16 * 8 and rows[0]["embedding_bytes"] is None
    assert rows[0]["max_entropy_bits"] == pytest.approx(math.log2(24))
    for r in rows:
        assert 0 < r["entropy_ratio"] <= 1 and 0 < r["mean_row_max"] <= 1
        assert r["score_madds"] == r["cells"] * 16


def test_compare_runs_order_and_names():
    results = compare_runs("a b", ["word", "char"], ["scaled", "cosine"], RunConfig())
    assert [(r.config.tokenizer, r.config.variant) for r in results] == [
        ("word", "scaled"),
        ("word", "cosine"),
        ("char", "scaled"),
        ("char", "cosine"),
    ]
    assert split_names(" char, word,,char ", "tokenizers") == ["char", "word"]
    with pytest.raises(ConfigError, match="at least one"):
        split_names(" , ", "variants")
