"""The encoder–decoder families against transformers: the golden folders of tools/golden_seq2seq.py hold tiny
random BART, T5 and Marian models and transformers' eager encoder, decoder and cross attentions of two
sentence pairs, run with teacher forcing (labels = the target's ids)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from attncli.core.parts import PARTS
from attncli.core.statistics import CROSS_LABELS, CROSS_PATTERNS, CROSS_STATS
from attncli.core.stats import cross_head_stats, cross_rollout, label_heads, rollout
from attncli.errors import ConfigError
from attncli.models import ModelError, encode, forward, load_model
from attncli.models.network.families.bart import sinusoids
from attncli.models.network.families.t5 import position_buckets
from attncli.models.runs import route
from attncli.models.runs.encdec import decoder_input, seq2seq_forward
from attncli.models.runs.route import check_part, kind_of, model_parts
from attncli.models.runs.seq2seq import target_labels
from tests.tolerance import (
    U32,
    U64,
    affine_bound,
    assert_within,
    gamma,
    rollout_sum_bound,
    softmax_sum_bound,
    weights_bound,
)

GOLDEN = Path(__file__).parent / "golden"
CONDITIONING = Path(__file__).parent / "conditioning"  # tools/golden_seq2seq.py t5-large-scores
SEQ2SEQ = ("bart", "bart-heads", "marian", "marian-heads", "mbart", "mt5", "t5")
TOLERANCE = 1e-5


def attentions(folder: Path):
    """(mine, the reference, its float64 truth, my largest |score|) per pair: attn's and transformers' weights of
    every part and layer, and the largest |score| of each; the ids must agree exactly."""
    model, ref = load_model(folder), np.load(folder / "reference.npz")
    pairs = json.loads((folder / "pairs.json").read_text(encoding="utf-8"))
    for case, pair in pairs.items():
        source, labels = encode(model, pair["source"]).ids, target_labels(model, pair["target"]).ids
        assert list(source) == ref[f"{case}_ids"].tolist() and list(labels) == ref[f"{case}_labels"].tolist()
        dec_ids = decoder_input(model, labels)
        assert dec_ids == ref[f"{case}_decoder_ids"].tolist()
        run = seq2seq_forward(model, source, dec_ids)
        mine = {
            "encoder": np.stack(run.encoder.weights),
            "decoder": np.stack([s.weights for s in run.decoder]),
            "cross": np.stack([s.weights for s in run.cross]),
        }
        encoder = [forward(model, source, steps_layer=l).steps for l in range(model.n_layer)]
        largest = {
            part: [float(np.abs(s.scores).max()) for s in steps]
            for part, steps in (("encoder", encoder), ("decoder", run.decoder), ("cross", run.cross))
        }
        keys = {"encoder": case, "decoder": f"{case}_decoder", "cross": f"{case}_cross"}
        yield (
            mine,
            {part: ref[key] for part, key in keys.items()},
            {part: ref.get(key + "_f64") for part, key in keys.items()},
            largest,
        )


def deltas(folder: Path) -> dict[str, float]:
    """The largest |Δ| of each part over every layer, head and cell of both pairs."""
    worst = dict.fromkeys(PARTS, 0.0)
    for mine, theirs, _, _ in attentions(folder):
        for part in PARTS:
            assert mine[part].shape == theirs[part].shape
            worst[part] = max(worst[part], float(np.abs(mine[part] - theirs[part]).max()))
    return worst


@pytest.mark.parametrize("name", SEQ2SEQ)
def test_every_part_equals_transformers(name):
    worst = deltas(GOLDEN / name)
    assert max(worst.values()) <= TOLERANCE, worst


def test_large_unscaled_scores_are_as_exact_as_float32_allows():
    """T5 with initializer_factor 3: scores up to ~550 (T5 does not divide by √d_k), where one float32 ulp of a
    score is 6e-5. Every layer of every part is within what float32 allows of the float64 truth: half the
    relative error γ(2 d_model + d_kv) of its largest |score| for each block run up to it (tests/tolerance.py's
    weights_bound); the blocks run encoder 0, 1, ..., then the decoder's self- and cross-attention of layer 0, 1,
    .... transformers' own float32 run is held to the same bound (it passes it: the bound is no tighter than
    float32 is for the reference either), and layer 0 of the encoder agrees with it within twice the bound."""
    model = load_model(CONDITIONING / "t5-large-scores")
    terms, n_enc = 2 * model.d_model + model.d_k, model.n_layer
    depth = {"encoder": lambda l: l + 1, "decoder": lambda l: n_enc + 2 * l + 1, "cross": lambda l: n_enc + 2 * l + 2}
    for mine, theirs, truth, largest in attentions(CONDITIONING / "t5-large-scores"):
        for part in PARTS:
            for l in range(len(mine[part])):
                bound = weights_bound(largest[part][l], terms, depth[part](l))
                assert_within(mine[part][l], truth[part][l], bound, f"attn's {part} layer {l}")
                assert_within(theirs[part][l], truth[part][l], bound, f"transformers' {part} layer {l}")
        assert_within(mine["encoder"][0], theirs["encoder"][0], 2 * weights_bound(largest["encoder"][0], terms))


def test_cross_attention_is_target_by_source_and_sums_to_one():
    model = load_model(GOLDEN / "bart")
    r = route.result(model, "le chat est assis sur le tapis", context="the cat sat on the mat")
    assert r.weights.shape == (4, len(r.tokens), len(r.context_tokens))
    assert r.tokens.strings[0] == "</s>" and r.tokens.special[0]  # BART's decoder start token
    assert r.context_tokens.strings == ("<s>", "the", "cat", "sat", "on", "the", "mat", "</s>")
    assert_within(r.weights.sum(-1), 1, softmax_sum_bound(len(r.context_tokens)))
    assert r.masked is None


def test_decoder_part_is_causal_and_encoder_part_needs_no_context():
    model = load_model(GOLDEN / "t5")
    d = route.result(model, "le chat est", context="the cat", part="decoder", layer=0, head=1)
    assert d.weights.shape == (1, 4, 4) and d.masked is not None and np.triu(d.weights[0], 1).max() == 0
    e = route.result(model, "the cat sat", part="encoder")
    assert e.tokens.strings == ("the", "cat", "sat", "</s>") and e.context_tokens is None


def test_parts_of_each_kind_of_model_and_the_refusals(bert, gpt2):
    bart = load_model(GOLDEN / "bart")
    assert model_parts(bart) == tuple(PARTS) and model_parts(bert) == ("encoder",) and model_parts(gpt2) == ("decoder",)
    assert [kind_of(m) for m in (bert, gpt2, bart)] == ["encoder", "decoder", "encoder-decoder"]
    # each kind to its own runner: a self-attention model's layer is a ModelLayer, an encoder–decoder's a PartLayer
    runs = ((bert, None), (gpt2, None), (bart, "x"))
    kinds = [type(route.result(m, "le chat", context=c).source).__name__ for m, c in runs]
    assert kinds == ["ModelLayer", "ModelLayer", "PartLayer"]
    with pytest.raises(ConfigError, match=r"encoder-only.*its only part is encoder"):
        check_part(bert, "cross", "x")
    with pytest.raises(ConfigError, match=r"decoder-only.*its only part is decoder"):
        check_part(gpt2, "cross", None)
    with pytest.raises(ConfigError, match="--context SOURCE"):
        route.result(bart, "le chat")
    assert check_part(bart, "encoder", None) == "encoder" and check_part(bart, None, "x") == "cross"
    with pytest.raises(ConfigError, match="--part encoder of bart has 2 layers"):
        route.result(bart, "le chat", layer=2, part="encoder")
    with pytest.raises(ConfigError, match="--part decoder of bart has 2 layers"):
        route.rollout(bart, "le chat", layer=2, context="the cat")


def test_a_texts_own_attention_and_every_layer_go_by_kind(bert, gpt2):
    bart = load_model(GOLDEN / "bart")
    assert [route.own_part(m) for m in (bert, gpt2, bart)] == ["encoder", "decoder", "encoder"]
    own = route.result(bart, "le chat", part=route.own_part(bart))  # attn compare --model's row
    assert own.tokens.strings == route.result(bart, "x", context="le chat").context_tokens.strings
    shown, steps = route.layer_of(gpt2, "le chat", layer=0)
    assert np.array_equal(steps.weights, shown.weights) and shown.source.layer == 0
    layers = route.page_attention(gpt2, route.result(gpt2, "le chat"), None, None)  # a page: one pass, by kind
    assert layers.weights.shape[:2] == (gpt2.n_layer, gpt2.n_head) and layers.masked is not None
    assert layers.tokens.strings == route.result(gpt2, "le chat").tokens.strings
    cross = route.result(bart, "le chat", context="the cat")
    assert set(route.page_attention(bart, cross, None, None).parts) == set(PARTS)
    assert set(route.page_attention(bart, own, None, None).parts) == {"encoder"}  # no source: the encoder alone
    assert [route.kind(m).reads_source for m in (bert, gpt2, bart)] == [False, False, True]


def test_a_multilingual_marian_asks_for_the_language_token(tmp_path):
    folder = tmp_path / "opus-mt-en-mul"
    shutil.copytree(GOLDEN / "marian", folder)
    tok = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    tok["model"]["vocab"][">>fra<<"] = tok["model"]["vocab"].pop("flèche")  # the id stays inside the table
    (folder / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    model = load_model(folder)
    with pytest.raises(ModelError, match=r"multilingual.*>>fra<<.*--context '>>fra<< the cat'"):
        route.result(model, "le chat", context="the cat")
    assert route.result(model, "le chat", context=">>fra<< the cat").context_tokens.strings[0] == ">>fra<<"


def test_rollout_and_heads_of_a_part():
    model = load_model(GOLDEN / "marian")
    ro = route.rollout(model, "le chat est", context="the cat", part="decoder")
    assert ro.matrix.shape == (4, 4) and np.triu(ro.matrix, 1).max() == 0
    assert_within(ro.matrix.sum(-1), 1, rollout_sum_bound(4, len(ro.weights)))
    doc = route.heads(model, "the cat sat", part="encoder")
    assert doc["part"] == "encoder" and len(doc["rows"]) == 2 * 4 and doc["causal"] is False


def test_t5_buckets_and_marian_sinusoids_as_transformers_builds_them():
    # transformers' T5Attention._relative_position_bucket for these offsets (equal on 200 × 200 at T5's 32/128 too)
    assert position_buckets(1, 12, True, 8, 16)[0].tolist() == [0, 5, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7]
    assert position_buckets(12, 1, False, 8, 16)[:, 0].tolist() == [0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6]
    table = sinusoids(3, 6)
    assert table[0].tolist() == [0, 0, 0, 1, 1, 1] and table.dtype == np.float32


def test_cross_heads_have_the_statistics_of_an_alignment():
    model = load_model(GOLDEN / "bart")
    doc = route.heads(model, "le chat est", context="the cat sat")
    assert (
        doc["part"] == "cross"
        and set(doc["stats"]) == set(CROSS_STATS)
        and set(doc["undefined"])
        == {
            "diagonal",
            "previous",
        }
    )
    assert doc["tokens"][0] == "</s>" and doc["context_tokens"] == ["<s>", "the", "cat", "sat", "</s>"]
    cross = np.stack([s.weights for s in seq2seq_forward(model, [0, 4, 5, 6, 2], [2, 0, 7, 8, 9]).cross])
    assert len(doc["rows"]) == cross.shape[0] * cross.shape[1]
    for r in doc["rows"]:
        assert r["label"] in (*CROSS_LABELS, "") and 0 <= r["diagonality"] <= 1 and 0 <= r["monotonic"] <= 1


def test_cross_head_statistics_by_hand():
    diagonal = np.eye(4)[None, None]  # a target that follows the source word for word
    reverse = np.eye(4)[::-1][None, None]
    sink = np.zeros((1, 1, 3, 5))
    sink[..., -1] = 1
    s = {name: cross_head_stats(w) for name, w in (("diagonal", diagonal), ("reverse", reverse), ("sink", sink))}
    assert s["diagonal"]["diagonality"][0, 0] == 1 and s["diagonal"]["monotonic"][0, 0] == 1
    assert s["reverse"]["diagonality"][0, 0] == 0 and s["reverse"]["monotonic"][0, 0] == 0
    assert s["sink"]["last-token"][0, 0] == 1 and s["sink"]["entropy"][0, 0] == 0
    assert [label_heads(x, CROSS_PATTERNS)[0][0] for x in s.values()] == ["diagonal-alignment", "", "last-token/sink"]
    uniform = cross_head_stats(np.full((1, 1, 2, 4), 0.25))
    assert uniform["broadness"][0, 0] == 1 and label_heads(uniform, CROSS_PATTERNS) == [["broad"]]


def test_cross_rollout_flows_through_the_encoder_and_the_decoder():
    model = load_model(GOLDEN / "t5")
    ro = route.rollout(model, "le chat est", context="the cat sat")
    run = seq2seq_forward(model, ro.context_tokens.ids, ro.tokens.ids)
    t, s = cross_rollout(run.encoder.weights, [a.weights for a in run.decoder], [a.weights for a in run.cross], 1)
    # [T | S]'s rows: each layer's ½ Â (float64, renormalised) and ½ C̄ E, where C̄'s float32 softmax rows sum to 1
    # within softmax_sum_bound (a mean of h heads γₕ more) and E's rows within rollout_sum_bound: a convex mix
    # of rows keeps the worst of them, and the test's sums add γ more
    (h, m, n), layers = run.cross[0].weights.shape, len(run.encoder.weights)
    rows = softmax_sum_bound(n, U32) + gamma(h, U64) + rollout_sum_bound(n, layers) + gamma(2 * (m + n) + 2, U64)
    assert_within(t.sum(-1) + s.sum(-1), 1, rows)  # every bit of each target position comes from somewhere
    assert_within(s.sum(-1), 1 - 0.5**2, rows)  # the source's share: two ½ residuals
    expected = s / s.sum(-1, keepdims=True)  # non-negative: an n-term sum and a division, relatively, twice
    assert_within(ro.matrix, expected, 2 * gamma(n + 1, U64) * expected)
    assert ro.matrix.shape == (len(ro.tokens), len(ro.key_tokens)) and ro.weights.shape == (2, 4, 4, 4)
    # one decoder layer by hand: Â = ½ mean + ½ I over the target, then half stays, half comes through C E
    a_hat = (run.decoder[0].weights.mean(0) + np.eye(4)) / 2
    e = rollout(run.encoder.weights)
    c = 0.5 * (a_hat @ np.zeros((4, 4))) + 0.5 * run.cross[0].weights.astype(np.float64).mean(0) @ e
    by_hand = c / c.sum(-1, keepdims=True)
    # non-negative, in float64 as the library takes them (E the same function's): a mean of h heads, an n-term
    # product, the row sum and the division, relatively, on each side
    got = route.rollout(model, "le chat est", layer=0, context="the cat sat").matrix
    assert_within(got, by_hand, 2 * gamma(h + 2 * n + 3, U64) * by_hand)


@pytest.mark.parametrize("name", SEQ2SEQ)
def test_cross_steps_take_q_from_the_decoder_and_k_v_from_the_encoder(name):
    model = load_model(GOLDEN / name)
    target = json.loads((GOLDEN / name / "pairs.json").read_text(encoding="utf-8"))["short"]["target"]
    r = route.result(model, target, context="the cat")  # 2 to 4 source tokens, 8 or 9 target
    assert r.x_context is not None and r.projections is not None
    encoded = forward(model, r.context_tokens.ids).final
    np.testing.assert_array_equal(r.x_context, encoded)  # the keys' and values' input: the encoder's output
    assert r.x.shape[0] == len(r.tokens) != len(r.context_tokens)

    def heads(a):  # [n, d_model] -> [h, n, d_k]
        return a.reshape(len(a), r.config.heads, -1).transpose(1, 0, 2)

    p = r.projections
    for got, x, w, b in (
        (r.q, r.x, p.w_q, r.params["b_Q"]),
        (r.k, r.x_context, p.w_k, r.params["b_K"]),
        (r.v, r.x_context, p.w_v, r.params["b_V"]),
    ):  # two float32 products of the same x, w and b (attn's and NumPy's here), each within its bound of the exact
        assert_within(got, heads(x @ w + b), 2 * heads(affine_bound(x, w, b)), "x W + b")
    titles = [s.formula for s in r.source.steps(r)]
    assert "(from the decoder)" in titles[2] and "X_context W_K" in titles[3] and "X_context W_V" in titles[4]


def test_mbart_takes_the_target_language_code_first_and_its_decoder_starts_from_it():
    model = load_model(GOLDEN / "mbart")
    with pytest.raises(ModelError, match=r"multilingual: its decoder starts .* en_XX fr_XX \(2\).*'en_XX le chat'"):
        route.result(model, "le chat", context="the cat")
    r = route.result(model, "fr_XX le chat", context="the cat")
    assert r.tokens.strings == ("fr_XX", "le", "chat", "</s>") and r.tokens.special == (True, False, False, True)
    assert r.context_tokens.strings == ("the", "cat", "</s>", "en_XX")  # the tokenizer's source language
    assert target_labels(model, "fr_XX le chat").strings == ("le", "chat", "</s>", "fr_XX")  # as tgt_lang makes them
    french = route.result(
        model, "fr_XX le chat", context="fr_XX the cat", part="encoder"
    )  # a source's code replaces it
    assert french.tokens.strings == ("the", "cat", "</s>", "fr_XX")


def test_a_decoder_with_other_heads_than_its_encoder_shows_each_parts_own():
    """BART with 4 encoder heads and 2 decoder heads (d_k 8 and 16), as transformers runs it."""
    model = load_model(GOLDEN / "bart-heads")
    cross = route.result(model, "le chat est", context="the cat sat")
    assert cross.weights.shape[0] == 2 and cross.config.d_k == 16 and cross.config.heads == 2
    assert "decoder 2 heads" in cross.source.caption(cross)[0]
    encoder = route.result(model, "the cat sat", part="encoder", head=3)
    assert encoder.weights.shape[0] == 1 and encoder.config.d_k == 8
    with pytest.raises(ConfigError, match=r"head 3 is out of range: --part decoder of bart-heads has 2 heads"):
        route.result(model, "le chat", context="the cat", part="decoder", head=3)
    doc = route.heads(model, "le chat est", context="the cat sat")
    assert doc["n_head"] == 2 and len(doc["rows"]) == 2 * 2
