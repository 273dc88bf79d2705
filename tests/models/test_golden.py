"""Every family against transformers: the golden folders of tests/models/golden/ (made by
tools/golden_decoders.py with torch + transformers, so CI needs neither) hold tiny random models and
transformers' eager output_attentions for a short text and one longer than the sliding windows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attncli.models import FAMILIES, encode, forward, load_model

GOLDEN = Path(__file__).parent / "golden"
FOLDERS = sorted(p.name for p in GOLDEN.iterdir() if (p / "config.json").is_file())
TOLERANCE = 1e-5


def max_delta(name: str) -> float:
    """The largest |Δ| over every layer, head and cell of both texts; token ids must agree exactly."""
    folder = GOLDEN / name
    model, reference = load_model(folder), np.load(folder / "reference.npz")
    texts = json.loads((folder / "texts.json").read_text(encoding="utf-8"))
    deltas = []
    for key, text in texts.items():
        ids = encode(model, text).ids
        assert list(ids) == reference[key + "_ids"].tolist()
        mine, theirs = np.stack(forward(model, ids).weights), reference[key]
        assert mine.shape == theirs.shape == (model.n_layer, model.n_head, len(ids), len(ids))
        deltas.append(float(np.abs(mine - theirs).max()))
    return max(deltas)


@pytest.mark.parametrize("name", FOLDERS)
def test_golden_attention_equals_transformers(name):
    assert max_delta(name) <= TOLERANCE


def test_every_family_has_a_golden_folder():
    served = {json.loads((GOLDEN / n / "config.json").read_text())["model_type"] for n in FOLDERS}
    assert {t for f in FAMILIES.values() for t in f.model_types} <= served


def test_the_long_text_exceeds_every_sliding_window():
    for name in FOLDERS:
        model = load_model(GOLDEN / name)
        windows = [w for w in model.hp.get("windows", []) if w is not None]
        text = json.loads((GOLDEN / name / "texts.json").read_text())["long"]
        assert all(len(encode(model, text)) > 2 * w for w in windows)
