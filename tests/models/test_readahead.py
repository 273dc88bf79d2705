"""The read-ahead of a cold forward pass (attncli/models/network/readahead.py): only the tensors the pass needs, the
same results as reading them on first use, its errors raised as the pass's own, and no thread left behind."""

from __future__ import annotations

import dataclasses
import os
import threading

import numpy as np
import pytest

import attncli.models.network.readahead as readahead
from attncli.models import ModelError, load_model
from attncli.models.network.forward import _forward, forward
from tests.conftest import attn
from tests.model_fixtures import make_bert, make_gpt2
from tests.models.test_folder import one_line, poke

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the model's tokenizer runs in a forked child")

IDS = np.array([1, 5, 7, 3, 9])


@pytest.fixture
def reader_ran(monkeypatch):
    """The plans the reader thread was given (so that a test knows it ran)."""
    plans: list[list] = []
    read = readahead.ReadAhead._read

    def noted(self, plan):
        plans.append(plan)
        read(self, plan)

    monkeypatch.setattr(readahead.ReadAhead, "_read", noted)
    return plans


def test_only_the_layers_the_pass_runs_are_read_and_the_results_are_those_of_one_thread(tmp_path, reader_ran):
    folder = make_gpt2(tmp_path / "g", n_layer=5)
    model = load_model(folder)
    run = forward(model, IDS, upto_layer=2)
    read = model.weights.claimed()
    assert reader_ran and {layer for layer, _ in reader_ran[0]} == {1, 2}
    assert not [n for n in read if n.startswith(("h.3.", "h.4."))], read
    assert not [n for n in read if n.startswith("h.2.mlp")], read  # the last layer's MLP is not run
    assert [n for n in read if n.startswith("h.2.attn")], read
    alone = load_model(folder)
    same = _forward(alone, IDS, 2, None, None, ahead=False)
    assert set(alone.weights.claimed()) == set(read)  # the same tensors, in an order the two threads decided
    for a, b in zip(run.weights + run.hidden, same.weights + same.hidden, strict=True):
        assert np.array_equal(a, b)


def test_a_damaged_tensor_read_ahead_raises_the_error_of_one_read_on_first_use(tmp_path):
    folder = make_bert(tmp_path / "m", n_layer=4)
    name = poke(folder, "encoder.layer.2.attention.self.query.weight", float("nan"))
    key = "encoder.layer.2.attention.self.query.weight"
    with pytest.raises(ModelError) as first_use:
        load_model(folder).weights[key]
    weights = load_model(folder).weights
    weights.read_ahead(key)  # as the reader thread does: the error is kept ...
    with pytest.raises(ModelError) as ahead:  # ... and raised where the tensor is asked for
        weights[key]
    assert str(ahead.value) == str(first_use.value) and name in str(ahead.value)
    one_line(attn("show", "time flies", "--model", folder), f"{name} in the weights holds nan")


def test_no_thread_outlives_the_pass_whether_it_ends_or_raises(tmp_path, reader_ran):
    folder = make_gpt2(tmp_path / "g", n_layer=6)
    before = set(threading.enumerate())
    forward(load_model(folder), IDS)
    assert reader_ran and set(threading.enumerate()) == before

    model = load_model(folder)
    mlp = model.family.mlp

    def fails_at_layer_1(m, layer, x):  # the reader is then waiting to read layer 3
        if layer == 1:
            raise KeyboardInterrupt
        return mlp(m, layer, x)

    broken = dataclasses.replace(model, family=dataclasses.replace(model.family, mlp=fails_at_layer_1))
    with pytest.raises(KeyboardInterrupt):
        forward(broken, IDS)
    assert len(reader_ran) == 2 and set(threading.enumerate()) == before
