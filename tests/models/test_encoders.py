"""The encoder families beyond a single text: sentence pairs against transformers (token types, the pair
template), the refusal of a config whose architectures name another model_type, RoBERTa's positions and
ALBERT's shared layers, on the golden folders of tests/models/golden/ (tools/golden_encoders.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attncli.models import ModelError, encode, forward, load_model
from tests.models.test_golden import GOLDEN, TOLERANCE

PAIRED = sorted(p.name for p in GOLDEN.iterdir() if (p / "pair.json").is_file())


def test_every_encoder_family_has_a_golden_pair():
    assert PAIRED == [
        "albert",
        "camembert",
        "deberta-v2",
        "deberta-v3",
        "distilbert",
        "electra",
        "modernbert",
        "mpnet",
        "roberta",
        "xlm-roberta",
    ]


@pytest.mark.parametrize("name", PAIRED)
def test_a_sentence_pair_equals_transformers(name):
    folder = GOLDEN / name
    model, reference = load_model(folder), np.load(folder / "reference.npz")
    text, pair = json.loads((folder / "pair.json").read_text(encoding="utf-8"))
    tokens = encode(model, text, pair)
    assert list(tokens.ids) == reference["pair_ids"].tolist()  # the tokenizer's pair template
    assert list(tokens.types) == reference["pair_type_ids"].tolist()  # 0 then 1 (RoBERTa, XLM-R: all 0)
    assert tokens.second is not None and tokens.types[tokens.second] == max(tokens.types)
    mine, theirs = np.stack(forward(model, tokens.ids, types=tokens.types).weights), reference["pair"]
    assert mine.shape == theirs.shape and np.abs(mine - theirs).max() <= TOLERANCE
    assert theirs.max(axis=-1).mean() > 0.3  # far from uniform: a wrong position or type would show


@pytest.mark.parametrize("name", PAIRED)
def test_special_tokens_are_the_ones_the_template_adds(name):
    model = load_model(GOLDEN / name)
    tokens = encode(model, "time flies")
    assert tokens.special[0] and tokens.special[-1] and not any(tokens.special[1:-1])


def _relabelled(tmp_path: Path, name: str, **config) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for f in (GOLDEN / name).iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    c = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(c | config))
    return folder


def test_a_roberta_checkpoint_labelled_bert_is_refused_naming_both(tmp_path):
    folder = _relabelled(tmp_path, "roberta", model_type="bert")
    with pytest.raises(ModelError, match=r"model_type 'bert' but architectures 'RobertaForMaskedLM', a roberta model"):
        load_model(folder)


def test_an_unknown_architecture_name_is_not_refused(tmp_path):
    model = load_model(_relabelled(tmp_path, "roberta", architectures=["MyRobertaLikeModel"]))
    assert model.family.name == "roberta"


def test_roberta_positions_start_after_the_padding_index():
    model = load_model(GOLDEN / "roberta")
    assert model.hp["pad"] == 1
    assert model.max_positions == model.config["max_position_embeddings"] - 2  # rows 0 and 1 are never a text's
    with pytest.raises(ModelError, match=r"takes at most 128 \(max_position_embeddings\)"):
        encode(model, " ".join(["time"] * 127))


def test_albert_layers_share_one_set_of_weights():
    model = load_model(GOLDEN / "albert")
    ids = encode(model, "time flies").ids
    steps = [forward(model, ids, steps_layer=l).steps for l in range(model.n_layer)]
    assert steps[0] is not None and steps[1] is not None
    assert np.array_equal(steps[0].w_q, steps[1].w_q) and not np.array_equal(steps[0].x, steps[1].x)


def test_albert_refuses_inner_groups(tmp_path):
    with pytest.raises(ModelError, match="inner_group_num 2 is not supported"):
        load_model(_relabelled(tmp_path, "albert", inner_group_num=2))


@pytest.mark.parametrize(
    ("name", "label", "architecture"),
    [
        ("llama", "mistral", "LlamaForCausalLM"),
        ("qwen2", "llama", "Qwen2ForCausalLM"),
        ("gemma2", "gemma", "Gemma2ForCausalLM"),
        ("qwen3", "qwen2", "Qwen3ForCausalLM"),
        ("gpt_neox", "gpt2", "GPTNeoXForCausalLM"),
    ],
)
def test_a_decoder_checkpoint_labelled_as_another_decoder_is_refused(tmp_path, name, label, architecture):
    """Qwen2 labelled llama would run without its q, k, v biases; Gemma 2 labelled gemma without its soft-cap."""
    folder = _relabelled(tmp_path, name, model_type=label)
    with pytest.raises(ModelError, match=rf"model_type '{label}' but architectures '{architecture}'"):
        load_model(folder)
