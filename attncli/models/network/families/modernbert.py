"""ModernBERT (Warner et al. 2024) as transformers' modeling_modernbert.py computes it: a pre-LayerNorm encoder
with RoPE, global and local (sliding-window) layers, a GeGLU MLP and LayerNorms without biases.

x = LN(word); per layer (layer 0 has no attention norm: the embeddings' LN is its)
    x = x + Attn(LN(x)) W_o;   x = x + W_o'(act(LN(x) W_i[:f]) · LN(x) W_i[f:])
and LN(x) after the last layer. q, k and v come from one fused Wqkv; every third layer (layer_types, else
global_attn_every_n_layers) is global with RoPE θ 160,000, the others local: each token sees the tokens within
local_attention / 2 of it on both sides, with RoPE θ 10,000.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError, fraction, positive_int
from attncli.models.network.attention import LayerSteps, attend
from attncli.models.network.blocks import ACTIVATION_FNS, apply_rope, gated_mlp, layer_norm

from .registry import register
from .rotary import rope, tables

if TYPE_CHECKING:
    from attncli.models.network.model import Model

WORD = "embeddings.tok_embeddings.weight"


def _ln(model: Model, name: str, x):  # [..., d] -> [..., d]
    w = model.weights
    bias = w[name + ".bias"] if model.hp["norm_bias"] else np.float32(0)
    return layer_norm(x, w[name + ".weight"], bias, model.eps)


def embed(model: Model, ids, types=None):  # [n], [n] (ignored: no token types) -> [n, d_model]
    """LayerNorm(word): positions come from RoPE in every layer."""
    return _ln(model, "embeddings.norm", model.weights.rows(WORD, ids))


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """x + Wo(attention(attn_norm(x))) with RoPE (ModernBertAttention); layer 0 reads x itself."""
    w, hp, pre, d = model.weights, model.hp, f"layers.{l}.", model.d_model
    a = _ln(model, pre + "attn_norm", x) if l > 0 else x
    qkv = w[pre + "attn.Wqkv.weight"].T  # [d_model, 3 d_model]: q's columns, k's, v's
    p = {"w_q": qkv[:, :d], "w_k": qkv[:, d : 2 * d], "w_v": qkv[:, 2 * d :], "w_o": w[pre + "attn.Wo.weight"].T}
    for key, (name, size) in {"q": ("Wqkv", 0), "k": ("Wqkv", d), "v": ("Wqkv", 2 * d), "o": ("Wo", 0)}.items():
        bias = w[f"{pre}attn.{name}.bias"][size : size + d] if hp["attention_bias"] else None
        p["b_" + key] = bias if bias is not None else np.zeros(d, dtype=np.float32)
    r = hp["ropes"][l]

    def rotate(q, k):  # [(batch,) h, n, d_k] twice -> the same, rotated
        cos, sin = tables(r, q.shape[-2])
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin)

    steps: LayerSteps = attend(l, a, p, model.n_head, model.d_k**-0.5, False, window=hp["windows"][l], rotate=rotate)
    return x + steps.output, steps


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """x + Wo(act(input) · gate), input and gate the halves of Wi(mlp_norm(x)) (ModernBertMLP)."""
    w, pre = model.weights, f"layers.{l}."
    m = _ln(model, pre + "mlp_norm", x)
    wi = w[pre + "mlp.Wi.weight"]  # [2 d_ff, d_model]: the activated half, then the gate
    f = len(wi) // 2
    biases = None
    if model.hp["mlp_bias"]:
        bi = w[pre + "mlp.Wi.bias"]
        biases = (bi[:f], bi[f:], w[pre + "mlp.Wo.bias"])
    return x + gated_mlp(m, wi[:f], wi[f:], w[pre + "mlp.Wo.weight"], ACTIVATION_FNS[model.activation], biases)


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return _ln(model, "final_norm", x)


def input_note(layer: int) -> str:
    if layer == 0:
        return "X = LayerNorm(word embeddings): the input of layer 0 (no norm of its own; RoPE gives the positions)"
    return f"X = LayerNorm(h): layer {layer}'s attn_norm of the residual stream (pre-norm)"


def _ropes(c: dict, d_k: int, local: list[bool]) -> list:
    """Each layer's RoPE: rope_parameters per layer type (transformers 5), else global_rope_theta and
    local_rope_theta (rope_scaling on both)."""
    params = c.get("rope_parameters")
    if isinstance(params, dict) and any(isinstance(v, dict) for v in params.values()):
        full, near = params.get("full_attention") or {}, params.get("sliding_attention") or {}
        if not isinstance(full, dict) or not isinstance(near, dict):
            raise ModelError(f"config.json: rope_parameters {params!r} is not one set per layer type")
    else:
        scaling = c.get("rope_scaling") or params or {}
        full = {**scaling, "rope_theta": c.get("global_rope_theta", 160000.0)}
        near = {**scaling, "rope_theta": c.get("local_rope_theta", 10000.0)}
    global_rope = rope(c, d_k, params=full, theta=160000.0)["rope"]
    local_rope = rope(c, d_k, params=near, theta=10000.0)["rope"]
    return [local_rope if s else global_rope for s in local]


@register(
    "modernbert",
    model_types=("modernbert",),
    word=WORD,
    architectures={"ModernBert": "modernbert"},
    embed=embed,
    attention=attention,
    mlp=mlp,
    final=final,
    input_note=input_note,
)
def read_config(c: dict) -> tuple[dict, dict]:
    """ModernBertConfig's hyper-parameters and wanted tensor shapes."""
    d, ff = positive_int(c, "hidden_size", 768), positive_int(c, "intermediate_size", 1152)
    n_head, n_layer = positive_int(c, "num_attention_heads", 12), positive_int(c, "num_hidden_layers", 22)
    if d % n_head:
        raise ModelError(f"hidden size {d} is not divisible by {n_head} heads")
    types = c.get("layer_types")
    if isinstance(types, list) and len(types) == n_layer:
        local = [t == "sliding_attention" for t in types]
    else:
        every = positive_int(c, "global_attn_every_n_layers", 3)
        local = [bool(l % every) for l in range(n_layer)]
    half = positive_int(c, "local_attention", 128) // 2  # transformers' sliding_window: |i - j| <= it is seen
    hp = {
        "d_model": d,
        "n_head": n_head,
        "n_layer": n_layer,
        "max_positions": positive_int(c, "max_position_embeddings", 8192),
        "eps": fraction(c, "norm_eps", 1e-5),
        "activation": c.get("hidden_activation", "gelu"),
        "causal": False,
        "positions_key": "max_position_embeddings",
        "norm_bias": bool(c.get("norm_bias", False)),
        "attention_bias": bool(c.get("attention_bias", False)),
        "mlp_bias": bool(c.get("mlp_bias", False)),
        "windows": [half + 1 if s else None for s in local],
        "ropes": _ropes(c, d // n_head, local),
    }
    hp["rope"] = hp["ropes"][0]
    wanted: dict[str, tuple] = {WORD: (None, d)}
    norms = ["embeddings.norm", "final_norm"]
    for l in range(n_layer):
        p = f"layers.{l}."
        norms += [p + "mlp_norm"] + ([p + "attn_norm"] if l > 0 else [])
        wanted |= {p + "attn.Wqkv.weight": (3 * d, d), p + "attn.Wo.weight": (d, d)}
        wanted |= {p + "mlp.Wi.weight": (2 * ff, d), p + "mlp.Wo.weight": (d, ff)}
        if hp["attention_bias"]:
            wanted |= {p + "attn.Wqkv.bias": (3 * d,), p + "attn.Wo.bias": (d,)}
        if hp["mlp_bias"]:
            wanted |= {p + "mlp.Wi.bias": (2 * ff,), p + "mlp.Wo.bias": (d,)}
    for name in norms:
        wanted |= {name + ".weight": (d,), **({name + ".bias": (d,)} if hp["norm_bias"] else {})}
    return hp, wanted
