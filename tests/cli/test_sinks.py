"""`attn heads`' sinks section: Gu et al. 2025's Sink^ε and Sun et al. 2024's massive activations, from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attncli.core.statistics import SINK_EPSILON, SINK_POSITIONS, SINKS, STATISTICS
from attncli.models import load_model
from attncli.models.runs.run import run_pass
from tests.conftest import attn
from tests.tolerance import U32, gamma

GOLDEN = Path(__file__).parents[1] / "models" / "golden"
TEXT = "time flies like an arrow"


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_the_sink_statistics_are_those_of_the_json_weights(name):
    """α_k, the sink heads and the sink rate, recomputed here from each layer's `attn show -f json` weights."""
    folder = GOLDEN / name
    sinks = json.loads(ok("heads", TEXT, "--model", folder, "-f", "json"))["sinks"]
    model = load_model(folder)
    first, flags = [], []
    for layer in range(model.n_layer):
        doc = json.loads(ok("show", TEXT, "--model", folder, "--layer", layer, "-f", "json"))
        a = np.array([h["weights"] for h in doc["heads"]])  # [h, n, n]
        k = min(SINK_POSITIONS, a.shape[-1])
        means = [[a[h, j:, j].mean() for j in range(k)] for h in range(len(a))]  # queries i >= j that see key j
        first.append(means)
        flags.append([m[0] > SINK_EPSILON for m in means])
    np.testing.assert_allclose(sinks["first"], first, rtol=0, atol=1e-12)
    assert sinks["sink"] == flags
    assert sinks["sink_rate"] == pytest.approx(np.mean(flags), abs=1e-15)
    assert sinks["sink_heads"] == [[l, h] for l, row in enumerate(flags) for h, f in enumerate(row) if f]
    assert sinks["epsilon"] == SINK_EPSILON and sinks["stats"] == {n: STATISTICS[n].sinks for n in SINKS}


def test_massive_activations_are_the_streams_norms_over_their_median():
    folder = GOLDEN / "llama"
    sinks = json.loads(ok("heads", TEXT, "--model", folder, "-f", "json"))["sinks"]
    hidden = np.stack(run_pass(load_model(folder), TEXT)[1].hidden).astype(np.float64)  # [L, n, d]
    norms = np.linalg.norm(hidden, axis=-1)
    # each norm within γ_d of the exact one (attn computes in float32); a ratio of two: twice that, one rounding more
    rtol = 2 * gamma(hidden.shape[-1], U32) + 2 * U32
    np.testing.assert_allclose(sinks["massive_activation"], norms / np.median(norms, -1, keepdims=True), rtol=rtol)


def test_the_table_says_the_sink_rate_and_what_it_is():
    out = ok("heads", TEXT, "--model", GOLDEN / "llama", "--width", "200")
    assert "sink rate Sink^ε (ε = 0.3):" in out and "Gu et al. 2025" in out
    assert "largest residual norm:" in out and "× the median, at position" in out
