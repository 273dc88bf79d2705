"""Llama (Llama 2, 3, 3.2, TinyLlama, SmolLM), Mistral and SmolLM3: rotary decoders (rotary.py) with RMSNorm,
grouped-query attention and a SwiGLU MLP; Mistral puts every layer under its sliding window, SmolLM3 leaves
RoPE out of every fourth layer (NoPE: its attention sees no position but the causal mask)."""

from __future__ import annotations

from attncli.models.files.hparams import ModelError, positive_int

from .registry import register
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


@register(
    "smollm3", model_types=("smollm3",), architectures={"SmolLM3": "smollm3"}, **BLOCKS, head=("lm_head.weight", True)
)
def read_smollm3(c: dict) -> tuple[dict, dict]:
    """SmolLM3Config: Llama's blocks without RoPE on the layers no_rope_layers marks 0 (default: every
    no_rope_layer_interval-th, 4); with use_sliding_window, a window on the layers layer_types says (default: the
    layers without RoPE)."""
    n = _layers(c)
    uses = c.get("no_rope_layers")
    if uses is None:
        every = positive_int(c, "no_rope_layer_interval", 4)
        uses = [int((l + 1) % every != 0) for l in range(n)]
    if not isinstance(uses, list) or len(uses) != n or any(u not in (0, 1) for u in uses):
        raise ModelError(f"config.json: no_rope_layers must be {n} values 0 or 1, not {uses!r}")
    windows: list[int | None] = [None] * n
    if c.get("use_sliding_window"):
        windows = layer_windows(c, n, [not u for u in uses])
    hp, wanted = decoder_config(c, biases="qkvo" if c.get("attention_bias") else "", windows=windows)
    return hp | {"ropes": [r if u else None for r, u in zip(hp["ropes"], uses)]}, wanted
