"""The ways config.json spells the rotary decoders' newer settings, each read as transformers reads it: Gemma 3's
older per-type RoPE keys, Phi-3's "su" for longrope, SmolLM3's NoPE layers; and the settings refused."""

from __future__ import annotations

import json
import shutil

import pytest

from attncli.models import ModelError, load_model
from tests.models.test_golden import GOLDEN, max_delta


def relabelled(tmp_path, name: str, change) -> str:
    """A copy of golden folder `name` whose config.json `change` rewrote (its reference.npz unchanged)."""
    folder = tmp_path / name
    shutil.copytree(GOLDEN / name, folder)
    config = json.loads((folder / "config.json").read_text())
    change(config)
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def test_gemma3_older_rope_keys_are_the_same_ropes(tmp_path, monkeypatch):
    def older(c):  # before transformers 5: rope_theta, rope_local_base_freq, rope_scaling of the global layers
        del c["rope_parameters"], c["layer_types"]
        c |= {"rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "sliding_window_pattern": 2}
        c["rope_scaling"] = {"rope_type": "linear", "factor": 8.0}

    monkeypatch.setattr("tests.models.test_golden.GOLDEN", tmp_path)
    relabelled(tmp_path, "gemma3_text", older)
    assert max_delta("gemma3_text") <= 1e-5


def test_phi3_su_is_longrope(tmp_path, monkeypatch):
    def su(c):
        c["rope_scaling"] = {**c.pop("rope_parameters"), "type": "su"}
        del c["rope_scaling"]["rope_type"]

    monkeypatch.setattr("tests.models.test_golden.GOLDEN", tmp_path)
    relabelled(tmp_path, "phi3", su)
    assert load_model(tmp_path / "phi3").hp["rope"]["type"] == "longrope"
    assert max_delta("phi3") <= 1e-5


def test_smollm3_nope_layers_and_gemma3_rope_per_layer_type():
    smol = load_model(GOLDEN / "smollm3")
    assert smol.hp["ropes"][0] is not None and smol.hp["ropes"][1] is None  # no_rope_layers [1, 0]
    gemma = load_model(GOLDEN / "gemma3_text")
    assert [r["theta"] for r in gemma.hp["ropes"]] == [10000.0, 1000000.0]  # sliding, then global
    assert gemma.hp["windows"] == [8, None]


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("smollm3", lambda c: c.update(no_rope_layers=[1, 2]), "no_rope_layers must be 2 values 0 or 1"),
        ("gemma3_text", lambda c: c.update(use_bidirectional_attention=True), "use_bidirectional_attention"),
        ("phi3", lambda c: c["rope_parameters"].pop("long_factor"), "rope type 'longrope' needs long_factor"),
    ],
)
def test_settings_that_cannot_run_are_refused_in_one_line(tmp_path, name, change, message):
    with pytest.raises(ModelError, match=message):
        load_model(relabelled(tmp_path, name, change))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model_type": "mixtral", "num_local_experts": 8}, r"mixture-of-experts model \(num_local_experts 8"),
        ({"model_type": "qwen2_moe", "num_experts": 60}, "mixture-of-experts routing is out of its scope"),
        ({"model_type": "gemma3", "vision_config": {}}, "vision–language model .*vision towers are out of its scope"),
        ({"model_type": "llava", "vision_config": {"model_type": "clip_vision_model"}}, "'llava'.* vision tower"),
    ],
)
def test_experts_and_vision_towers_are_refused_in_one_line_that_says_so(tmp_path, config, message):
    folder = relabelled(tmp_path, "llama", lambda c: c.update(config))
    with pytest.raises(ModelError, match=message) as e:
        load_model(folder)
    assert "\n" not in str(e.value)


def test_modernbert_older_keys_are_the_same_layers(tmp_path, monkeypatch):
    def older(c):  # answerdotai/ModernBERT-base's config.json: a pattern and two thetas instead of per-type sets
        del c["rope_parameters"], c["layer_types"]
        c |= {"global_attn_every_n_layers": 2, "global_rope_theta": 160000.0, "local_rope_theta": 10000.0}

    monkeypatch.setattr("tests.models.test_golden.GOLDEN", tmp_path)
    relabelled(tmp_path, "modernbert", older)
    assert load_model(tmp_path / "modernbert").hp["windows"] == [None, 5]  # global, then local: |i - j| <= 4
    assert max_delta("modernbert") <= 1e-5
