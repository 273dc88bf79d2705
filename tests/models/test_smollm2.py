"""The real trained SmolLM2-135M-Instruct, Q4_1 GGUF: attn's attention against transformers' own GGUF loading.

tests/models/smollm2/ holds, from tools/golden_smollm2.py (torch 2.13.0, transformers 5.23.0), three texts'
token ids and layers 0, 15 and 29's attention computed by transformers on the dequantized weights in float32
and in float64. The float64 run is the reference: float32's rounding grows with depth (30 layers of sums of
576 and 1536 products), so each layer's bound is stated from it, as a multiple of transformers' own float32
distance from float64 at that layer and text (another float32 evaluation of the same sums, in another order,
errs by the same order): attn within 4 times that of float64, and so within 5 times of transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.smollm2 import SKIP, smollm2_path

REFERENCE = Path(__file__).parent / "smollm2"
FLOOR = 2.0**-20  # a bound never tighter than 16 ulps of 1 (a weight near 1 rounds to 2^-24)


@pytest.fixture(scope="module")
def model():
    path = smollm2_path()
    if path is None:
        pytest.skip(SKIP)
    from attncli.models import load_model

    return load_model(path)


def test_smollm2_equals_transformers_within_the_float32_bound(model):
    from attncli.models import encode, forward

    reference = np.load(REFERENCE / "reference.npz")
    texts = json.loads((REFERENCE / "texts.json").read_text(encoding="utf-8"))
    assert model.model_type == "llama" and (model.n_layer, model.n_head, model.n_kv_head) == (30, 9, 3)
    for i, text in enumerate(texts["texts"]):
        tokens = encode(model, text)
        assert list(tokens.ids) == reference[f"ids{i}"].tolist()
        assert list(tokens.strings) == texts["tokens"][i]
        run = forward(model, tokens.ids, upto_layer=max(texts["layers"]))
        for l in texts["layers"]:
            f64, theirs = reference[f"f64_{i}_{l}"], reference[f"f32_{i}_{l}"]
            own = max(float(np.abs(theirs - f64).max()), FLOOR)  # transformers' float32 error here
            assert np.abs(run.weights[l] - f64).max() <= 4 * own, (text, l)
            assert np.abs(run.weights[l] - theirs).max() <= 5 * own, (text, l)
