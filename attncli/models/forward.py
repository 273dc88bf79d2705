"""BERT and GPT-2 forward passes in NumPy, float32, mirroring transformers' eager code.

BERT (modeling_bert.py): x = LN(word + token_type[0] + position); per layer
    x = LN(x + Attn(x) W_O + b_O);   x = LN(x + act(x W_1 + b_1) W_2 + b_2)      (post-LayerNorm)
GPT-2 (modeling_gpt2.py): x = wte + wpe; per layer
    x = x + Attn(LN_1(x)) W_O + b_O;  x = x + act(LN_2(x) W_fc + b_fc) W_proj + b_proj   (pre-LayerNorm)
    and LN_f after the last layer. Conv1D stores weights [in, out]; c_attn is q, k, v side by side.
Attn(x) = concat_h softmax(Q_h K_hᵀ · scale + mask) V_h, scale = 1/√d_k (GPT-2 may also divide by
layer + 1, `scale_attn_by_inverse_layer_idx`). BERT's act is the exact erf GELU, GPT-2's gelu_new the
tanh approximation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attncli.core.attention import merge_heads, softmax, split_heads

from .load import Model, ModelError, check_layer

# ---- elementwise ----------------------------------------------------------------------------------


def erfc(x):  # [...] -> [...] float64
    """Complementary error function; relative error < 1.2e-7 for every real x (measured 1.05e-7).

    The Chebyshev fit of Numerical Recipes (2nd ed., section 6.2, `erfcc`), evaluated in float64.
    """
    z = np.abs(np.asarray(x, dtype=np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (
        1.00002368
        + t
        * (
            0.37409196
            + t
            * (
                0.09678418
                + t
                * (
                    -0.18628806
                    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
                )
            )
        )
    )
    r = t * np.exp(-z * z + poly)
    return np.where(np.asarray(x) >= 0, r, 2.0 - r)


_ERF_TAYLOR = [(-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(10)]


def erf(x):  # [...] -> [...] float64
    """Error function (NumPy has none); absolute error < 1e-7, relative error < 1.2e-7 everywhere.

    |x| < 0.5: its Maclaurin series to x^19 (remainder < 1e-14); elsewhere 1 - erfc(x).
    """
    x = np.asarray(x, dtype=np.float64)
    x2 = x * x
    series = sum(c * x2**n for n, c in enumerate(_ERF_TAYLOR)) * x * (2.0 / math.sqrt(math.pi))
    return np.where(np.abs(x) < 0.5, series, 1.0 - erfc(x))


def gelu(x):  # [...] float32 -> [...] float32
    """Exact GELU, x·Φ(x) = ½x(1 + erf(x/√2)) = ½x·erfc(-x/√2).

    Relative error < 1.7e-7 (≤ 2.5 float32 ulp) for every float32 x, tails included.
    """
    z = np.asarray(x, dtype=np.float64)
    return (0.5 * z * erfc(-z / math.sqrt(2.0))).astype(np.float32)


def gelu_tanh(x):  # [...] float32 -> [...] float32
    """GPT-2's gelu_new: ½x(1 + tanh(√(2/π)(x + 0.044715x³))), in float32 like transformers."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def relu(x):  # [...] -> [...]
    return np.maximum(x, 0)


ACTIVATION_FNS = {
    "gelu": gelu,
    "gelu_python": gelu,
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "relu": relu,
}


