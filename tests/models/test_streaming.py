"""A streamed pass (models/network/model.py's `Weights` keeping no layer, or only the first, within the room a run
leaves it) computes with the same tensors in the same order as a pass over a model kept whole, so it gives the same
bits: every golden folder (safetensors), GGUF files (F32 and quantized, dequantized a few rows at a time) and
SmolLM2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attncli.models import forward, load_model
from attncli.models.files import gguf as gguf_module
from attncli.models.network.model import layer_of
from attncli.models.runs.encdec import is_seq2seq, seq2seq_forward
from attncli.models.runs.generate import decode
from attncli.models.runs.tokens import encode
from tests.conftest import ROOT

GOLDEN = Path(__file__).parent / "golden"
TEXT = "time flies like an arrow"


def _pass(model, ids, upto: int | None = None) -> list[np.ndarray]:  # every array a pass computed: weights, streams
    if is_seq2seq(model):
        run = seq2seq_forward(model, ids, ids[:3])
        encoder = [
            *run.encoder.weights,
            *run.encoder.hidden,
            *([] if run.encoder.final is None else [run.encoder.final]),
        ]
        layers = [s.weights for s in (*run.decoder, *run.cross)]
        return [*encoder, *layers, *run.hidden, run.output]
    run = forward(model, ids, upto_layer=upto)
    return [*run.weights, *run.hidden, *([] if run.final is None else [run.final])]


def _same_bits(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8))  # bit for bit (NaN-free, -0.0 told from 0.0)


def _streamed_twice(model, ids, upto: int | None = None) -> list[np.ndarray]:
    """Two passes keeping no layer (every tensor read again on the second); the second's arrays."""
    model.weights.fit(0)  # nothing kept but the tensors of no layer: each layer's dropped when the next begins
    _pass(model, ids, upto)
    before = len(model.weights.claimed())
    out = _pass(model, ids, upto)
    again = model.weights.claimed()[before:]
    assert all(layer_of(name) is not None for name in again)  # the tensors of no layer are kept
    assert again or len(model.weights.layer_bytes()) == 1  # read again (ALBERT shares one layer's tensors: kept)
    return out


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.iterdir() if (p / "config.json").is_file()))
def test_a_streamed_pass_of_every_golden_gives_the_bits_of_the_whole_one(name):
    whole = load_model(GOLDEN / name)
    ids = np.asarray(encode(whole, TEXT).ids)
    _same_bits(_streamed_twice(load_model(GOLDEN / name), ids), _pass(whole, ids))


def test_generation_while_streaming_writes_the_tokens_of_the_whole_model():
    whole, streamed = load_model(GOLDEN / "llama"), load_model(GOLDEN / "llama")
    ids = encode(whole, TEXT).ids
    streamed.weights.fit(0)
    assert decode(streamed, ids, 5, eos=set()) == decode(whole, ids, 5, eos=set())


@pytest.mark.parametrize("kind", ["F32", "Q8_0"])
def test_a_streamed_gguf_pass_dequantized_a_few_rows_at_a_time_gives_the_bits_of_the_whole_one(
    kind, tmp_path, monkeypatch
):
    from tests.models.gguf_files import from_folder
    from tests.models.test_gguf import CONVERTED, _windowless

    arch, bos = CONVERTED["mistral"]
    path = from_folder(_windowless("mistral", tmp_path), tmp_path / "m.gguf", arch, kind=kind, add_bos=bos)
    whole = load_model(path)
    ids = np.asarray(encode(whole, TEXT).ids)
    expected = _pass(whole, ids)
    monkeypatch.setattr(gguf_module, "DEQUANTIZE_ROWS_BYTES", 1)  # one row a call of the dequantizer
    _same_bits(_streamed_twice(load_model(path), ids), expected)


def test_smollm2_streamed_gives_the_bits_of_the_whole_model(smollm2):
    whole = load_model(smollm2.path)
    ids = np.asarray(encode(whole, TEXT).ids)
    upto = 3  # four of its 30 layers, each dequantized three times (seconds)
    _same_bits(_streamed_twice(load_model(smollm2.path), ids, upto), _pass(whole, ids, upto))


def test_a_room_for_one_layer_more_keeps_the_first_and_reads_only_the_later_ones_again(smollm2):
    model = load_model(smollm2.path)
    ids = np.asarray(encode(model, TEXT).ids)
    expected = _pass(model, ids, 2)
    layers, w = model.weights.layer_bytes(), model.weights
    ahead = max(layers.values()) if w.overlaps else 0  # a layer read ahead comes first (where reading leaves the GIL)
    w.fit(w.least() + ahead + layers[0])  # layer 0 beside a streamed one
    for _ in range(2):
        before = len(model.weights.claimed())
        _same_bits(_pass(model, ids, 2), expected)
        assert {layer_of(n) for n in model.weights.claimed()[before:]} == {1, 2}  # layer 0 kept; 1, 2 read again
    model.weights.fit(None)  # no limit: all kept again, read once more and then never
    _pass(model, ids, 2)
    before = len(model.weights.claimed())
    _same_bits(_pass(model, ids, 2), expected)
    assert model.weights.claimed()[before:] == []


def _unprivileged() -> None:
    """As root, drop CAP_SYS_RESOURCE from the bounding set (prctl PR_CAPBSET_DROP; the program exec'd then lacks
    it): root may raise its own hard limits, a user may not (the case of the test)."""
    if os.geteuid() == 0:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(24, 24, 0, 0, 0)  # PR_CAPBSET_DROP, CAP_SYS_RESOURCE


def test_the_contained_tokenizer_runs_under_an_inherited_address_space_limit_below_the_budget():
    """`ulimit -v` below ATTN_MAX_MEMORY: the tokenizer's child keeps the inherited limit (it may not raise it)."""
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))\n"
        "from attncli.models import encode, load_model\n"
        f"print(len(encode(load_model({str(GOLDEN / 'llama')!r}), 'time flies').ids))\n"
    )
    env = {**os.environ, "ATTN_MAX_MEMORY": "64G", "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, preexec_fn=_unprivileged
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert int(done.stdout) > 0


def test_a_run_the_machine_cannot_give_is_refused_in_one_line_whatever_the_budget():
    """Under `ulimit -v` (here 1 GiB above what the process has mapped) and no ATTN_MAX_MEMORY limit, a run priced
    at 4 GiB is refused by folder.py's check_run, naming the limit, before anything of that size exists."""
    script = (
        "import resource\n"
        "from attncli.pipeline.budget import address_space\n"
        "limit = address_space() + 2**30\n"
        "resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
        "from attncli.models.files.folder import check_run\n"
        "from attncli.models.files.hparams import ModelError\n"
        "assert check_run(2**20, 2, 2, 16, 8, 'small') is not None\n"
        "try:\n"
        "    check_run(4 * 2**30, 2, 2, 16, 8, 'big')\n"
        "except ModelError as e:\n"
        "    print(e)\n"
    )
    env = {**os.environ, "ATTN_MAX_MEMORY": "none", "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert "more than this machine can give" in done.stdout and "ulimit -v" in done.stdout
