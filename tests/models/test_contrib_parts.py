"""An encoder–decoder's decoder and cross-attention contribution maps against transformers' (tools/golden_contrib.py
--parts: torch 2.13.0, transformers 5.23.0, float64 with hooks).

tests/models/contrib/<name>-parts.json holds, for the golden BART and Marian (post-LN, and their twins whose
decoder has fewer heads than the encoder), mBART (pre-LN), T5 and mT5 (pre-RMSNorm), each measure on the last
decoder layer's self-attention and cross-attention, from the folder's own source and decoder input ids. attn runs
them in float32 and computes each measure in float64. The bound is tests/models/test_contrib.py's: the issue's 1e-5
of each matrix's largest entry, or the float32 pass's typical error where a model is deep and wide (these are
2 + 2 layers of width 32: 1e-5). Cross ALTI's residual shares are the last column of the block's shares matrix
[m, n + 1], whose largest entry they are held to.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from attncli.errors import ConfigError
from attncli.models import load_model
from attncli.models.interpret.contrib import alti_of, block_budget, roll
from attncli.models.interpret.contrib_parts import part_layers, part_maps
from attncli.models.runs.encdec import seq2seq_forward
from tests.models.test_contrib import tolerance

GOLDEN = Path(__file__).parent / "golden"
REFERENCE = Path(__file__).parent / "contrib"
CHECKS = {  # measure -> (PartMaps attribute, golden key after the part's name)
    "norm": (("heads", "norm_heads"), ("layer", "norm_layer")),
    "alti": (("layer", "alti_layer"), ("rollout", "alti_rollout"), ("residual", "alti_residual")),
    "value-zeroing": (("layer", "value_zeroing"),),
}


#: The encoder–decoder golden folders: BART and Marian (post-LN; -heads: 2 decoder heads to the encoder's 4), mBART
#: (pre-LN), T5 and mT5 (pre-RMSNorm).
SEQ2SEQ = sorted(
    config.parent.name
    for config in GOLDEN.glob("*/config.json")
    if json.loads(config.read_text()).get("is_encoder_decoder")
)


def test_every_encoder_decoder_golden_folder_has_its_maps():
    assert SEQ2SEQ == ["bart", "bart-heads", "marian", "marian-heads", "mbart", "mt5", "t5"]
    assert all((REFERENCE / f"{name}-parts.json").is_file() for name in SEQ2SEQ)


@pytest.mark.parametrize("name", SEQ2SEQ)
@pytest.mark.parametrize("part", ["decoder", "cross"])
@pytest.mark.parametrize("measure", list(CHECKS))
def test_part_contributions_equal_transformers(name, part, measure):
    model = load_model(GOLDEN / name)
    golden = json.loads((REFERENCE / f"{name}-parts.json").read_text())
    layer = golden["layer"]
    run = seq2seq_forward(model, golden["source_ids"], golden["decoder_ids"])
    budget = block_budget()
    encoder = roll([alti_of(model, l, run.encoder.hidden[l], budget) for l in range(model.n_layer)])
    maps = part_maps(model, run, part, layer, measure, budget, encoder)
    for attribute, key in CHECKS[measure]:
        got, want = getattr(maps, attribute), golden.get(f"{part}_{key}")
        if want is None:  # the residual: cross-attention's alone
            assert got is None, (part, key)
            continue
        want = np.array(want)
        assert got.shape == want.shape, (part, key)
        # the residual's shares are the last column of the cross block's shares: that matrix's largest entry
        whole = np.hstack([golden[f"{part}_alti_layer"], want[:, None]]) if key == "alti_residual" else want
        assert np.abs(got - want).max() <= tolerance(model) * np.abs(whole).max(), (name, part, key)


def _run(name: str):
    model = load_model(GOLDEN / name)
    golden = json.loads((REFERENCE / f"{name}-parts.json").read_text())
    return model, seq2seq_forward(model, golden["source_ids"], golden["decoder_ids"])


def test_a_later_decoder_token_contributes_nothing():
    model, run = _run("t5")
    m = len(run.hidden[0])
    later = np.triu(np.ones((m, m), dtype=bool), 1)
    for measure in CHECKS:
        maps = part_maps(model, run, "decoder", 1, measure, block_budget())
        assert (maps.layer[later] == 0).all(), measure


def test_alti_refuses_a_decoder_block_of_another_form():
    """A post-LN decoder whose family names no norm after its attentions: neither form ALTI covers here."""
    model, run = _run("bart")
    family = replace(model.family, decoder=replace(model.family.decoder, attention_norm=None))
    model = replace(model, family=family)
    with pytest.raises(ConfigError, match="--contrib alti: the decoder attention block of"):
        part_maps(model, run, "decoder", 1, "alti", block_budget())
    assert part_maps(model, run, "cross", 1, "value-zeroing", block_budget()).layer.shape == (9, 8)


@pytest.mark.parametrize("measure", list(CHECKS))
@pytest.mark.parametrize("part", ["decoder", "cross"])
def test_every_layers_maps_in_one_go_are_each_layers_alone(part, measure):
    # part_layers computes each block once and each rollout once: equal, not close, to part_maps of each layer
    model = load_model(GOLDEN / "bart")
    golden = json.loads((REFERENCE / "bart-parts.json").read_text())
    run = seq2seq_forward(model, golden["source_ids"], golden["decoder_ids"])
    budget = block_budget()
    encoder = roll([alti_of(model, l, run.encoder.hidden[l], budget) for l in range(model.n_layer)])
    layers = list(range(int(model.hp["n_dec_layer"])))
    together = part_layers(model, run, part, layers, measure, budget, encoder)
    for layer, maps in zip(layers, together, strict=True):
        alone = part_maps(model, run, part, layer, measure, budget, encoder)
        for name in ("heads", "layer", "rollout", "residual"):
            a, b = getattr(maps, name), getattr(alone, name)
            assert (a is None and b is None) or np.array_equal(a, b), (layer, name)
