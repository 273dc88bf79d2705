"""What the decoders do, against transformers: greedy ids with a KV cache, the logit lens, head ablation.

tests/models/golden/*/behaviour.json come from tools/golden_behaviour.py (torch 2.13.0, transformers 5.23.0) on
the golden folders of tools/golden_decoders.py: every decoder family, the Qwen 2, Mistral and Gemma 2 ones with a
sliding window of 8 tokens, shorter than the prompt and the 24 new tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attncli.models import encode, forward, load_model
from attncli.models.files.hparams import ModelError
from attncli.models.interpret.ablate import ablate, ablate_document
from attncli.models.interpret.lens import lens_arrays, lens_document, written_probabilities
from attncli.models.network import model as model_module
from attncli.models.network import unembed as unembed_module
from attncli.models.network.unembed import logits, probabilities
from attncli.models.runs.generate import Generation, decode
from attncli.models.runs.run import _encode
from tests.tolerance import matmul_bound

GOLDEN = Path(__file__).parent / "golden"
DECODERS = sorted(p.parent.name for p in GOLDEN.glob("*/behaviour.json"))
# float32 through two tiny layers: probabilities differ from transformers' by a few ulps of 1 (~1e-7); the lens'
# softmax over 320 logits of magnitude < 10 keeps that below 1e-6. The ablation deltas are differences of logits of
# magnitude < 10, each within ~1e-6 of transformers': 1e-4 is the issue's contract, 1e-5 what float32 allows.
PROBS = 1e-6
DELTAS = 1e-5


def golden(name: str):
    folder = GOLDEN / name
    return load_model(folder), json.loads((folder / "behaviour.json").read_text(encoding="utf-8"))


def test_every_decoder_family_has_behaviour():
    """Every golden decoder (a *ForCausalLM or *LMHeadModel) has a head in its family and transformers' behaviour
    beside it (`ref/bin/python tools/golden_behaviour.py` writes it, `ref` the environment of tools/reference.py)."""
    causal = [
        p.parent.name
        for p in GOLDEN.glob("*/config.json")
        if any(a.endswith(("CausalLM", "LMHeadModel")) for a in json.loads(p.read_text())["architectures"])
    ]
    assert {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gpt2", "gpt_neox"} <= set(causal)
    assert sorted(causal) == DECODERS
    assert all(load_model(GOLDEN / name).family.head is not None for name in causal)


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_ids_equal_transformers_generate(name):
    model, ref = golden(name)
    ids = encode(model, ref["prompt"]).ids
    assert list(ids) == ref["greedy"]["ids"]
    assert decode(model, ids, ref["greedy"]["max_new_tokens"]) == ref["greedy"]["new"]


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_steps_are_far_from_a_tie(name):
    """Exact ids on any CPU: at every step the top two logits (|logit| < 10) differ by more than 1e-3, a thousand
    times what float32 rounding through two tiny layers moves a logit (~10 · 2⁻²⁴ per operation, tens of them)."""
    model, ref = golden(name)
    ids = ref["greedy"]["ids"] + ref["greedy"]["new"]
    steps = logits(model, forward(model, ids).final)[len(ref["greedy"]["ids"]) - 1 : -1]  # [new, vocab]
    top = np.sort(steps, axis=-1)
    assert np.abs(steps).max() < 10 and (top[:, -1] - top[:, -2]).min() > 1e-3


@pytest.mark.parametrize("name", DECODERS)
def test_lens_equals_transformers_hidden_states_through_the_head(name):
    model, ref = golden(name)
    probs = probabilities(lens_arrays(model, encode(model, ref["prompt"]).ids))  # [L + 1, n, vocab]
    top_ids, top_probs = np.array(ref["lens"]["top_ids"]), np.array(ref["lens"]["top_probs"])
    assert probs.shape[:2] == top_ids.shape[:2] == (model.n_layer + 1, len(ref["greedy"]["ids"]))
    np.testing.assert_allclose(np.take_along_axis(probs, top_ids, axis=-1), top_probs, atol=PROBS)
    np.testing.assert_allclose(-np.sort(-probs, axis=-1)[..., : ref["lens"]["k"]], top_probs, atol=PROBS)


@pytest.mark.parametrize("name", DECODERS)
def test_each_written_token_has_the_probability_its_step_gave_it(name):
    """The first written token's probability is transformers' lens at the prompt's last position, last layer; each
    greedy token is the most probable of its step (`attn explore` shows these as it steps through them)."""
    model, ref = golden(name)
    prompt, new = ref["greedy"]["ids"], ref["greedy"]["new"]
    got = written_probabilities(model, prompt + new, len(prompt))  # [new]
    assert got.shape == (len(new),)
    assert abs(got[0] - ref["lens"]["top_probs"][-1][-1][0]) <= PROBS
    every = probabilities(logits(model, forward(model, prompt + new).final))  # [n, vocab]
    np.testing.assert_allclose(got, every[len(prompt) - 1 : -1].max(axis=-1), atol=PROBS)  # other rows, other sums


def test_the_lens_and_the_ablation_of_a_generation_s_tokens():
    """Given a run's tokens (`attn explore` has them), the lens is of the whole sequence, marked as written; the
    ablation is of the text before the first written token, as `attn ablate TEXT` computes it (exactly: the same
    pass); `progress` hears of each layer."""
    model, ref = golden("llama")
    text = ref["prompt"]
    tokens, _ = _encode(model, text, None, Generation(3))
    assert list(tokens.ids) == ref["greedy"]["ids"] + ref["greedy"]["new"][:3]
    lens = lens_document(model, text, 5, tokens)
    assert lens["tokens"] == list(tokens.strings) and lens["generated"] == tokens.generation()
    alone = lens_document(model, text, 5)
    assert "generated" not in alone and len(alone["rows"]) == (model.n_layer + 1) * len(ref["greedy"]["ids"])
    last = {r["position"]: r for r in lens["rows"] if r["layer"] == model.n_layer}
    assert [last[i]["top_ids"][0] for i in range(len(ref["greedy"]["ids"]) - 1, len(tokens) - 1)] == list(
        tokens.ids[len(ref["greedy"]["ids"]) :]
    )
    heard: list[tuple[int, int]] = []
    found = ablate_document(model, text, tokens=tokens, progress=lambda done, total: heard.append((done, total)))
    assert found == ablate_document(model, text)
    assert heard == [(1, 2), (2, 2)] and found["target"]["id"] == ref["greedy"]["new"][0]


@pytest.mark.parametrize("mode", ["zero", "mean"])
@pytest.mark.parametrize("name", DECODERS)
def test_ablation_deltas_equal_transformers_with_a_pre_hook(name, mode):
    model, ref = golden(name)
    heads = [(l, h) for l in range(model.n_layer) for h in range(model.n_head)]
    got = ablate(model, encode(model, ref["prompt"]).ids, heads, mode=mode)
    assert got["target"] == ref["ablate"]["target"]
    mine = {(r["layer"], r["head"]): r for r in got["rows"]}
    for r in ref["ablate"][mode]:
        m = mine[(r["layer"], r["head"])]
        assert abs(m["delta_logit"] - r["delta_logit"]) <= DELTAS, (r, m)
        assert abs(m["delta_logprob"] - r["delta_logprob"]) <= DELTAS, (r, m)
    assert [abs(r["delta_logprob"]) for r in got["rows"]] == sorted(  # ranked by Δ log-prob by default
        (abs(r["delta_logprob"]) for r in got["rows"]), reverse=True
    )


@pytest.mark.parametrize("name", ["mistral", "qwen3", "gpt2"])
def test_a_converted_gguf_predicts_as_its_safetensors(name, tmp_path):
    """A GGUF without output.weight is tied, as llama.cpp reads it: the same lens and the same written tokens."""
    from tests.models.gguf_files import from_folder
    from tests.models.test_gguf import CONVERTED, _windowless

    arch, bos = CONVERTED[name]
    folder = _windowless(name, tmp_path)
    model, same = load_model(from_folder(folder, tmp_path / f"{name}.gguf", arch, add_bos=bos)), load_model(folder)
    ids = encode(same, "time flies like an arrow").ids
    np.testing.assert_array_equal(lens_arrays(model, ids), lens_arrays(same, ids))
    assert decode(model, ids, 6) == decode(same, ids, 6)


def test_an_untied_gguf_head_is_read_and_priced(tmp_path, monkeypatch):
    """A GGUF with its own output.weight predicts through it (not the token embeddings), and its bytes count
    against ATTN_MAX_MEMORY with the rest of the weights: a budget that holds the tied file whole, not the untied
    one, has the untied head read a chunk at a time (the same logits, to the products' bound); a budget below a
    chunk of it and a layer refuses the file."""
    from tests.models.gguf_files import from_folder
    from tests.models.test_gguf import CONVERTED, _windowless

    arch, bos = CONVERTED["mistral"]
    folder = _windowless("mistral", tmp_path)
    tied = load_model(from_folder(folder, tmp_path / "tied.gguf", arch, add_bos=bos))
    head = -tied.weights[tied.family.word][::-1].copy()  # [vocab, d_model]: another matrix than the word table
    path = from_folder(folder, tmp_path / "untied.gguf", arch, add_bos=bos, head=head)
    untied = load_model(path)
    assert untied.unembed == untied.family.head[0] != tied.unembed
    assert untied.weights.nbytes == tied.weights.nbytes + 4 * head.size
    ids = encode(untied, "time flies like an arrow").ids
    x = np.ones((1, untied.d_model), np.float32)
    np.testing.assert_allclose(logits(untied, x), x @ head.T, rtol=0, atol=2 * matmul_bound(x, head.T).max())
    assert not np.array_equal(lens_arrays(untied, ids), lens_arrays(tied, ids))
    n, m = len(ids), untied
    arrays = m.n_layer * (3 * m.n_head * n * n + 8 * n * m.d_model) * 4  # folder.check_run's price of the run
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(untied.weights.nbytes + arrays - 1))  # a byte short of all of it
    streamed = load_model(path)
    encode(streamed, "time flies like an arrow")  # the run priced: the untied head no longer fits whole
    assert not streamed.weights.whole(streamed.unembed) and load_model(tmp_path / "tied.gguf").weights.whole(
        tied.unembed
    )
    monkeypatch.setattr(model_module, "TABLE_CHUNK", 4 * 3 * untied.d_model)  # three rows a chunk
    monkeypatch.setattr(unembed_module, "TABLE_CHUNK", 4 * 3 * untied.d_model)
    np.testing.assert_allclose(logits(streamed, x), x @ head.T, rtol=0, atol=2 * matmul_bound(x, head.T).max())
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(streamed.weights.least() - 1))  # (the vocabulary itself still fits)
    with pytest.raises(
        ModelError, match=r"needs .* for its weights as float32, more than ATTN_MAX_MEMORY .* even a layer at a time"
    ):
        load_model(path)


def _with_head(name: str, folder: Path, tie: bool, head: bool) -> Path:
    """A copy of golden `name` whose config says tie_word_embeddings `tie`, given (`head`) an lm_head.weight of
    other values than its word table."""
    import shutil

    from safetensors.numpy import load_file, save_file

    shutil.copytree(GOLDEN / name, folder)
    tensors = load_file(str(folder / "model.safetensors"))
    word = next(k for k in tensors if k.endswith(load_model(GOLDEN / name).family.word))
    if head:
        tensors["lm_head.weight"] = -tensors[word][::-1].copy()
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps(config | {"tie_word_embeddings": tie}), encoding="utf-8")
    return folder


@pytest.mark.parametrize("tie", [True, False])
def test_a_saved_head_is_the_head_whatever_tie_word_embeddings_says(tie, tmp_path):
    """transformers 5 does not tie an lm_head.weight saved with other values than the word table: neither does
    attn; tied and none saved, the word table; untied and none saved, no head (said in one line)."""
    model = load_model(_with_head("llama", tmp_path / "llama", tie, head=True))
    assert model.unembed == "lm_head.weight"
    np.testing.assert_array_equal(model.weights["lm_head.weight"], -model.weights[model.family.word][::-1])
    bare = load_model(_with_head("llama", tmp_path / "bare", tie, head=False))
    assert bare.unembed == (bare.family.word if tie else None)
    if not tie:
        with pytest.raises(ModelError, match=r"tie_word_embeddings is false and the checkpoint lacks lm_head\.weight"):
            lens_arrays(bare, [1, 2])


def test_forced_tokens_of_the_settings_are_forced_as_transformers_forces_them(tmp_path):
    """forced_bos_token_id: the token after a one-token input (transformers' cur_len 1); forced_eos_token_id: the
    last of the N; where both fall on one token, the end (its processor runs last); generation_config.json's
    setting before config.json's."""
    import shutil

    folder = tmp_path / "llama"
    shutil.copytree(GOLDEN / "llama", folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps(config | {"forced_bos_token_id": 7, "forced_eos_token_id": 9}))
    model, base = load_model(folder), load_model(GOLDEN / "llama")
    assert decode(base, [5], 1) != [7] and decode(base, [5, 7], 3)[-1] != 9  # what forcing changes
    assert decode(model, [5], 4) == [7, *decode(base, [5, 7], 2), 9]
    assert decode(model, [5, 6], 3) == [*decode(base, [5, 6], 2), 9] and decode(model, [5], 1) == [9]
    (folder / "generation_config.json").write_text(json.dumps({"forced_eos_token_id": None}))
    assert decode(load_model(folder), [5], 4) == [7, *decode(base, [5, 7], 3)]
