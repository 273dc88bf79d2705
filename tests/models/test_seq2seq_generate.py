"""An encoder–decoder writes its target as transformers' `generate(do_sample=False)` does, with a key/value cache.

tests/models/golden/*/generation.json come from tools/golden_behaviour.py (torch 2.13.0, transformers 5.23.0) on
the encoder–decoder folders of tools/golden_seq2seq.py: BART, mBART, Marian, T5, mT5 (and BART and Marian with
fewer decoder heads), each "from-start" (the decoder start token alone, TEXT "") and "continued" (after the first
words of a target), 24 new tokens with the folder's own settings (BART's, mBART's and Marian's forced EOS last).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attncli.errors import ConfigError
from attncli.models import encode, load_model
from attncli.models.interpret.lens import lens_document, target_lens_arrays
from attncli.models.network.attention import cached
from attncli.models.network.unembed import probabilities
from attncli.models.runs import route
from attncli.models.runs.encdec import decode_target, generation_start, seq2seq_forward
from attncli.models.runs.generate import Generation, KVCache
from attncli.models.runs.seq2seq import decoder_tokens, encoder_tokens, written_target
from tests.tolerance import U32, matmul_bound

GOLDEN = Path(__file__).parent / "golden"
SEQ2SEQ = sorted(p.parent.name for p in GOLDEN.glob("*/generation.json"))
# A logit comes through two encoder and two decoder layers of width 32 in float32: a few tens of operations, each
# rounding by u = 2⁻²⁴ relative to values no larger than the largest logit (T5's reach 22), so attn's and
# transformers' logits (each within that of the exact ones, summed in other orders) differ by at most 64 u of the
# largest logit: 8e-5 for T5, under 1/10 of the smallest gap between the top two logits (1e-3, checked below).
ROUNDINGS = 64 * U32


def golden(name: str):
    folder = GOLDEN / name
    return load_model(folder), json.loads((folder / "generation.json").read_text(encoding="utf-8"))["cases"]


def golden_lens(name: str):
    folder = GOLDEN / name
    return load_model(folder), json.loads((folder / "generation.json").read_text(encoding="utf-8"))["lens"]


def test_every_encoder_decoder_has_transformers_generation():
    seq2seq = [p.parent.name for p in GOLDEN.glob("*/config.json") if load_model(p.parent).family.decoder]
    assert {"bart", "mbart", "marian", "t5", "mt5"} <= set(seq2seq)
    assert sorted(seq2seq) == SEQ2SEQ


@pytest.mark.parametrize("name", SEQ2SEQ)
def test_written_target_equals_transformers_generate(name):
    """The decoder input attn makes of TEXT (its teacher-forced one without the end token, or the start token
    alone) and the ids it writes after it are transformers'."""
    model, cases = golden(name)
    for case in cases:
        assert list(encode(model, case["source"]).ids) == case["source_ids"]
        t = written_target(model, case["text"], case["source"], Generation(case["max_new_tokens"]))
        assert list(t.ids[: t.generated]) == case["decoder_ids"], case["case"]
        assert list(t.ids[t.generated :]) == case["new"], case["case"]
        assert decode_target(model, case["source_ids"], case["decoder_ids"], case["max_new_tokens"]) == case["new"]


@pytest.mark.parametrize("name", SEQ2SEQ)
def test_one_row_a_pass_with_the_cache_gives_transformers_logits_at_every_step(name):
    """The decoder run one token a pass with its self-attention cache and the cross-attention's keys and values
    made once (T5's relative bias and the learned or sinusoidal positions at the cached offset) has transformers'
    logits at every step, and its steps are far from a tie: the same ids on any CPU."""
    model, cases = golden(name)
    dec = model.family.decoder
    for case in cases:
        memory = seq2seq_forward(model, case["source_ids"], case["decoder_ids"]).encoder.final
        sequence = case["decoder_ids"] + case["new"]
        cache, rows, got = KVCache(model.hp["n_dec_layer"], len(sequence)), case["decoder_ids"], []
        with cached(cache):
            for token in [None, *case["new"][:-1]]:
                y = dec.embed(model, np.asarray(rows if token is None else [token]))
                for l in range(model.hp["n_dec_layer"]):
                    y, _ = dec.self_attention(model, l, y)
                    y, _ = dec.cross_attention(model, l, y, memory)
                    y = dec.mlp(model, l, y)
                cache.advance(len(y))
                got.append(dec.logits(model, y[-1:])[0])
        top_ids, top_logits = np.array(case["top_ids"]), np.array(case["top_logits"])
        bound = ROUNDINGS * np.abs(top_logits).max()
        np.testing.assert_allclose(np.take_along_axis(np.array(got), top_ids, axis=-1), top_logits, atol=bound)
        forced = len(case["new"]) == case["max_new_tokens"] and model.config.get("forced_eos_token_id") is not None
        chosen = top_logits[: len(top_logits) - forced]  # the last step of a forced end is not the model's choice
        assert (chosen[:, 0] - chosen[:, 1]).min() > max(1e-3, 10 * bound)


def test_the_cached_pass_equals_the_teacher_forced_pass_of_the_whole_target():
    """The weights shown are one pass over the whole target: the teacher-forced one of the same ids."""
    model, cases = golden("t5")
    case = cases[1]
    r = route.result(model, case["text"], context=case["source"], part="cross", generate=Generation(6))
    run = seq2seq_forward(model, case["source_ids"], r.tokens.ids)
    np.testing.assert_array_equal(r.weights, run.cross[-1].weights)
    assert r.tokens.labels()[r.tokens.generated :] == ["›" + s for s in r.tokens.drawn()[r.tokens.generated :]]