def layer_norm(x, g, b, eps: float):  # [n, d], [d], [d] -> [n, d]
    """(x - mean) / √(var + eps) · g + b over the last axis, biased variance (torch.nn.LayerNorm)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    return (x - mean) * (1.0 / np.sqrt(var + np.float32(eps))) * g + b


# ---- one attention -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerSteps:
    """Every stage of one layer's self-attention, the model's own numbers (for `attn steps`).

    Projection matrices are [in, out] views of the checkpoint (BERT's nn.Linear weights transposed,
    GPT-2's c_attn split in three), so that Q = x W_Q + b_Q.
    """

    layer: int
    x: np.ndarray  # [n, d_model] the attention's input (GPT-2: after ln_1)
    w_q: np.ndarray  # [d_model, n_head * d_k]
    b_q: np.ndarray  # [n_head * d_k]
    w_k: np.ndarray  # [d_model, n_head * d_k]
    b_k: np.ndarray  # [n_head * d_k]
    w_v: np.ndarray  # [d_model, n_head * d_k]
    b_v: np.ndarray  # [n_head * d_k]
    w_o: np.ndarray  # [n_head * d_k, d_model]
    b_o: np.ndarray  # [d_model]
    scale: float  # 1/√d_k (GPT-2 with scale_attn_by_inverse_layer_idx: also / (layer + 1))
    q: np.ndarray  # [n_head, n, d_k]
    k: np.ndarray  # [n_head, n, d_k]
    v: np.ndarray  # [n_head, n, d_k]
    scores: np.ndarray  # [n_head, n, n]  Q Kᵀ · scale, before the mask, finite
    masked: np.ndarray | None  # [n_head, n, n] bool, True = masked (GPT-2: key after query); None for BERT
    weights: np.ndarray  # [n_head, n, n]  softmax rows, sum 1
    out: np.ndarray  # [n_head, n, d_k]  A_h V_h
    output: np.ndarray  # [n, d_model]  concat_h(A_h V_h) W_O + b_O, before the residual


def self_attention(layer: int, x, p: dict, n_head: int, scale: float, causal: bool) -> LayerSteps:
    # [n, d_model] -> LayerSteps (weights [n_head, n, n], output [n, d_model])
    """Multi-head self-attention of one layer with projections p (w_q, b_q, ..., w_o, b_o)."""
    q = split_heads(x @ p["w_q"] + p["b_q"], n_head)  # [n_head, n, d_k]
    k = split_heads(x @ p["w_k"] + p["b_k"], n_head)  # [n_head, n, d_k]
    v = split_heads(x @ p["w_v"] + p["b_v"], n_head)  # [n_head, n, d_k]
    scores = (q @ k.transpose(0, 2, 1)) * scale  # [n_head, n, n]
    n = x.shape[0]
    masked = np.broadcast_to(np.triu(np.ones((n, n), dtype=bool), k=1), scores.shape) if causal else None
    weights = softmax(scores, masked)  # [n_head, n, n]
    out = weights @ v  # [n_head, n, d_k]
    output = merge_heads(out) @ p["w_o"] + p["b_o"]  # [n, d_model]
    return LayerSteps(
        layer=layer,
        x=x,
        scale=scale,
        q=q,
        k=k,
        v=v,
        scores=scores,
        masked=masked,
        weights=weights,
        out=out,
        output=output,
        **p,
    )


# ---- BERT -----------------------------------------------------------------------------------------


def bert_embed(model: Model, ids):  # [n] -> [n, d_model]
    """LayerNorm(word + token_type 0 + absolute position), in transformers' order of additions."""
    w, n = model.weights, len(ids)
    x = w.rows("embeddings.word_embeddings.weight", ids) + w["embeddings.token_type_embeddings.weight"][0]
    x = x + w["embeddings.position_embeddings.weight"][:n]
    return layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], model.eps)


def bert_attention(model: Model, l: int, x):  # [n, d_model] -> [n, d_model], LayerSteps
    """Self-attention, output dense, residual, LayerNorm (BertAttention)."""
    w, pre = model.weights, f"encoder.layer.{l}.attention."
    p = {}
    for key, name in (("q", "self.query"), ("k", "self.key"), ("v", "self.value"), ("o", "output.dense")):
        p["w_" + key], p["b_" + key] = w[f"{pre}{name}.weight"].T, w[f"{pre}{name}.bias"]
    steps = self_attention(l, x, p, model.n_head, model.d_k**-0.5, model.causal)
    x = layer_norm(steps.output + x, w[pre + "output.LayerNorm.weight"], w[pre + "output.LayerNorm.bias"], model.eps)
    return x, steps


def bert_mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """Intermediate dense + activation, output dense, residual, LayerNorm (BertIntermediate, BertOutput)."""
    w, pre, act = model.weights, f"encoder.layer.{l}.", ACTIVATION_FNS[model.activation]
    h = act(x @ w[pre + "intermediate.dense.weight"].T + w[pre + "intermediate.dense.bias"])  # [n, d_ff]
    h = h @ w[pre + "output.dense.weight"].T + w[pre + "output.dense.bias"]  # [n, d_model]
    return layer_norm(h + x, w[pre + "output.LayerNorm.weight"], w[pre + "output.LayerNorm.bias"], model.eps)


