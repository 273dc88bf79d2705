"""Phi-3, Phi-3.5 and Phi-4-mini (Abdin et al. 2024): rotary decoders (rotary.py) with Llama's blocks, q, k and v
in one fused qkv_proj and the MLP's gate and up in one gate_up_proj, RoPE on partial_rotary_factor of each head
(Phi-4-mini: 3/4), LongRoPE past original_max_position_embeddings and a sliding window when configured."""

from __future__ import annotations

from attncli.models.files.hparams import positive_int

from .registry import register
from .rotary import BLOCKS, decoder_config, layer_windows


@register("phi3", model_types=("phi3",), architectures={"Phi3": "phi3"}, **BLOCKS, head=("lm_head.weight", False))
def read_phi3(c: dict) -> tuple[dict, dict]:
    """Phi3Config: no biases; sliding_window (when not null) on every layer; rope_scaling "longrope" (also
    written "su" or "yarn" by older Phi-3 files, as transformers reads them)."""
    n = positive_int(c, "num_hidden_layers", 32)
    return decoder_config(c, biases="", windows=layer_windows(c, n, [True] * n, use_types=False), fused=True)