def test_start_token_is_transformers_decoder_start_or_bos():
    """BART and T5 start from decoder_start_token_id, mBART (none) from its bos_token_id, as transformers picks."""
    assert generation_start(load_model(GOLDEN / "bart")) == 2
    assert generation_start(load_model(GOLDEN / "t5")) == 0
    assert generation_start(load_model(GOLDEN / "mbart")) == 0


def test_forced_end_is_the_last_token_and_an_end_stops_early():
    """BART's config forces its EOS as the N-th token (transformers applies forced_eos_token_id by default);
    Marian-heads' continued target ends at once, its EOS the model's own choice."""
    model, cases = golden("bart")
    new = decode_target(model, cases[0]["source_ids"], [2], 3)
    assert len(new) == 3 and new[-1] == 2
    model, cases = golden("marian-heads")
    assert cases[1]["new"] == [0] and decode_target(model, cases[1]["source_ids"], cases[1]["decoder_ids"], 9) == [0]


def test_sampling_is_seeded_and_keeps_the_forced_end():
    model, cases = golden("bart")
    how = Generation(5, temperature=2.0, seed=3)
    first = decode_target(model, cases[0]["source_ids"], [2], 5, how)
    assert first == decode_target(model, cases[0]["source_ids"], [2], 5, how)
    assert first[-1] == 2 or 2 in first[:-1]


def test_heads_of_a_written_target_name_what_was_written():
    model, cases = golden("marian")
    doc = route.heads(model, "", context=cases[0]["source"], part="decoder", generate=Generation(4))
    assert doc["generated"]["ids"] == [*cases[0]["new"][:3], 0]
    assert len(doc["tokens"]) == 5


def test_the_encoder_part_is_the_source_generate_or_not():
    model, cases = golden("t5")
    r = route.result(model, "", context=cases[0]["source"], part="encoder", generate=Generation(3))
    plain = route.result(model, cases[0]["source"], part="encoder")
    np.testing.assert_array_equal(r.weights, plain.weights)


def test_teacher_forcing_still_needs_a_target():
    model, cases = golden("t5")
    with pytest.raises(Exception, match="empty text"):
        route.result(model, "", context=cases[0]["source"])
    with pytest.raises(ConfigError, match="--context"):
        route.result(model, "le", generate=Generation(3))


def test_t5_v1_1_reads_its_own_head_unscaled(tmp_path):
    """A T5 saved with tie_word_embeddings false (T5 v1.1, Flan-T5) and its own lm_head.weight: the logits are
    RMSNorm(y) through that head, not scaled by d_model^-0.5 (transformers 5's scale_decoder_outputs false)."""
    from tests.models.test_behaviour import _with_head

    model = load_model(_with_head("t5", tmp_path / "t5", tie=False, head=True))
    assert model.unembed == "lm_head.weight" and model.hp["scale_decoder_outputs"] is False
    y = np.ones((1, model.d_model), np.float32)
    normed = y / np.sqrt(np.mean(y**2) + model.eps) * model.weights["decoder.final_layer_norm.weight"]
    head = model.weights["lm_head.weight"]
    got = model.family.decoder.logits(model, y)
    # the product's bound twice (attn's and this one), and twice more for the norm's few roundings of each term
    np.testing.assert_allclose(got, normed @ head.T, rtol=0, atol=4 * matmul_bound(normed, head.T).max())


@pytest.mark.parametrize("name", SEQ2SEQ)
def test_the_decoders_lens_equals_transformers_decoder_hidden_states_through_its_head(name):
    """Every decoder layer's stream at every target position through the decoder's final norm and head: the
    probabilities of transformers' top ids, and its top ids in its order; the last layer is the model's own.
    A probability moves by at most twice the largest change of a logit (|dp_i| <= p_i (|dl_i| + sum_j p_j |dl_j|)),
    and a logit by at most 64 float32 roundings of the largest (see ROUNDINGS)."""
    model, ref = golden_lens(name)
    source, tokens = encoder_tokens(model, ref["source"]), decoder_tokens(model, ref["text"])
    assert list(tokens.ids) == ref["decoder_ids"]
    probs = probabilities(target_lens_arrays(model, source.ids, tokens.ids))  # [L + 1, m, vocab]
    top_ids, top_probs = np.array(ref["top_ids"]), np.array(ref["top_probs"])
    assert probs.shape[:2] == top_ids.shape[:2] == (model.hp["n_dec_layer"] + 1, len(tokens))
    bound = 2 * ROUNDINGS * ref["max_abs_logit"]
    np.testing.assert_allclose(np.take_along_axis(probs, top_ids, axis=-1), top_probs, rtol=0, atol=bound)
    np.testing.assert_allclose(-np.sort(-probs, axis=-1)[..., : ref["k"]], top_probs, rtol=0, atol=bound)


def test_lens_json_of_an_encoder_decoder_names_its_source_and_decoder_layers():
    model, ref = golden_lens("marian")
    doc = lens_document(model, ref["text"], 3, context=ref["source"])
    assert doc["source"] == ref["source"] and doc["n_layer"] == model.hp["n_dec_layer"]
    assert len(doc["rows"]) == (model.hp["n_dec_layer"] + 1) * len(doc["tokens"])
    assert [r["top_ids"] for r in doc["rows"][-len(doc["tokens"]) :]] == [t[:3] for t in ref["top_ids"][-1]]
    with pytest.raises(ConfigError, match="give it with --context SOURCE"):
        lens_document(model, ref["text"])
    with pytest.raises(ConfigError, match="drop --context"):
        lens_document(load_model(GOLDEN / "gpt2"), "time flies", context="x")
