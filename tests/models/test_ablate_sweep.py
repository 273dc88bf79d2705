"""Ablation in one sweep (attncli.models.interpret.ablate's `sweep`): every copy advances through a layer together, so a
streamed model reads each layer once per sweep (not once per ablated layer before it), and each head's deltas are
those of that head switched off alone, in a pass of its own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attncli.models import forward, load_model
from attncli.models.interpret.ablate import _deltas, _prices, _switch_off, ablate, sizes
from attncli.models.network.attention import editing, padding
from attncli.models.network.unembed import logits, probabilities
from attncli.models.runs.tokens import encode
from tests.models.test_behaviour import DELTAS

GOLDEN = Path(__file__).parent / "golden"
TEXT = "time flies like an arrow"
DECODERS = sorted(p.parent.name for p in GOLDEN.glob("*/behaviour.json"))


def alone(model, ids, layer: int, head: int, mode: str) -> tuple[float, float]:
    """Δ logit and Δ log-probability of the model's own next token with one head off, in a pass of its own: the
    clean stream entering `layer`, one copy, through the layers after it."""
    run = forward(model, ids)
    clean = logits(model, run.final[-1])
    token = int(np.argmax(clean))
    x = run.hidden[layer][None]  # [1, n, d_model]
    with (
        padding(np.zeros(x.shape[:2], dtype=bool)),
        editing(layer, _switch_off([(layer, head)], layer, model.d_k, mode)),
    ):
        for l in range(layer, model.n_layer):
            x, _ = model.family.attention(model, l, x)
            x = model.family.mlp(model, l, x)
    logit, logprob, _ = _deltas(model, x[:, -1], token, None)[0]
    return float(logit - clean[token]), float(logprob - np.log(probabilities(clean)[token]))


def _same_as_alone(model, ids, found: dict, mode: str) -> None:
    """Each row within DELTAS of its head ablated alone: float32 logits of magnitude < 10 through two tiny layers,
    whose products add over other rows in a batch than alone (tests/models/test_behaviour.py's bound)."""
    for r in found["rows"]:
        logit, logprob = alone(model, ids, r["layer"], r["head"], mode)
        assert abs(r["delta_logit"] - logit) <= DELTAS and abs(r["delta_logprob"] - logprob) <= DELTAS, r


@pytest.mark.parametrize("name", DECODERS)
def test_one_sweep_gives_each_head_s_ablation_alone(name):
    model = load_model(GOLDEN / name)
    ids = encode(model, TEXT).ids
    heads = [(l, h) for l in range(model.n_layer) for h in range(model.n_head)]
    assert sizes(model, len(ids), len(heads))[0] == len(heads)  # the default budget holds them all: one sweep
    _same_as_alone(model, ids, ablate(model, ids, heads, mode="mean"), "mean")


def test_a_streamed_model_in_sweeps_reads_each_layer_once_a_sweep(monkeypatch):
    """With room for 3 copies' streams and 1 running, the 8 heads of the golden Llama go in sweeps of 3, 3 and 2
    (starting at layers 0, 0 and 1), the weights streamed (no layer kept): each layer's tensors are read by the
    clean pass and at most once by each sweep that runs through it (the third begins in layer 1, which the second
    ended in and still holds), and the deltas are those of each head alone."""
    model = load_model(GOLDEN / "llama")
    ids = encode(model, TEXT).ids
    n, heads = len(ids), [(l, h) for l in range(2) for h in range(4)]
    stream, layer, head = _prices(model, n)
    room = max(layer, head) + 3 * stream  # beside the weights and the clean pass's streams
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(model.weights.least() + (model.n_layer + 1) * stream + room))
    assert sizes(model, n, len(heads)) == (3, 1)
    before = len(model.weights.claimed())
    heard: list[tuple[int, int]] = []
    found = ablate(model, ids, heads, progress=lambda done, total: heard.append((done, total)))
    assert not model.weights.whole(model.unembed) and model.weights._kept == 0  # streamed: no layer kept
    reads = model.weights.claimed()[before:]
    q0, q1 = (f"layers.{l}.self_attn.q_proj.weight" for l in (0, 1))
    assert (reads.count(q0), reads.count(q1)) == (1 + 2, 1 + 2)
    assert heard == [(k, 5) for k in range(1, 6)]  # 2 + 2 + 1 layers swept
    _same_as_alone(load_model(GOLDEN / "llama"), ids, found, "zero")


def test_an_ablation_without_room_for_one_copy_is_refused_in_one_line_before_its_pass(monkeypatch):
    from attncli.errors import AttnError

    model = load_model(GOLDEN / "llama")
    ids = encode(model, TEXT).ids
    _, layer, _ = _prices(model, len(ids))
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(model.weights.least() + layer))  # no room for the streams beside it
    before = len(model.weights.claimed())
    with pytest.raises(AttnError, match=r"with heads off on \d+ tokens needs about"):
        ablate(model, ids, [(0, 0)])
    assert len(model.weights.claimed()) == before  # nothing read
