"""Every encoder family against transformers: the golden folders of tests/models/golden/ (made by
tools/golden_encoders.py with PyTorch) hold tiny random models and transformers' eager output_attentions;
attn's NumPy forward pass must give every layer and head to 1e-5, with no PyTorch here."""

import json
from pathlib import Path

import numpy as np
import pytest

from attncli.models import ModelError, encode, forward, load_model

GOLDEN = Path(__file__).parent / "golden"
FAMILIES = sorted(p.name for p in GOLDEN.iterdir() if (p / "reference.npz").is_file())
CASES = {"short": ("time flies like an arrow", None), "pair": ("time flies like an arrow", "fruit flies like a banana")}
LONG = (
    "the quick brown fox jumps over the lazy dog while time flies like an arrow and fruit flies like a "
    "banana, because attention is all you need when every token sees every other token"
)
TOLERANCE = 1e-5


def test_every_encoder_family_has_a_golden_folder():
    assert FAMILIES == ["albert", "distilbert", "electra", "roberta", "xlm-roberta"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", ["short", "long", "pair"])
def test_attention_equals_transformers(family, case):
    model = load_model(GOLDEN / family)
    ref = np.load(GOLDEN / family / "reference.npz")
    text, pair = CASES.get(case, (LONG, None))
    tokens = encode(model, text, pair)
    assert list(tokens.ids) == ref[f"{case}_ids"].tolist()  # the same tokenizer.json, the same template
    assert list(tokens.types) == ref[f"{case}_type_ids"].tolist()
    run = forward(model, tokens.ids, types=tokens.types if pair is not None else None)
    got, want = np.stack(run.weights), ref[f"{case}_attentions"]
    assert got.shape == want.shape == (model.n_layer, model.n_head, len(tokens), len(tokens))
    assert np.abs(got - want).max() <= TOLERANCE
    assert want.max(axis=-1).mean() > 0.3  # the heads are far from uniform: a wrong position or type would show


def _relabelled(tmp_path, family: str, **config) -> Path:
    folder = tmp_path / family
    folder.mkdir()
    for f in (GOLDEN / family).iterdir():
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
    steps = [forward(model, encode(model, "time flies").ids, steps_layer=l).steps for l in range(model.n_layer)]
    assert all(s is not None for s in steps)
    assert np.array_equal(steps[0].w_q, steps[1].w_q)  # type: ignore[union-attr]
