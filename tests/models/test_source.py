"""`ModelLayer`: a real model's layer as the source of an AttentionResult; its JSON config keeps today's keys."""

from __future__ import annotations

from attncli.models import load_model
from attncli.models.runs.run import model_result
from attncli.models.runs.source import ModelLayer, describe
from attncli.pipeline.steps import steps
from attncli.render.show import caption
from tests.model_fixtures import make_bert

TEXT = "time flies like an arrow"


def test_a_model_layer_names_its_model_layer_and_head(bert):
    r = model_result(bert, TEXT, layer=0, head=1)
    assert r.source == ModelLayer(bert, 0, 1)
    assert r.head_index(0) == 1 and r.source.heads_shown(r) == " · layer 0, head 1"
    assert r.source.caption(r)[0] == describe(bert)
    assert r.source.compare_note("bert-tiny") == describe(bert) + "; its own tokenizer, layer 0, head 1"


def test_a_model_layers_config_record_is_trained_and_unseeded(bert):
    record = _record(model_result(bert, TEXT, layer=0, head=1))
    assert list(record)[8:] == ["positional", "projection", "temperature", "seed", "model", "layer", "head"]
    assert (record["tokenizer"], record["positional"], record["projection"], record["seed"]) == (
        "bert-tiny",
        "learned",
        "trained",
        None,
    )
    assert (record["model"], record["layer"], record["head"]) == ("bert-tiny", 0, 1)
    assert "head" not in _record(model_result(bert, TEXT))


def test_a_model_layers_steps_are_the_models_own(gpt2):
    r = model_result(gpt2, TEXT)
    names = [s.name for s in steps(r)]
    assert names == ["x", "q", "k", "v", "scores", "masked_scores", "weights", "head_outputs", "output"]
    assert steps(r)[0].formula.startswith("X = LN_1(h): layer 1's")


def test_a_model_caption_escapes_its_folder_name(tmp_path):
    model = load_model(make_bert(tmp_path / "bert\x1b]0;x\x07"))
    text = caption(model_result(model, TEXT)).plain
    assert "\x1b" not in text and text.startswith("bert\\x1b]0;x\\x07: bert, 2 layers")


def _record(result):
    return result.source.config_record(result)
