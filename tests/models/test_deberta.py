"""DeBERTa's disentangled attention shown as what it is: `attn steps --model` gives the content-to-content,
content-to-position and position-to-content terms as their own arrays, which add up to the scores whose softmax
equals transformers' weights (tests/models/test_golden.py)."""

from __future__ import annotations

import numpy as np
import pytest

from attncli.models.runs.run import model_result
from tests.models.test_golden import GOLDEN


@pytest.mark.parametrize("name", ["deberta-v2", "deberta-v3"])
@pytest.mark.parametrize("head", [None, 2])
def test_the_terms_add_up_to_the_scores(name, head):
    from attncli.models import load_model

    model = load_model(GOLDEN / name)
    text = "the quick brown fox jumps over the lazy dog while time flies like an arrow"  # offsets past the buckets
    result = model_result(model, text, layer=1, head=head)
    steps = {s.name: s for s in result.source.steps(result)}
    names = list(steps)
    assert names.index("v") < names.index("c2c") < names.index("c2p") < names.index("p2c") < names.index("scores")
    total = steps["c2c"].array + steps["c2p"].array + steps["p2c"].array
    scale = np.abs(steps["scores"].array).max()
    assert np.abs(total - steps["scores"].array).max() <= 16 * np.finfo(np.float32).eps * scale  # three roundings
    assert "content-to-position" in steps["c2p"].formula and "position-to-content" in steps["p2c"].formula
    assert min(np.abs(steps[t].array).max() for t in ("c2c", "c2p", "p2c")) > 0.1  # each term weighs
