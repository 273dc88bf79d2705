"""A forward pass's elementwise passes shared among threads give the numbers of one thread, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from attncli.models import gelu, load_model
from attncli.models.network.attention import attend
from attncli.models.network.parallel import split, threads
from tests.models.test_golden import GOLDEN


def test_split_covers_the_range_once_in_parts_of_at_least_grain():
    for n, size, grain in ((1, 10, 1), (2, 10, 4), (2, 7, 4), (3, 100, 1), (2, 0, 1)):
        seen: list[tuple[int, int]] = []
        with threads(n):
            split(lambda a, b, seen=seen: seen.append((a, b)), size, grain)
        cells = [i for a, b in seen for i in range(a, b)]
        assert sorted(cells) == list(range(size))
        assert len(seen) == max(1, min(n, size // grain)) and all(b - a >= min(grain, size) for a, b in seen)


def test_an_error_in_a_part_on_another_thread_is_raised():
    def fail(a, b):
        if a > 0:
            raise ValueError(f"part {a}")

    with threads(2), pytest.raises(ValueError, match="part 5"):
        split(fail, 10, 1)


def test_gelu_and_attention_on_two_threads_equal_one_thread():
    x = np.random.default_rng(0).normal(size=(300, 700)).astype(np.float32)  # 7 chunks: parts of several
    alone = gelu(x)
    with threads(2):
        assert np.array_equal(gelu(x), alone)
    model = load_model(GOLDEN / "llama")  # causal, grouped-query: the mask and repeated heads in every part
    ids = np.random.default_rng(1).integers(0, model.vocab_size, 300)  # 2 blocks of 2 heads, rows in 2 parts
    h = model.weights.rows("embed_tokens.weight", ids)
    p = {f"w_{k}": model.weights[f"layers.0.self_attn.{k}_proj.weight"].T for k in "qkvo"}
    p |= {f"b_{k}": np.zeros(p[f"w_{k}"].shape[1], np.float32) for k in "qkvo"}
    run = dict(n_kv_head=model.n_kv_head, window=None)
    one = attend(0, h, p, model.n_head, model.d_k**-0.5, True, **run)
    with threads(2):
        two = attend(0, h, p, model.n_head, model.d_k**-0.5, True, **run)
    assert np.array_equal(one.weights, two.weights) and np.array_equal(one.output, two.output)