def bert_final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return x


# ---- GPT-2 ----------------------------------------------------------------------------------------


def gpt2_embed(model: Model, ids):  # [n] -> [n, d_model]
    """Token embedding + absolute position embedding (no LayerNorm: GPT-2 normalises inside blocks)."""
    w = model.weights
    return w.rows("wte.weight", ids) + w["wpe.weight"][: len(ids)]


def gpt2_attention(model: Model, l: int, x):  # [n, d_model] -> [n, d_model], LayerSteps
    """x + c_proj(causal self-attention(ln_1(x))) (GPT2Block, first half)."""
    w, pre, d = model.weights, f"h.{l}.", model.d_model
    a = layer_norm(x, w[pre + "ln_1.weight"], w[pre + "ln_1.bias"], model.eps)
    c_attn, b_attn = w[pre + "attn.c_attn.weight"], w[pre + "attn.c_attn.bias"]  # [d, 3d], [3d]
    p = {
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
    steps = self_attention(l, a, p, model.n_head, scale, causal=True)
    return steps.output + x, steps


def gpt2_mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """x + c_proj(act(c_fc(ln_2(x)))) (GPT2Block, second half)."""
    w, pre, act = model.weights, f"h.{l}.", ACTIVATION_FNS[model.activation]
    m = layer_norm(x, w[pre + "ln_2.weight"], w[pre + "ln_2.bias"], model.eps)
    h = act(m @ w[pre + "mlp.c_fc.weight"] + w[pre + "mlp.c_fc.bias"])  # [n, d_ff]
    return x + (h @ w[pre + "mlp.c_proj.weight"] + w[pre + "mlp.c_proj.bias"])


def gpt2_final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return layer_norm(x, model.weights["ln_f.weight"], model.weights["ln_f.bias"], model.eps)


ARCHITECTURES = {
    "bert": (bert_embed, bert_attention, bert_mlp, bert_final),
    "gpt2": (gpt2_embed, gpt2_attention, gpt2_mlp, gpt2_final),
}


# ---- the whole pass -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Forward:
    """What one pass computed. Lists are indexed by layer, 0..last computed layer."""

    weights: list[np.ndarray]  # per layer [n_head, n, n], the model's attention (output_attentions)
    hidden: list[np.ndarray]  # per layer [n, d_model], the residual stream entering it (hidden_states)
    steps: LayerSteps | None  # every stage of `steps_layer`, if one was asked for
    final: np.ndarray | None  # [n, d_model] after the last layer (GPT-2: after ln_f); None if stopped early


def forward(model: Model, ids, upto_layer: int | None = None, steps_layer: int | None = None) -> Forward:
    # [n] token ids -> Forward (weights: layers x [n_head, n, n])
    """Run the model on `ids` (from `encode`), through the attention of `upto_layer` (default: all layers).

    With `upto_layer`, later layers and that layer's own MLP are never computed (nor their weights
    read). `steps_layer` keeps every stage of that layer's attention (it extends the pass if needed).
    Layers may be negative (counted from the end).
    """
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if ids.size == 0:
        raise ModelError("no token ids to run")
    if ids.size > model.max_positions:
        raise ModelError(f"{ids.size} tokens, but {model.name} takes at most {model.max_positions}")
    if ids.min() < 0 or ids.max() >= model.vocab_size:
        bad = ids[(ids < 0) | (ids >= model.vocab_size)][0]
        raise ModelError(f"token id {bad} is outside the embedding table of {model.name} ({model.vocab_size} rows)")
    last = model.n_layer - 1 if upto_layer is None else check_layer(model, upto_layer)
    if steps_layer is not None:
        steps_layer = check_layer(model, steps_layer)
        last = max(last, steps_layer)
    embed, attention, mlp, final = ARCHITECTURES[model.model_type]
    x = embed(model, ids)  # [n, d_model]
    weights, hidden, steps = [], [], None
    for l in range(last + 1):
        hidden.append(x)
        x, layer_steps = attention(model, l, x)
        weights.append(layer_steps.weights)
        if l == steps_layer:
            steps = layer_steps
        if l == last and upto_layer is not None:
            break  # the MLP of the last wanted layer does not change its attention
        x = mlp(model, l, x)
    return Forward(weights=weights, hidden=hidden, steps=steps, final=final(model, x) if upto_layer is None else None)
