"""The rotary decoders (Llama and the families built like it): pre-RMSNorm blocks, RoPE, GQA, gated MLP.

Per layer, as transformers' modeling_llama.py (Mistral, Qwen 2/3 and Gemma 1/2 differ only in the
switches of `hp`):
    a = RMSNorm(x);  x = x + Attn(a) W_O;  x = x + down(act(gate(RMSNorm(x))) · up(RMSNorm(x)))
with Attn the causal attention of RoPE-rotated queries and keys, n_kv_head key/value heads
(grouped-query), a sliding window on the layers the config names, and RMSNorm after the model.
Gemma's switches: embeddings scaled by √d_model, RMSNorm by (1 + w); Gemma 2's also: the score
scale 1/√query_pre_attn_scalar, soft-capped scores, RMSNorm after the attention and around the MLP.
Qwen 3's: RMSNorm of every query and key head before RoPE.

This module holds the blocks and the config reading they share; llama.py, qwen.py and gemma.py
register the families.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from attncli.models.attention import attend, offset
from attncli.models.blocks import ACTIVATION_FNS, apply_rope, gated_mlp, rms_norm, rope_frequencies, rope_tables
from attncli.models.hparams import ModelError, fraction, positive_int, positive_number

if TYPE_CHECKING:
    from attncli.models.load import Model

WORD = "embed_tokens.weight"
ROPE_TYPES = ("default", "linear", "dynamic", "llama3")


# ---- blocks ---------------------------------------------------------------------------------------


def embed(model: Model, ids):  # [n] -> [n, d_model]
    """The token rows (Gemma: times √d_model, rounded to float32 as transformers' embed_scale)."""
    x = model.weights.rows(WORD, ids)
    scale = model.hp["embed_scale"]
    return x * np.float32(scale) if scale is not None else x


def _norm(model: Model, name: str, x):  # [..., d] -> [..., d]
    return rms_norm(x, model.weights[name], model.eps, model.hp["norm_offset"])


def _rotate(model: Model, l: int, q, k):  # [(batch,) h, n, d_k], [(batch,) h_kv, n, d_k] -> the same, rotated
    """Qwen 3's per-head RMSNorm of q and k, then RoPE on the first d_rot dimensions of each head."""
    pre = f"layers.{l}.self_attn."
    if model.hp["qk_norm"]:
        q, k = _norm(model, pre + "q_norm.weight", q), _norm(model, pre + "k_norm.weight", k)
    cos, sin = rope_tables(q.shape[-2], model.hp["inv_freq"], offset())
    return apply_rope(q, cos, sin), apply_rope(k, cos, sin)


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """x + o_proj(attention(input_layernorm(x))) (Gemma 2: the output RMSNormed before the residual)."""
    w, hp, pre = model.weights, model.hp, f"layers.{l}."
    a = _norm(model, pre + "input_layernorm.weight", x)
    p = {}
    for key in "qkvo":
        weight = w[f"{pre}self_attn.{key}_proj.weight"]  # nn.Linear: [out, in]
        p["w_" + key] = weight.T
        bias = f"{pre}self_attn.{key}_proj.bias"
        p["b_" + key] = w[bias] if key in hp["biases"] else np.zeros(weight.shape[0], dtype=np.float32)
    steps = attend(
        l,
        a,
        p,
        model.n_head,
        hp["scale"],
        True,
        n_kv_head=model.n_kv_head,
        window=hp["windows"][l],
        softcap=hp["softcap"],
        rotate=lambda q, k: _rotate(model, l, q, k),
    )
    out = steps.output
    if hp["sandwich"]:
        out = _norm(model, pre + "post_attention_layernorm.weight", out)
    return x + out, steps


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """x + down(act(gate(m)) · up(m)), m the RMSNormed stream (Gemma 2: pre/post feed-forward norms)."""
    w, hp, pre = model.weights, model.hp, f"layers.{l}."
    before = "pre_feedforward_layernorm" if hp["sandwich"] else "post_attention_layernorm"
    m = _norm(model, f"{pre}{before}.weight", x)
    h = gated_mlp(
        m,
        w[pre + "mlp.gate_proj.weight"],
        w[pre + "mlp.up_proj.weight"],
        w[pre + "mlp.down_proj.weight"],
        ACTIVATION_FNS[model.activation],
    )
    if hp["sandwich"]:
        h = _norm(model, pre + "post_feedforward_layernorm.weight", h)
    return x + h


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return _norm(model, "norm.weight", x)


def input_note(layer: int) -> str:
    return f"X = RMSNorm(h): layer {layer}'s input_layernorm of the residual stream (pre-norm)"


BLOCKS = {"word": WORD, "embed": embed, "attention": attention, "mlp": mlp, "final": final, "input_note": input_note}


# ---- config ---------------------------------------------------------------------------------------


def rope(c: dict, d_k: int, theta_key: str = "rope_theta", partial_key: str = "partial_rotary_factor") -> dict:
    """RoPE as config.json says: rope_parameters (transformers 5) or rope_scaling + rope_theta (older files)."""
    params = c.get("rope_parameters") or c.get("rope_scaling") or {}
    if not isinstance(params, dict) or any(isinstance(v, dict) for v in params.values()):
        raise ModelError(f"config.json: rope_parameters {params!r} is not supported (one set for every layer)")
    kind = params.get("rope_type", params.get("type", "default"))
    if not isinstance(kind, str) or kind not in ROPE_TYPES:
        raise ModelError(f"config.json: rope type {kind!r} is not supported; supported: {', '.join(ROPE_TYPES)}")
    theta = positive_number(params, "rope_theta", positive_number(c, theta_key, 10000.0))
    partial = positive_number(params, "partial_rotary_factor", positive_number(c, partial_key, 1.0))
    assert theta is not None and partial is not None  # both have defaults
    d_rot = int(d_k * partial)
    if kind in ("linear", "llama3"):
        missing = [
            k
            for k in ("factor", *(("low_freq_factor", "high_freq_factor") if kind == "llama3" else ()))
            if k not in params
        ]
        if missing:
            raise ModelError(f"config.json: rope type {kind!r} needs {missing[0]}")
        if kind == "llama3":
            params = {"original_max_position_embeddings": c.get("max_position_embeddings", 2048), **params}
        for key in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"):
            positive_number(params, key, 1.0)  # each one a number, or one line naming it
    return {
        "rope": {"type": kind, "theta": theta, "d_rot": d_rot},
        "inv_freq": rope_frequencies(d_rot, theta, params if kind in ("linear", "llama3") else None),
    }


def decoder_config(c: dict, *, biases: str, windows: list, qk_norm: bool = False, gemma: int = 0) -> tuple[dict, dict]:
    """Hyper-parameters and wanted tensors of a rotary decoder; `biases` names the projections with one
    ("qkv" for Qwen 2), `windows` the sliding window of each layer (None: full causal), `gemma` 1 or 2."""
    if c.get("mlp_bias"):
        raise ModelError("config.json: mlp_bias true is not supported (no released checkpoint uses it)")
    d, ff = positive_int(c, "hidden_size", 4096), positive_int(c, "intermediate_size", 11008)
    n_head, n_layer = positive_int(c, "num_attention_heads", 32), positive_int(c, "num_hidden_layers", 32)
    n_kv = positive_int(c, "num_key_value_heads", n_head) if c.get("num_key_value_heads") is not None else n_head
    d_k = positive_int(c, "head_dim", d // n_head) if c.get("head_dim") is not None else d // n_head
    if c.get("head_dim") is None and d % n_head:
        raise ModelError(f"hidden size {d} is not divisible by {n_head} heads")
    act_key = "hidden_activation" if gemma == 2 else "hidden_act"
    activation = c.get(act_key) or ("gelu_pytorch_tanh" if gemma else "silu")
    if gemma == 1 and activation == "gelu":
        activation = "gelu_pytorch_tanh"  # transformers' GemmaConfig does the same: "gelu" meant the tanh form
    scale = d_k**-0.5
    if gemma == 2:
        scale = float(positive_number(c, "query_pre_attn_scalar", 256.0) or 256.0) ** -0.5
    hp = {
        "d_model": d,
        "n_head": n_head,
        "n_kv_head": n_kv,
        "d_k": d_k,
        "n_layer": n_layer,
        "max_positions": positive_int(c, "max_position_embeddings", 2048),
        "eps": fraction(c, "rms_norm_eps", 1e-6),
        "activation": activation,
        "causal": True,
        "positions_key": "max_position_embeddings",
        "biases": biases,
        "windows": windows,
        "qk_norm": qk_norm,
        "scale": scale,
        "softcap": positive_number(c, "attn_logit_softcapping", None) if gemma == 2 else None,
        "logit_softcap": positive_number(c, "final_logit_softcapping", 30.0) if gemma == 2 else None,
        "embed_scale": math.sqrt(d) if gemma else None,
        "norm_offset": 1.0 if gemma else 0.0,
        "sandwich": gemma == 2,
        **rope(c, d_k),
    }
    wanted: dict[str, tuple] = {WORD: (None, d), "norm.weight": (d,)}
    out = {"q": n_head * d_k, "k": n_kv * d_k, "v": n_kv * d_k}
    norms = ["input_layernorm", "post_attention_layernorm"]
    if gemma == 2:
        norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
    for l in range(n_layer):
        p = f"layers.{l}."
        wanted |= {f"{p}{name}.weight": (d,) for name in norms}
        wanted |= {f"{p}self_attn.{key}_proj.weight": (size, d) for key, size in out.items()}
        wanted |= {f"{p}self_attn.{key}_proj.bias": (out[key],) for key in biases if key in out}
        wanted[f"{p}self_attn.o_proj.weight"] = (d, n_head * d_k)
        if "o" in biases:
            wanted[f"{p}self_attn.o_proj.bias"] = (d,)
        if qk_norm:
            wanted |= {f"{p}self_attn.q_norm.weight": (d_k,), f"{p}self_attn.k_norm.weight": (d_k,)}
        wanted |= {
            p + "mlp.gate_proj.weight": (ff, d),
            p + "mlp.up_proj.weight": (ff, d),
            p + "mlp.down_proj.weight": (d, ff),
        }
    return hp, wanted


def layer_windows(c: dict, n_layer: int, sliding: list[bool], use_types: bool = True) -> list[int | None]:
    """The window of each layer: config.json's sliding_window on the layers `sliding` marks
    (config.json's layer_types, when it has them and `use_types`, decides instead)."""
    types = c.get("layer_types")
    if use_types and isinstance(types, list) and len(types) == n_layer:
        sliding = [t == "sliding_attention" for t in types]
    window = positive_int(c, "sliding_window", 4096) if c.get("sliding_window") is not None else None
    return [window if s and window is not None else None for s in sliding]
