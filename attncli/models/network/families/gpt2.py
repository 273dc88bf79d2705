"""GPT-2 (Radford et al. 2019) as transformers' modeling_gpt2.py computes it (pre-LayerNorm decoder).

x = wte + wpe; per layer
    x = x + Attn(LN_1(x)) W_O + b_O;  x = x + act(LN_2(x) W_fc + b_fc) W_proj + b_proj
and LN_f after the last layer. Conv1D stores weights [in, out]; c_attn is q, k, v side by side.
The score is Q Kᵀ / √d_k, optionally without the √d_k (scale_attn_weights false) or also divided
by layer + 1 (scale_attn_by_inverse_layer_idx); gelu_new is the tanh approximation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attncli.models.files.hparams import fraction, positive_int
from attncli.models.network.attention import attend, offset
from attncli.models.network.blocks import ACTIVATION_FNS, dense, layer_norm, norm

from .registry import register

if TYPE_CHECKING:
    from attncli.models.network.model import Model


def embed(model: Model, ids):  # [n] -> [n, d_model]
    """Token embedding + absolute position embedding (no LayerNorm: GPT-2 normalises inside blocks); the
    positions from `offset()` on (0, or the positions a KVCache already holds)."""
    w, start = model.weights, offset()
    return w.rows("wte.weight", ids) + w["wpe.weight"][start : start + len(ids)]


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """x + c_proj(causal self-attention(ln_1(x))) (GPT2Block, first half)."""
    w, pre, d = model.weights, f"h.{l}.", model.d_model
    a = norm(w, pre + "ln_1", x, model.eps)
    c_attn, b_attn = w[pre + "attn.c_attn.weight"], w[pre + "attn.c_attn.bias"]  # [d, 3d], [3d]
    p = {
        "w_qkv": c_attn,  # q, k, v in one product
        "b_qkv": b_attn,
        "w_q": c_attn[:, :d],
        "b_q": b_attn[:d],
        "w_k": c_attn[:, d : 2 * d],
        "b_k": b_attn[d : 2 * d],
        "w_v": c_attn[:, 2 * d :],
        "b_v": b_attn[2 * d :],
        "w_o": w[pre + "attn.c_proj.weight"],
        "b_o": w[pre + "attn.c_proj.bias"],
    }
    scale = model.d_k**-0.5 if model.hp["scale_attn_weights"] else 1.0
    if model.hp["scale_by_layer"]:
        scale /= float(l + 1)
    steps = attend(l, a, p, model.n_head, scale, causal=True)
    return steps.output + x, steps


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """x + c_proj(act(c_fc(ln_2(x)))) (GPT2Block, second half)."""
    w, pre, act = model.weights, f"h.{l}.", ACTIVATION_FNS[model.activation]
    m = norm(w, pre + "ln_2", x, model.eps)
    h = act(dense(m, w[pre + "mlp.c_fc.weight"]) + w[pre + "mlp.c_fc.bias"])  # [n, d_ff]
    return x + (dense(h, w[pre + "mlp.c_proj.weight"]) + w[pre + "mlp.c_proj.bias"])


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return layer_norm(x, model.weights["ln_f.weight"], model.weights["ln_f.bias"], model.eps)


def input_note(layer: int) -> str:
    return f"X = LN_1(h): layer {layer}'s LayerNorm of the residual stream (pre-LayerNorm)"


@register(
    "gpt2",
    model_types=("gpt2",),
    word="wte.weight",
    positions="wpe.weight",
    vocab_files="vocab.json + merges.txt",
    architectures={"GPT2": "gpt2"},
    embed=embed,
    attention=attention,
    mlp=mlp,
    final=final,
    input_note=input_note,
    head=("lm_head.weight", True),
)
def read_config(c: dict) -> tuple[dict, dict]:
    """GPT-2 hyper-parameters (transformers' GPT2Config defaults) and wanted tensor shapes (Conv1D: [in, out])."""
    d = positive_int(c, "n_embd", 768)
    ff = positive_int(c, "n_inner", 4 * d) if c.get("n_inner") is not None else 4 * d
    hp = {
        "d_model": d,
        "n_head": positive_int(c, "n_head", 12),
        "n_layer": positive_int(c, "n_layer", 12),
        "max_positions": positive_int(c, "n_positions", 1024),
        "eps": fraction(c, "layer_norm_epsilon", 1e-5),
        "activation": c.get("activation_function", "gelu_new"),
        "causal": True,
        "positions_key": "n_positions",
        "scale_attn_weights": bool(c.get("scale_attn_weights", True)),
        "scale_by_layer": bool(c.get("scale_attn_by_inverse_layer_idx", False)),
    }
    wanted = {"wte.weight": (None, d), "wpe.weight": (None, d), "ln_f.weight": (d,), "ln_f.bias": (d,)}
    for l in range(hp["n_layer"]):
        p = f"h.{l}."
        wanted |= {
            p + "ln_1.weight": (d,),
            p + "ln_1.bias": (d,),
            p + "ln_2.weight": (d,),
            p + "ln_2.bias": (d,),
            p + "attn.c_attn.weight": (d, 3 * d),
            p + "attn.c_attn.bias": (3 * d,),
            p + "attn.c_proj.weight": (d, d),
            p + "attn.c_proj.bias": (d,),
            p + "mlp.c_fc.weight": (d, ff),
            p + "mlp.c_fc.bias": (ff,),
            p + "mlp.c_proj.weight": (ff, d),
            p + "mlp.c_proj.bias": (d,),
        }
    return hp, wanted
