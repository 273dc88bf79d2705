"""T5 (Raffel et al. 2020) and mT5 (Xue et al. 2021, T5 v1.1's layers) as transformers' modeling_t5.py and
modeling_mt5.py compute them: a pre-RMSNorm encoder–decoder.

No biases, no score scaling (S = Q Kᵀ + position bias), the RMS-style T5LayerNorm, relative position
buckets (bidirectional in the encoder, unidirectional in the decoder), the bias table of each side's
first layer shared by all its layers. Per encoder layer
    x = x + SelfAttn(RMSNorm(x));  x = x + FF(RMSNorm(x));   the encoder's output: RMSNorm(x)
per decoder layer
    y = y + CausalSelfAttn(RMSNorm(y));  y = y + CrossAttn(RMSNorm(y), encoder output);  y = y + FF(RMSNorm(y))
FF is wo(act(wi(x))), or wo(act(wi_0(x)) · wi_1(x)) for feed_forward_proj "gated-gelu" (T5 v1.1, Flan-T5).
The next-token logits are RMSNorm(y) Wᵀ (the decoder's final_layer_norm), W the word table (tied) or lm_head; T5
(not mT5) first scales RMSNorm(y) by d_model^-0.5 unless config.json says scale_decoder_outputs false (or, in
older files, tie_word_embeddings false: T5 v1.1), as transformers 5's T5Config reads it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError, fraction, positive_int, token_id
from attncli.models.network.attention import attend, offset
from attncli.models.network.blocks import ACTIVATION_FNS, dense, gated_mlp, rms_norm
from attncli.models.network.cross import Decoder

from .registry import register

if TYPE_CHECKING:
    from attncli.models.network.model import Model


def position_buckets(n_q: int, n_k: int, bidirectional: bool, n_buckets: int, max_distance: int, start: int = 0):
    # -> [n_q, n_k] int64
    """T5's bucket of each key–query offset j - i: exact for small offsets, logarithmic up to max_distance; the
    queries are the positions from `start` on (decoding with a cache: the new ones).

    >>> position_buckets(1, 5, True, 8, 16).tolist()
    [[0, 5, 6, 6, 6]]
    >>> position_buckets(3, 3, False, 8, 16)[2].tolist(), position_buckets(1, 3, False, 8, 16, start=2).tolist()
    ([2, 1, 0], [[2, 1, 0]])
    """
    rel = np.arange(n_k)[None, :] - np.arange(start, start + n_q)[:, None]  # key - query
    buckets = np.zeros(rel.shape, dtype=np.int64)
    if bidirectional:
        n_buckets //= 2
        buckets += (rel > 0).astype(np.int64) * n_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    exact = n_buckets // 2
    far = np.maximum(rel, exact).astype(np.float32)  # the logarithmic half (the exact half is taken below)
    ratio = np.log(far / np.float32(exact)) / np.float32(math.log(max_distance / exact))
    large = np.minimum(exact + (ratio * np.float32(n_buckets - exact)).astype(np.int64), n_buckets - 1)
    return buckets + np.where(rel < exact, rel, large)


def _bias(model: Model, side: str, m: int):  # -> [n_head, m, start + m] float32
    """The position bias of `side` from the table of its first layer (shared by every layer), for m queries after
    the `offset()` positions already cached (none but while generating) over all of them as keys."""
    hp, start = model.hp, offset()
    cells = position_buckets(m, start + m, side == "encoder", hp["n_buckets"], hp["max_distance"], start)
    table = model.weights[f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]  # [buckets, h]
    return np.ascontiguousarray(table[cells].transpose(2, 0, 1))


def _projections(model: Model, pre: str) -> dict:
    w, zeros = model.weights, np.zeros(model.n_head * model.d_k, dtype=np.float32)
    p = {f"w_{k}": w[f"{pre}{k}.weight"].T for k in "qkvo"}
    return p | {f"b_{k}": zeros for k in "qkv"} | {"b_o": np.zeros(model.d_model, dtype=np.float32)}


def _norm(model: Model, name: str, x):  # [n, d_model] -> [n, d_model]
    return rms_norm(x, model.weights[name + ".weight"], model.eps)


def _self(model: Model, side: str, l: int, x) -> tuple:  # [(batch,) n, d_model] -> same, LayerSteps
    pre = f"{side}.block.{l}.layer.0."
    h = _norm(model, pre + "layer_norm", x)
    p = _projections(model, pre + "SelfAttention.")
    steps = attend(l, h, p, model.n_head, 1.0, side == "decoder", bias=_bias(model, side, x.shape[-2]))
    return x + steps.output, steps


def _ff(model: Model, pre: str, x):  # [n, d_model] -> [n, d_model]
    w, act = model.weights, ACTIVATION_FNS[model.activation]
    h = _norm(model, pre + "layer_norm", x)
    d = pre + "DenseReluDense."
    if model.hp["gated"]:
        return x + gated_mlp(h, w[d + "wi_0.weight"], w[d + "wi_1.weight"], w[d + "wo.weight"], act)
    return x + dense(act(dense(h, w[d + "wi.weight"].T)), w[d + "wo.weight"].T)


def embed(model: Model, ids):  # [n] -> [n, d_model]
    return model.weights.rows("shared.weight", ids)


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    return _self(model, "encoder", l, x)


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    return _ff(model, f"encoder.block.{l}.layer.1.", x)


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return _norm(model, "encoder.final_layer_norm", x)


def input_note(layer: int) -> str:
    where = "the word embeddings" if layer == 0 else f"the output of encoder layer {layer - 1}"
    return f"X = RMSNorm(x), x = {where}: the input of encoder layer {layer}'s self-attention"


def decoder_attention(model: Model, l: int, y) -> tuple:  # [m, d_model] -> [m, d_model], LayerSteps
    return _self(model, "decoder", l, y)


def cross_attention(model: Model, l: int, y, memory) -> tuple:  # [m, d], [n, d] -> [m, d], LayerSteps
    pre = f"decoder.block.{l}.layer.1."
    h = _norm(model, pre + "layer_norm", y)
    steps = attend(l, h, _projections(model, pre + "EncDecAttention."), model.n_head, 1.0, False, memory=memory)
    return y + steps.output, steps


def decoder_mlp(model: Model, l: int, y):  # [m, d_model] -> [m, d_model]
    return _ff(model, f"decoder.block.{l}.layer.2.", y)


def decoder_logits(model: Model, y):  # [m, d_model] the last decoder layer's output -> [m, vocab]
    """RMSNorm(y) (· d_model^-0.5 when scale_decoder_outputs) Wᵀ, W the word table or lm_head (load.py's `unembed`)."""
    assert model.unembed is not None  # encdec.check_head refuses a model without one
    h = _norm(model, "decoder.final_layer_norm", y)
    if model.hp["scale_decoder_outputs"]:
        h = h * np.float32(model.d_model**-0.5)
    return dense(h, model.weights[model.unembed].T)


def decoder_note(layer: int, part: str) -> str:
    if part == "cross":
        return (
            f"X = RMSNorm(y), y = decoder layer {layer}'s stream after its self-attention (the queries); "
            "X_context: the encoder's output, after its final RMSNorm (the keys and values)"
        )
    where = "the word embeddings of the decoder input" if layer == 0 else f"the output of decoder layer {layer - 1}"
    return f"X = RMSNorm(y), y = {where}: the input of decoder layer {layer}'s self-attention"


@register(
    "t5",
    model_types=("t5", "mt5"),
    architectures={"T5": "t5", "MT5": "mt5"},
    word="shared.weight",
    embed=embed,
    attention=attention,
    mlp=mlp,
    final=final,
    input_note=input_note,
    decoder=Decoder(embed, decoder_attention, cross_attention, decoder_mlp, decoder_note, decoder_logits),
    head=("lm_head.weight", True),
)
def read_config(c: dict) -> tuple[dict, dict]:
    """T5 hyper-parameters (transformers' T5Config defaults) and wanted tensor shapes."""
    d, d_kv, ff = positive_int(c, "d_model", 512), positive_int(c, "d_kv", 64), positive_int(c, "d_ff", 2048)
    heads, layers = positive_int(c, "num_heads", 8), positive_int(c, "num_layers", 6)
    dec_layers, n_buckets = (
        positive_int(c, "num_decoder_layers", layers),
        positive_int(c, "relative_attention_num_buckets", 32),
    )
    proj = c.get("feed_forward_proj", "relu")
    act = proj.split("-")[-1] if isinstance(proj, str) else None
    if not isinstance(proj, str) or proj not in (act, f"gated-{act}"):
        raise ModelError(f"config.json: feed_forward_proj {proj!r} is not 'ACT' or 'gated-ACT'")
    hp = {
        "d_model": d,
        "d_k": d_kv,
        "n_head": heads,
        "n_dec_head": heads,  # T5's decoder has the encoder's heads
        "d_dec_k": d_kv,
        "n_layer": layers,
        "n_dec_layer": dec_layers,
        "max_positions": positive_int(c, "n_positions", 512),
        "eps": fraction(c, "layer_norm_epsilon", 1e-6),
        "activation": "gelu_new" if act == "gelu" else act,  # T5Config's dense_act_fn for "gelu"
        "gated": proj.startswith("gated-"),
        "causal": False,
        "positions_key": "n_positions",
        "scale_attn_weights": False,  # T5 does not divide its scores by √d_k
        "n_buckets": n_buckets,
        "max_distance": positive_int(c, "relative_attention_max_distance", 128),
        "decoder_start": token_id(c, "decoder_start_token_id", 0),
        # T5 (transformers 5's T5Config): scale_decoder_outputs, else tie_word_embeddings not false; mT5 never
        "scale_decoder_outputs": c.get("model_type") != "mt5"
        and bool(c.get("scale_decoder_outputs", c.get("tie_word_embeddings") is not False)),
    }
    inner = heads * d_kv
    wanted: dict = {"shared.weight": (None, d)}
    for side, n in (("encoder", layers), ("decoder", dec_layers)):
        wanted |= {f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight": (n_buckets, heads)}
        wanted |= {f"{side}.final_layer_norm.weight": (d,)}
        for l in range(n):
            pre = f"{side}.block.{l}.layer."
            attentions = ("0.SelfAttention", "1.EncDecAttention") if side == "decoder" else ("0.SelfAttention",)
            for a in attentions:
                wanted |= {f"{pre}{a}.{k}.weight": (inner, d) for k in "qkv"} | {f"{pre}{a}.o.weight": (d, inner)}
                wanted |= {f"{pre}{a[0]}.layer_norm.weight": (d,)}
            f = pre + ("2" if side == "decoder" else "1")
            wanted |= {f + ".layer_norm.weight": (d,), f + ".DenseReluDense.wo.weight": (d, ff)}
            ins = ("wi_0", "wi_1") if hp["gated"] else ("wi",)
            wanted |= {f"{f}.DenseReluDense.{k}.weight": (ff, d) for k in ins}
    return hp, wanted
