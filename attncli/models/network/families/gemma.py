"""Gemma, Gemma 2 and Gemma 3 (text): rotary decoders (rotary.py) with embeddings scaled by √d_model and (1 + w)
RMSNorm; Gemma 2 adds soft-capped scores, the 1/√query_pre_attn_scalar scale, sliding windows on alternate
layers (even layers, unless layer_types says otherwise) and RMSNorms after attention and around the MLP;
Gemma 3 RMSNorms each query and key head, slides five layers in six, and gives the sliding layers their own
RoPE (rope_local_base_freq 10,000, the global ones 1,000,000 and the scaling). Soft-caps as configured."""

from __future__ import annotations

from attncli.models.files.hparams import ModelError, positive_int

from .registry import register
from .rotary import BLOCKS, decoder_config, layer_windows, rope


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


def _gemma3_ropes(c: dict, d_k: int, sliding: list[bool]) -> list:
    """Each layer's RoPE: rope_parameters per layer type (transformers 5), or rope_theta with rope_scaling for the
    global layers and rope_local_base_freq for the sliding ones (older files)."""
    params = c.get("rope_parameters")
    if isinstance(params, dict) and any(isinstance(v, dict) for v in params.values()):
        full, local = params.get("full_attention") or {}, params.get("sliding_attention") or {}
        if not isinstance(full, dict) or not isinstance(local, dict):
            raise ModelError(f"config.json: rope_parameters {params!r} is not one set per layer type")
    else:
        full = {**(c.get("rope_scaling") or params or {}), "rope_theta": c.get("rope_theta", 1000000.0)}
        local = {"rope_type": "default", "rope_theta": c.get("rope_local_base_freq", 10000.0)}
    full_rope = rope(c, d_k, params=full, theta=1000000.0)["rope"]
    local_rope = rope(c, d_k, params=local, theta=10000.0)["rope"]
    return [local_rope if s else full_rope for s in sliding]


@register(
    "gemma3",
    model_types=("gemma3_text",),
    architectures={"Gemma3": "gemma3_text"},
    **BLOCKS,
    head=("lm_head.weight", True),
)
def read_gemma3(c: dict) -> tuple[dict, dict]:
    """Gemma3TextConfig: Gemma 2's blocks with (1 + w) RMSNorms of each query and key head; layer_types (default:
    every sliding_window_pattern-th layer global, the others sliding), each type with its own RoPE."""
    if c.get("use_bidirectional_attention"):
        raise ModelError("config.json: use_bidirectional_attention (EmbeddingGemma) is not supported")
    n = positive_int(c, "num_hidden_layers", 26)
    pattern = positive_int(c, "sliding_window_pattern", 6)
    types = c.get("layer_types")
    if isinstance(types, list) and len(types) == n:
        sliding = [t == "sliding_attention" for t in types]
    else:
        sliding = [bool((l + 1) % pattern) for l in range(n)]
    d_k = positive_int(c, "head_dim", 256)
    biases = "qkvo" if c.get("attention_bias") else ""
    windows = layer_windows(c, n, sliding, use_types=False)
    ropes = _gemma3_ropes(c, d_k, sliding)
    return decoder_config({"head_dim": 256, **c}, biases=biases, windows=windows, qk_norm=True, gemma=3, ropes=ropes)
