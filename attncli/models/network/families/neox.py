"""GPT-NeoX (Pythia), as transformers' modeling_gpt_neox.py: pre-LayerNorm, one fused QKV projection
interleaved per head ([q_h, k_h, v_h] for each head h), RoPE on the first rotary_pct of each head, and
(use_parallel_residual) attention and MLP both reading the layer's input:
    x = x + Attn(LN_1(x)) W_O + b_O + MLP(LN_2(x))        (parallel)
    x = x + Attn(LN_1(x)) W_O + b_O;  x = x + MLP(LN_2(x))  (sequential)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError, fraction, positive_int
from attncli.models.network.attention import attend
from attncli.models.network.blocks import ACTIVATION_FNS, apply_rope, layer_norm, linear

from .registry import register
from .rotary import rope, tables

if TYPE_CHECKING:
    from attncli.models.network.model import Model


def embed(model: Model, ids):  # [n] -> [n, d_model]
    return model.weights.rows("embed_in.weight", ids)


def _ln(model: Model, name: str, x):  # [n, d] -> [n, d]
    return layer_norm(x, model.weights[name + ".weight"], model.weights[name + ".bias"], model.eps)


def _mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model], the MLP's output before any residual
    w, pre = model.weights, f"layers.{l}.mlp."
    h = ACTIVATION_FNS[model.activation](linear(w, pre + "dense_h_to_4h", x))
    return linear(w, pre + "dense_4h_to_h", h)


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """The attention half; with the parallel residual the MLP of the same input is added here too."""
    w, pre, h, d_k = model.weights, f"layers.{l}.", model.n_head, model.d_k
    a = _ln(model, pre + "input_layernorm", x)
    fused = w[pre + "attention.query_key_value.weight"].reshape(h, 3, d_k, model.d_model)  # rows [q_h k_h v_h]
    fused_b = w[pre + "attention.query_key_value.bias"].reshape(h, 3, d_k)
    p = {}
    for i, key in enumerate("qkv"):
        p["w_" + key] = fused[:, i].reshape(h * d_k, model.d_model).T  # [d_model, h * d_k]
        p["b_" + key] = np.ascontiguousarray(fused_b[:, i].reshape(h * d_k))
    p["w_o"], p["b_o"] = w[pre + "attention.dense.weight"].T, w[pre + "attention.dense.bias"]

    def rotate(q, k):  # [(batch,) h, n, d_k] twice -> the same, the first d_rot dimensions rotated
        cos, sin = tables(model.hp["rope"], q.shape[-2])
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin)

    steps = attend(l, a, p, h, d_k**-0.5, True, rotate=rotate)
    if model.hp["parallel"]:
        return _mlp(model, l, _ln(model, pre + "post_attention_layernorm", x)) + steps.output + x, steps
    return steps.output + x, steps


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """The sequential residual's MLP; nothing with the parallel residual (attention added it)."""
    if model.hp["parallel"]:
        return x
    return _mlp(model, l, _ln(model, f"layers.{l}.post_attention_layernorm", x)) + x


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return _ln(model, "final_layer_norm", x)


def input_note(layer: int) -> str:
    return f"X = LN_1(h): layer {layer}'s input_layernorm of the residual stream (pre-LayerNorm)"


@register(
    "gpt_neox",
    model_types=("gpt_neox",),
    architectures={"GPTNeoX": "gpt_neox"},
    word="embed_in.weight",
    embed=embed,
    attention=attention,
    mlp=mlp,
    final=final,
    input_note=input_note,
    head=("embed_out.weight", False),
    parallel_mlp=lambda model: model.hp["parallel"],
)
def read_config(c: dict) -> tuple[dict, dict]:
    """GPTNeoXConfig: rotary_pct (default 0.25) and rotary_emb_base, or transformers 5's rope_parameters."""
    d, ff = positive_int(c, "hidden_size", 6144), positive_int(c, "intermediate_size", 24576)
    n_head, n_layer = positive_int(c, "num_attention_heads", 64), positive_int(c, "num_hidden_layers", 44)
    if d % n_head:
        raise ModelError(f"hidden size {d} is not divisible by {n_head} heads")
    d_k = d // n_head
    hp = {
        "d_model": d,
        "n_head": n_head,
        "n_layer": n_layer,
        "max_positions": positive_int(c, "max_position_embeddings", 2048),
        "eps": fraction(c, "layer_norm_eps", 1e-5),
        "activation": c.get("hidden_act", "gelu"),
        "causal": True,
        "positions_key": "max_position_embeddings",
        "parallel": bool(c.get("use_parallel_residual", True)),
        **rope({"rotary_pct": 0.25, **c}, d_k, theta_key="rotary_emb_base", partial_key="rotary_pct"),
    }
    if not c.get("attention_bias", True):
        raise ModelError("config.json: attention_bias false is not supported for gpt_neox")
    wanted: dict[str, tuple] = {
        "embed_in.weight": (None, d),
        "final_layer_norm.weight": (d,),
        "final_layer_norm.bias": (d,),
    }
    for l in range(n_layer):
        p = f"layers.{l}."
        for name in ("input_layernorm", "post_attention_layernorm"):
            wanted |= {f"{p}{name}.weight": (d,), f"{p}{name}.bias": (d,)}
        wanted |= {
            p + "attention.query_key_value.weight": (3 * d, d),
            p + "attention.query_key_value.bias": (3 * d,),
            p + "attention.dense.weight": (d, d),
            p + "attention.dense.bias": (d,),
            p + "mlp.dense_h_to_4h.weight": (ff, d),
            p + "mlp.dense_h_to_4h.bias": (ff,),
            p + "mlp.dense_4h_to_h.weight": (d, ff),
            p + "mlp.dense_4h_to_h.bias": (d,),
        }
    return hp, wanted
