"""Embeddings are a pure function of (token string, seed); positions are Vaswani's sinusoids."""

import subprocess
import sys

import numpy as np

from attncli.pipeline.embed import POSITIONAL, embed, sinusoidal
from tests.tolerance import U64, assert_within


def test_same_token_same_vector_and_seed_matters():
    x = embed(["time", "flies", "time"], 8, seed=0)
    assert (x[0] == x[2]).all() and not (x[0] == x[1]).all()
    assert not (embed(["time"], 8, seed=1)[0] == x[0]).all()


def test_same_vector_in_another_process():
    code = "from attncli.pipeline.embed import embed; print(embed(['arrow'], 4, 0)[0].tobytes().hex())"
    env = {"PYTHONHASHSEED": "123"}
    import os

    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, **env}
    ).stdout.strip()
    assert other == embed(["arrow"], 4, 0)[0].tobytes().hex()


def test_sinusoidal_by_hand():
    pe = sinusoidal(3, 4)
    assert pe[0].tolist() == [0.0, 1.0, 0.0, 1.0]
    expected = np.array([np.sin(2), np.cos(2), np.sin(2 / 100), np.cos(2 / 100)])  # the same angles, exactly
    # NumPy's float64 sin and cos are each within 4 ulp (<= 8 u) of the exact value: an array's and a scalar's
    # loops (SIMD or not) within 16 u of each other
    assert_within(pe[2], expected, 16 * U64 * np.abs(expected))
    assert sinusoidal(2, 5).shape == (2, 5)  # odd widths work


def test_registry():
    assert set(POSITIONAL) == {"none", "sinusoidal"}
    assert (POSITIONAL["none"].encode(3, 4) == 0).all()
