"""OLMo 2 (OLMo et al. 2024, "2 OLMo 2 Furious"): a rotary decoder (rotary.py) whose RMSNorms come after each
block instead of before it, x = x + RMSNorm(Attn(x)); x = x + RMSNorm(MLP(x)), and whose queries and keys are
RMSNormed over the whole projection (every head of a token at once) before RoPE."""

from __future__ import annotations

from attncli.models.files.hparams import positive_int

from .registry import register
from .rotary import BLOCKS, decoder_config


def input_note(layer: int) -> str:
    return f"X = h: layer {layer}'s residual stream itself (OLMo 2 normalises each block's output, not its input)"


@register(
    "olmo2",
    model_types=("olmo2",),
    architectures={"Olmo2": "olmo2"},
    **(BLOCKS | {"input_note": input_note}),
    head=("lm_head.weight", False),
)
def read_olmo2(c: dict) -> tuple[dict, dict]:
    """Olmo2Config: post_attention_layernorm and post_feedforward_layernorm only; q_norm [n_head · d_k] and
    k_norm [n_kv_head · d_k]; attention_bias on q, k, v and o."""
    biases = "qkvo" if c.get("attention_bias") else ""
    n = positive_int(c, "num_hidden_layers", 16)
    return decoder_config(c, biases=biases, windows=[None] * n, qk_norm="whole", pre_norm=False)
