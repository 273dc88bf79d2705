"""`attn heads --lines`' sinks section: one text's numbers (Gu et al.'s α_k and Sink^ε, Sun et al.'s massive
activations) over a corpus, merged by sums and counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attncli.core.corpus import CorpusStats
from attncli.core.statistics import SINK_EPSILON, SINK_POSITIONS
from attncli.core.stats import massive_activations, sink_stats
from attncli.models.runs.corpus import merge_all, partition_stats
from tests.conftest import attn
from tests.tolerance import U64, gamma

GOLDEN = Path(__file__).parent / "golden"
TEXTS = ["time flies like an arrow", "a", "the cat sat on the mat and the cat slept", "fruit flies"]


def ok(*args, stdin: str | None = None) -> dict:
    r = attn(*args, input=stdin)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", ["bert", "gpt2", "llama"])
def test_a_corpus_of_one_text_has_that_texts_sinks(name):
    """The same keys and the same numbers as `attn heads` on the text: a batch of one text pads nothing and runs
    the text as it runs alone."""
    folder = GOLDEN / name
    one = ok("heads", TEXTS[0], "--model", folder, "-f", "json")["sinks"]
    corpus = ok("heads", "-", "--lines", "--model", folder, "-f", "json", "--workers", "1", stdin=TEXTS[0] + "\n")
    assert corpus["sinks"] == one


def pooled(docs: list[dict]) -> tuple[np.ndarray, np.ndarray, float]:  # -> [L, h, k], [L, N], the bound's scale
    """α_k over all the texts from each text's own: Σ_t α_k(t) (n_t - k) / Σ_t (n_t - k), every query i >= k of
    every text; the residual ratio at each position, the mean over the texts that reach it."""
    lengths = [len(d["tokens"]) for d in docs]
    k = min(SINK_POSITIONS, max(lengths))
    sums = np.zeros((*np.shape(docs[0]["sinks"]["first"])[:2], k))
    counts = np.zeros(k)
    for d, n in zip(docs, lengths):
        first = np.array(d["sinks"]["first"])  # [L, h, min(k, n)]
        rows = n - np.arange(first.shape[-1])
        sums[..., : first.shape[-1]] += first * rows
        counts[: first.shape[-1]] += rows
    ratios = np.zeros((len(docs[0]["sinks"]["massive_activation"]), max(lengths)))
    reach = np.zeros(max(lengths))
    for d, n in zip(docs, lengths):
        ratios[:, :n] += np.array(d["sinks"]["massive_activation"])
        reach[:n] += 1
    return sums / counts, ratios / reach, float(counts.sum() + len(docs))


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_partitions_merged_equal_the_computation_over_all_texts(name):
    """Each text its own partition (a batch of one, as that text alone), merged: α_k, the sink heads and rate and
    the residual ratios equal those pooled from each text's `attn heads`. Both sides add the same non-negative
    float64 numbers in other orders: within γ of the number of terms, relative."""
    folder = GOLDEN / name
    docs = [ok("heads", t, "--model", folder, "-f", "json") for t in TEXTS]
    merged = merge_all(partition_stats(str(folder), [t]) for t in TEXTS)
    first, massive, terms = pooled(docs)
    got = merged.sinks()
    assert got is not None
    rtol = 2 * gamma(int(terms) + 2 * SINK_POSITIONS, U64)
    np.testing.assert_allclose(got["first"], first, rtol=rtol, atol=0)
    np.testing.assert_allclose(got["massive_activation"], massive, rtol=2 * gamma(len(TEXTS) + 2, U64), atol=0)
    assert (got["sink"] == (first[..., 0] > SINK_EPSILON)).all()
    assert got["sink_rate"] == float((first[..., 0] > SINK_EPSILON).mean())


def test_the_corpus_json_and_table_have_the_sinks_section():
    folder = GOLDEN / "llama"
    lines = "\n".join(TEXTS) + "\n"
    doc = ok("heads", "-", "--lines", "--model", folder, "-f", "json", "--workers", "1", stdin=lines)
    one = ok("heads", TEXTS[0], "--model", folder, "-f", "json")["sinks"]
    assert doc["sinks"].keys() == one.keys()
    assert doc["sinks"]["positions"][0] == "<s>"  # every text starts with it
    assert doc["sinks"]["positions"][1] is None  # the texts differ there
    r = attn("heads", "-", "--lines", "--model", folder, "--workers", "1", "--width", "200", input=lines)
    assert r.exit_code == 0, r.output
    assert "sink rate Sink^ε (ε = 0.3):" in r.stdout and "on position 0 (<s>)" in r.stdout
    assert "the mean over the texts that reach that position" in r.stdout


def random_texts(causal: bool) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:  # (weights, ids, norms) each
    rng = np.random.default_rng(3)
    texts = []
    for n in (1, 3, 6, 5):
        w = rng.random((2, 3, n, n)) * (np.tri(n) if causal else 1.0)
        texts.append((w / w.sum(-1, keepdims=True), rng.integers(0, 4, n), rng.random((2, n)) + 0.1))
    return texts


@pytest.mark.parametrize("causal", [False, True])
def test_the_merge_of_any_split_is_the_pooled_computation(causal):
    """α_k of the pooled rows i >= k of every text (row 0 too: as one text's), and the mean ratio at each position,
    from partitions of the texts merged in any split, against the same numbers computed here over all texts."""
    texts = random_texts(causal)
    parts = []
    for split in (texts[:1], texts[1:3], texts[3:]):
        part = CorpusStats()
        for w, ids, norms in split:
            part.add_text(w, ids, causal, norms)
        parts.append(part)
    got = merge_all(parts).sinks()
    assert got is not None
    k = SINK_POSITIONS
    want = np.zeros((2, 3, k))
    for j in range(k):
        num = sum(w[..., j:, j].sum(-1) for w, ids, _ in texts if len(ids) > j)
        want[..., j] = num / sum(len(ids) - j for _, ids, _ in texts if len(ids) > j)
    rows = sum(len(ids) for _, ids, _ in texts)
    np.testing.assert_allclose(got["first"], want, rtol=2 * gamma(rows + 2, U64), atol=0)
    ratios = np.zeros((2, 6))
    reach = np.zeros(6)
    for _, ids, norms in texts:
        ratios[:, : len(ids)] += massive_activations(norms[..., None])  # [L, n, 1]: each norm its own length
        reach[: len(ids)] += 1
    np.testing.assert_allclose(got["massive_activation"], ratios / reach, rtol=2 * gamma(len(texts) + 2, U64))
    alone = sink_stats(texts[2][0])  # one text: the one-text function's numbers
    single = CorpusStats()
    single.add_text(texts[2][0], texts[2][1], causal, texts[2][2])
    assert np.array_equal(single.sinks()["first"], alone["first"])
