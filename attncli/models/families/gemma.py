"""Gemma and Gemma 2: rotary decoders (rotary.py) with embeddings scaled by √d_model and (1 + w) RMSNorm;
Gemma 2 adds soft-capped scores, the 1/√query_pre_attn_scalar scale, sliding windows on alternate
layers (even layers, unless layer_types says otherwise) and RMSNorms after attention and around the MLP."""

from __future__ import annotations

from attncli.models.hparams import positive_int

from . import register
from .rotary import BLOCKS, decoder_config, layer_windows


@register("gemma", model_types=("gemma",), architectures={"Gemma": "gemma"}, **BLOCKS, head=("lm_head.weight", True))
def read_gemma(c: dict) -> tuple[dict, dict]:
    """GemmaConfig: attention_bias on q, k, v and o; every layer full causal."""
    biases = "qkvo" if c.get("attention_bias") else ""
    return decoder_config(c, biases=biases, windows=[None] * positive_int(c, "num_hidden_layers", 28), gemma=1)


@register(
    "gemma2", model_types=("gemma2",), architectures={"Gemma2": "gemma2"}, **BLOCKS, head=("lm_head.weight", True)
)
def read_gemma2(c: dict) -> tuple[dict, dict]:
    """Gemma2Config: layer_types (default: sliding on even layers) under sliding_window."""
    n = positive_int(c, "num_hidden_layers", 26)
    biases = "qkvo" if c.get("attention_bias") else ""
    windows = layer_windows(c, n, [l % 2 == 0 for l in range(n)])
    return decoder_config(c, biases=biases, windows=windows, gemma=2)
