"""The rotary decoders (Llama and the families built like it): pre-RMSNorm blocks, RoPE, GQA, gated MLP.

Per layer, as transformers' modeling_llama.py (Mistral, Qwen 2/3 and Gemma 1/2 differ only in the
switches of `hp`):
    a = RMSNorm(x);  x = x + Attn(a) W_O;  x = x + down(act(gate(RMSNorm(x))) · up(RMSNorm(x)))
with Attn the causal attention of RoPE-rotated queries and keys, n_kv_head key/value heads
(grouped-query), a sliding window on the layers the config names, and RMSNorm after the model.
Gemma's switches: embeddings scaled by √d_model, RMSNorm by (1 + w); Gemma 2's also: the score
scale 1/√query_pre_attn_scalar, soft-capped scores, RMSNorm after the attention and around the MLP.
Qwen 3's: RMSNorm of every query and key head before RoPE. OLMo 2's: RMSNorm after the attention and
the MLP instead of before, and of q and k over the whole projection; Phi-3's: q, k, v and gate, up fused in
one weight each; SmolLM3's and Gemma 3's: each layer its own RoPE (or none). RoPE's scalings are
transformers' (linear, llama3, yarn and longrope with their attention factor on cos and sin).

This module holds the blocks and the config reading they share; llama.py, qwen.py, gemma.py, olmo.py and
phi.py register the families.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError, fraction, positive_int, positive_number
from attncli.models.network.attention import attend, offset, text_lengths
from attncli.models.network.blocks import ACTIVATION_FNS, apply_rope, gated_mlp, rms_norm, rope_frequencies, rope_tables

if TYPE_CHECKING:
    from attncli.models.network.model import Model

WORD = "embed_tokens.weight"
ROPE_TYPES = ("default", "linear", "dynamic", "llama3", "yarn", "longrope")


# ---- blocks ---------------------------------------------------------------------------------------


def embed(model: Model, ids):  # [n] -> [n, d_model]
    """The token rows (Gemma: times √d_model, rounded to float32 as transformers' embed_scale)."""
    x = model.weights.rows(WORD, ids)
    scale = model.hp["embed_scale"]
    return x * np.float32(scale) if scale is not None else x


def _norm(model: Model, name: str, x):  # [..., d] -> [..., d]
    return rms_norm(x, model.weights[name], model.eps, model.hp["norm_offset"])


def _rotate(model: Model, l: int, q, k):  # [(batch,) h, n, d_k], [(batch,) h_kv, n, d_k] -> the same, rotated
    """RMSNorm of q and k (Qwen 3, Gemma 3: of each head; OLMo 2: of the whole projection), then RoPE on the first
    d_rot dimensions of each head (none on SmolLM3's NoPE layers)."""
    pre, kind = f"layers.{l}.self_attn.", model.hp["qk_norm"]
    if kind == "whole":
        q, k = _whole_norm(model, pre + "q_norm.weight", q), _whole_norm(model, pre + "k_norm.weight", k)
    elif kind:
        q, k = _norm(model, pre + "q_norm.weight", q), _norm(model, pre + "k_norm.weight", k)
    r = model.hp["ropes"][l]
    if r is None:
        return q, k
    cos, sin = tables(r, q.shape[-2])
    return apply_rope(q, cos, sin), apply_rope(k, cos, sin)


def _whole_norm(model: Model, name: str, x):  # [(batch,) h, n, d_k] -> the same
    """RMSNorm over every head of a token at once (OLMo 2 normalises q_proj(x) and k_proj(x) before the split)."""
    *lead, h, n, d_k = x.shape
    merged = x.swapaxes(-3, -2).reshape(*lead, n, h * d_k)  # [(batch,) n, h · d_k]
    return _norm(model, name, merged).reshape(*lead, n, h, d_k).swapaxes(-3, -2)


def _projections(model: Model, l: int) -> dict:  # -> {"w_q": [d_model, n_head · d_k], "b_q": ..., "w_o", "b_o"}
    """The q, k, v, o projections as [in, out] matrices (Phi-3: q, k and v column blocks of its fused qkv_proj)."""
    w, hp, pre = model.weights, model.hp, f"layers.{l}.self_attn."
    if hp["fused"]:
        qkv = w[pre + "qkv_proj.weight"].T  # [d_model, (n_head + 2 n_kv_head) · d_k]
        d_q, d_kv = model.n_head * model.d_k, model.n_kv_head * model.d_k
        p = {"w_q": qkv[:, :d_q], "w_k": qkv[:, d_q : d_q + d_kv], "w_v": qkv[:, d_q + d_kv :]}
        p["w_o"] = w[pre + "o_proj.weight"].T
    else:
        p = {"w_" + key: w[f"{pre}{key}_proj.weight"].T for key in "qkvo"}  # nn.Linear: [out, in]
    for key in "qkvo":
        bias = f"{pre}{key}_proj.bias"
        p["b_" + key] = w[bias] if key in hp["biases"] else np.zeros(p["w_" + key].shape[1], dtype=np.float32)
    return p


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """x + o_proj(attention(input_layernorm(x))) (Gemma 2: the output RMSNormed before the residual; OLMo 2: only
    that, the attention reads x itself)."""
    hp, pre = model.hp, f"layers.{l}."
    a = _norm(model, pre + "input_layernorm.weight", x) if hp["pre_norm"] else x
    steps = attend(
        l,
        a,
        _projections(model, l),
        model.n_head,
        hp["scale"],
        True,
        n_kv_head=model.n_kv_head,
        window=hp["windows"][l],
        softcap=hp["softcap"],
        rotate=lambda q, k: _rotate(model, l, q, k),
    )
    return x + attention_out(model, l, steps.output), steps


def attention_out(model: Model, l: int, o):  # [..., n, d_model] -> [..., n, d_model]
    """How the attention's output o enters the residual stream: as it is, or RMSNormed (Gemma 2, OLMo 2)."""
    if model.hp["sandwich"]:
        return _norm(model, f"layers.{l}.post_attention_layernorm.weight", o)
    return o


def attention_out_linear(model: Model, l: int, o) -> tuple | None:  # [n, d_model] -> ([d_model], [n]) float64
    """`attention_out`'s RMSNorm (Gemma 2 and 3, OLMo 2) as a linear map at each row: its gain γ = offset + w and
    each row's scale s_i = 1 / √(mean(o_i²) + eps), so that N(o_i) = γ ⊙ o_i · s_i; None when o enters as it is.

    >>> from types import SimpleNamespace
    >>> m = SimpleNamespace(hp={"sandwich": True, "norm_offset": 1.0}, eps=0.0,
    ...                     weights={"layers.0.post_attention_layernorm.weight": np.zeros(2, np.float32)})
    >>> gamma, s = attention_out_linear(m, 0, np.array([[3.0, 4.0]]))  # rms √12.5
    >>> gamma.tolist(), round(float(s[0]) ** -2, 6)
    ([1.0, 1.0], 12.5)
    """
    if not model.hp["sandwich"]:
        return None
    gamma = np.asarray(model.weights[f"layers.{l}.post_attention_layernorm.weight"], np.float64)
    o = np.asarray(o, np.float64)
    return gamma + model.hp["norm_offset"], 1.0 / np.sqrt(np.square(o).mean(axis=-1) + model.eps)


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """x + down(act(gate(m)) · up(m)), m the RMSNormed stream (Gemma 2: pre/post feed-forward norms; OLMo 2: only
    the post one, m = x; Phi-3: gate and up the halves of its gate_up_proj)."""
    w, hp, pre = model.weights, model.hp, f"layers.{l}."
    before = "pre_feedforward_layernorm" if hp["sandwich"] else "post_attention_layernorm"
    m = _norm(model, f"{pre}{before}.weight", x) if hp["pre_norm"] else x
    if hp["fused"]:
        gate_up = w[pre + "mlp.gate_up_proj.weight"]  # [2 d_ff, d_model]: gate's rows, then up's
        gate, up = gate_up[: len(gate_up) // 2], gate_up[len(gate_up) // 2 :]
    else:
        gate, up = w[pre + "mlp.gate_proj.weight"], w[pre + "mlp.up_proj.weight"]
    biases = None
    if hp["mlp_bias"]:
        biases = tuple(w[f"{pre}mlp.{name}_proj.bias"] for name in ("gate", "up", "down"))
    h = gated_mlp(m, gate, up, w[pre + "mlp.down_proj.weight"], ACTIVATION_FNS[model.activation], biases)
    if hp["sandwich"]:
        h = _norm(model, pre + "post_feedforward_layernorm.weight", h)
    return x + h


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return _norm(model, "norm.weight", x)


def input_note(layer: int) -> str:
    return f"X = RMSNorm(h): layer {layer}'s input_layernorm of the residual stream (pre-norm)"


BLOCKS = {
    "word": WORD,
    "embed": embed,
    "attention": attention,
    "mlp": mlp,
    "final": final,
    "input_note": input_note,
    "attention_out": attention_out,
    "attention_out_linear": attention_out_linear,
}


# ---- config ---------------------------------------------------------------------------------------


def rope(
    c: dict,
    d_k: int,
    theta_key: str = "rope_theta",
    partial_key: str = "partial_rotary_factor",
    params: dict | None = None,
    theta: float = 10000.0,
) -> dict:
    """RoPE as config.json says: rope_parameters (transformers 5) or rope_scaling + rope_theta (older files), or
    `params`, one layer type's set (Gemma 3), with `theta` its default. -> {"rope": the hyper-parameters `tables`
    reads: type, theta, d_rot, inv_freq, long (longrope: the original length and the frequencies past it, or
    None), factor (yarn and longrope's attention factor, which scales cos and sin)}."""
    if params is None:
        params = c.get("rope_parameters") or c.get("rope_scaling") or {}
        if not isinstance(params, dict) or any(isinstance(v, dict) for v in params.values()):
            raise ModelError(f"config.json: rope_parameters {params!r} is not supported (one set for every layer)")
    kind = params.get("rope_type", params.get("type", "default"))
    if kind in ("su", "yarn") and c.get("model_type") == "phi3":
        kind = "longrope"  # as transformers' Phi3Config: Phi-3's "su" and "yarn" are its longrope
    if not isinstance(kind, str) or kind not in ROPE_TYPES:
        raise ModelError(f"config.json: rope type {kind!r} is not supported; supported: {', '.join(ROPE_TYPES)}")
    theta = positive_number(params, "rope_theta", positive_number(c, theta_key, theta))  # type: ignore[assignment]
    partial = positive_number(params, "partial_rotary_factor", positive_number(c, partial_key, 1.0))
    assert theta is not None and partial is not None  # both have defaults
    if partial > 1:
        raise ModelError(
            f"config.json: {partial_key} is the share of each head that is rotated, at most 1, not {partial!r}"
        )
    d_rot = int(d_k * partial)
    needs = {"linear": ("factor",), "llama3": ("factor", "low_freq_factor", "high_freq_factor")}
    needs |= {"yarn": ("factor",), "longrope": ("short_factor", "long_factor")}
    missing = [k for k in needs.get(kind, ()) if k not in params]
    if missing:
        raise ModelError(f"config.json: rope type {kind!r} needs {missing[0]}")
    scaling = None
    if kind in ("linear", "llama3", "yarn", "longrope"):
        # the length trained on: Phi-3 keeps it beside rope_scaling, and that one comes first (as in transformers)
        original = c.get("original_max_position_embeddings") or params.get("original_max_position_embeddings")
        original = original or c.get("max_position_embeddings", 2048)
        scaling = {**params, "rope_type": kind, "original_max_position_embeddings": original}
        for key in ("low_freq_factor", "high_freq_factor", "original_max_position_embeddings", "beta_fast"):
            positive_number(scaling, key, 1.0)  # each one a number, or one line naming it
        for key in ("factor", "attention_factor", "mscale", "mscale_all_dim", "beta_slow"):
            positive_number(scaling, key, None)
    factor, long = 1.0, None
    if kind == "yarn":
        factor = _yarn_settings(c, scaling)  # type: ignore[arg-type]
    if kind == "longrope":
        factor, long = _longrope_settings(c, scaling, d_rot, theta)  # type: ignore[arg-type]
    return {
        "rope": {
            "type": kind,
            "theta": theta,
            "d_rot": d_rot,
            "inv_freq": rope_frequencies(d_rot, theta, scaling if kind != "dynamic" else None),
            "long": long,
            "factor": factor,
        },
    }


def _yarn_settings(c: dict, s: dict) -> float:
    """Complete YaRN's settings in `s` (factor, beta_fast 32, beta_slow 1, truncate true, as transformers' defaults)
    -> its attention factor: attention_factor, else 0.1·ln(factor) + 1 (mscale / mscale_all_dim when both given)."""
    old = float(s["original_max_position_embeddings"])
    s["factor"] = float(s["factor"] or c.get("max_position_embeddings", 2048) / old)
    s["beta_fast"], s["beta_slow"] = s.get("beta_fast") or 32, s.get("beta_slow") or 1
    s["truncate"] = s.get("truncate", True)

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if s.get("attention_factor") is not None:
        return float(s["attention_factor"])
    if s.get("mscale") and s.get("mscale_all_dim"):
        return mscale(s["factor"], s["mscale"]) / mscale(s["factor"], s["mscale_all_dim"])
    return mscale(s["factor"])


def _longrope_settings(c: dict, s: dict, d_rot: int, theta: float) -> tuple[float, tuple]:
    """LongRoPE's attention factor (attention_factor, else √(1 + ln(factor) / ln(original length)), factor the ratio of
    max_position_embeddings to the original length when not given) and (the original length, the frequencies of a
    text longer than it); `s` gets the short factors, the frequencies up to that length."""
    old = float(s["original_max_position_embeddings"])
    for key in ("short_factor", "long_factor"):
        value = s[key]
        if not isinstance(value, list) or len(value) != d_rot // 2 or not all(_is_number(v) for v in value):
            raise ModelError(f"config.json: rope {key} must be a list of {d_rot // 2} numbers")
    factor = s.get("factor") or c.get("max_position_embeddings", 2048) / old
    attention = s.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(old))
    long = rope_frequencies(d_rot, theta, {**s, "ext_factors": s["long_factor"]})
    s["ext_factors"] = s["short_factor"]
    return float(attention), (int(old), long)


def _is_number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and v > 0


def tables(r: dict, n: int) -> tuple[np.ndarray, np.ndarray]:  # rope hyper-parameters, n -> [(B, 1,) n, d_rot] twice
    """cos and sin of the positions 0..n-1 (from `offset()` on, decoding with a KVCache) for one RoPE of `rope`
    (longrope: its long frequencies past the original length, as transformers' dynamic_rope_update), times its
    attention factor. In a padded batch (`padding`) a
    longrope's tables are each text's own, [B, 1, n, d_rot]: a text's factors follow its length, not the batch's."""
    lengths = text_lengths() if r["long"] is not None else None
    if lengths is not None:
        each = [_scaled(r, n, _frequencies(r, m)) for m in lengths]
        return np.stack([c for c, _ in each])[:, None], np.stack([s for _, s in each])[:, None]
    start = offset()  # decoding with a KVCache: the positions start..start+n-1, longrope's by the length so far
    return _scaled(r, n, _frequencies(r, start + n), start)


def _frequencies(r: dict, n: int) -> np.ndarray:  # -> [d_rot / 2]: longrope's long ones past the original length
    return r["long"][1] if r["long"] is not None and n > r["long"][0] else r["inv_freq"]


def _scaled(r: dict, n: int, inv, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    # -> [n, d_rot] twice (positions start..start+n-1), times the attention factor
    cos, sin = rope_tables(n, inv, start)
    if r["factor"] != 1.0:
        cos *= np.float32(r["factor"])
        sin *= np.float32(r["factor"])
    return cos, sin


def decoder_config(
    c: dict,
    *,
    biases: str,
    windows: list,
    qk_norm: bool | str = False,
    gemma: int = 0,
    pre_norm: bool = True,
    fused: bool = False,
    ropes: list | None = None,
) -> tuple[dict, dict]:
    """Hyper-parameters and wanted tensors of a rotary decoder; `biases` names the projections with one
    ("qkv" for Qwen 2), `windows` the sliding window of each layer (None: full causal), `gemma` 1, 2 or 3,
    `qk_norm` True (per head) or "whole" (OLMo 2: over the projection), `pre_norm` False for OLMo 2's norms after
    the attention and the MLP only, `fused` for Phi-3's qkv_proj and gate_up_proj, `ropes` each layer's RoPE
    (`rope`'s hyper-parameters, None for a layer without; default: config.json's on every layer)."""
    d, ff = positive_int(c, "hidden_size", 4096), positive_int(c, "intermediate_size", 11008)
    n_head, n_layer = positive_int(c, "num_attention_heads", 32), positive_int(c, "num_hidden_layers", 32)
    n_kv = positive_int(c, "num_key_value_heads", n_head) if c.get("num_key_value_heads") is not None else n_head
    d_k = positive_int(c, "head_dim", d // n_head) if c.get("head_dim") is not None else d // n_head
    if c.get("head_dim") is None and d % n_head:
        raise ModelError(f"hidden size {d} is not divisible by {n_head} heads")
    act_key = "hidden_activation" if gemma >= 2 else "hidden_act"
    activation = c.get(act_key) or ("gelu_pytorch_tanh" if gemma else "silu")
    if gemma == 1 and activation == "gelu":
        activation = "gelu_pytorch_tanh"  # transformers' GemmaConfig does the same: "gelu" meant the tanh form
    scale = d_k**-0.5
    if gemma >= 2:
        scale = float(positive_number(c, "query_pre_attn_scalar", 256.0) or 256.0) ** -0.5
    if ropes is None:
        ropes = [rope(c, d_k)["rope"]] * n_layer
    first = next((r for r in ropes if r is not None), None)
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
        "softcap": positive_number(c, "attn_logit_softcapping", None) if gemma >= 2 else None,
        "logit_softcap": (
            positive_number(c, "final_logit_softcapping", 30.0 if gemma == 2 else None) if gemma >= 2 else None
        ),
        "embed_scale": math.sqrt(d) if gemma else None,
        "norm_offset": 1.0 if gemma else 0.0,
        "sandwich": gemma >= 2 or not pre_norm,
        "pre_norm": pre_norm,
        "fused": fused,
        "mlp_bias": bool(c.get("mlp_bias")),
        "ropes": ropes,
        **({"rope": first} if first is not None else {}),
    }
    wanted: dict[str, tuple] = {WORD: (None, d), "norm.weight": (d,)}
    out = {"q": n_head * d_k, "k": n_kv * d_k, "v": n_kv * d_k}
    norms = ["input_layernorm", "post_attention_layernorm"] if pre_norm else ["post_attention_layernorm"]
    if hp["sandwich"]:
        norms += (
            ["pre_feedforward_layernorm", "post_feedforward_layernorm"] if pre_norm else ["post_feedforward_layernorm"]
        )
    qk = {"q": (d_k,), "k": (d_k,)} if qk_norm != "whole" else {"q": (n_head * d_k,), "k": (n_kv * d_k,)}
    for l in range(n_layer):
        p = f"layers.{l}."
        wanted |= {f"{p}{name}.weight": (d,) for name in norms}
        if fused:
            wanted[f"{p}self_attn.qkv_proj.weight"] = (sum(out.values()), d)
        else:
            wanted |= {f"{p}self_attn.{key}_proj.weight": (size, d) for key, size in out.items()}
        wanted |= {f"{p}self_attn.{key}_proj.bias": (out[key],) for key in biases if key in out}
        wanted[f"{p}self_attn.o_proj.weight"] = (d, n_head * d_k)
        if "o" in biases:
            wanted[f"{p}self_attn.o_proj.bias"] = (d,)
        if qk_norm:
            wanted |= {f"{p}self_attn.{key}_norm.weight": shape for key, shape in qk.items()}
        if fused:
            wanted[p + "mlp.gate_up_proj.weight"] = (2 * ff, d)
        else:
            wanted |= {p + "mlp.gate_proj.weight": (ff, d), p + "mlp.up_proj.weight": (ff, d)}
        wanted[p + "mlp.down_proj.weight"] = (d, ff)
        if hp["mlp_bias"]:
            wanted |= {p + "mlp.gate_proj.bias": (ff,), p + "mlp.up_proj.bias": (ff,), p + "mlp.down_proj.bias": (d,)}
    return hp, wanted


def layer_windows(c: dict, n_layer: int, sliding: list[bool], use_types: bool = True) -> list[int | None]:
    """The window of each layer: config.json's sliding_window on the layers `sliding` marks
    (config.json's layer_types, when it has them and `use_types`, decides instead)."""
    types = c.get("layer_types")
    if use_types and isinstance(types, list) and len(types) == n_layer:
        sliding = [t == "sliding_attention" for t in types]
    window = positive_int(c, "sliding_window", 4096) if c.get("sliding_window") is not None else None
    return [window if s and window is not None else None for s in sliding]
