"""Llama (Llama 2, 3, 3.2, TinyLlama, SmolLM) and Mistral: rotary decoders (rotary.py) with RMSNorm,
grouped-query attention and a SwiGLU MLP; Mistral puts every layer under its sliding window."""

from __future__ import annotations

from attncli.models.hparams import positive_int

from . import register
from .rotary import BLOCKS, decoder_config, layer_windows


def _layers(c: dict) -> int:
    return positive_int(c, "num_hidden_layers", 32)


@register("llama", model_types=("llama",), architectures={"Llama": "llama"}, **BLOCKS, head=("lm_head.weight", False))
def read_llama(c: dict) -> tuple[dict, dict]:
    """LlamaConfig: attention_bias puts a bias on q, k, v and o; rope_scaling "llama3" for Llama 3.1+."""
    biases = "qkvo" if c.get("attention_bias") else ""
    return decoder_config(c, biases=biases, windows=[None] * _layers(c))


@register(
    "mistral", model_types=("mistral",), architectures={"Mistral": "mistral"}, **BLOCKS, head=("lm_head.weight", False)
)
def read_mistral(c: dict) -> tuple[dict, dict]:
    """MistralConfig: no biases; sliding_window (when not null) on every layer."""
    n = _layers(c)
    return decoder_config(c, biases="", windows=layer_windows(c, n, [True] * n, use_types=False))
