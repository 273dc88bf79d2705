"""Qwen 2 / 2.5 (biases on q, k, v) and Qwen 3 (RMSNorm of each query and key head): rotary decoders
(rotary.py); their sliding window, when use_sliding_window is set, covers layers from max_window_layers."""

from __future__ import annotations

from attncli.models.files.hparams import positive_int

from .registry import register
from .rotary import BLOCKS, decoder_config, layer_windows


def _windows(c: dict) -> list[int | None]:
    n = positive_int(c, "num_hidden_layers", 32)
    if not c.get("use_sliding_window"):
        return [None] * n
    first = c.get("max_window_layers", 28)
    return layer_windows(c, n, [l >= first for l in range(n)])


@register("qwen2", model_types=("qwen2",), architectures={"Qwen2": "qwen2"}, **BLOCKS, head=("lm_head.weight", False))
def read_qwen2(c: dict) -> tuple[dict, dict]:
    """Qwen2Config: q, k and v projections with biases, o without."""
    return decoder_config(c, biases="qkv", windows=_windows(c))


@register("qwen3", model_types=("qwen3",), architectures={"Qwen3": "qwen3"}, **BLOCKS, head=("lm_head.weight", False))
def read_qwen3(c: dict) -> tuple[dict, dict]:
    """Qwen3Config: q_norm and k_norm on every head before RoPE; attention_bias on q, k, v and o."""
    biases = "qkvo" if c.get("attention_bias") else ""
    return decoder_config(c, biases=biases, windows=_windows(c), qk_norm=True)
