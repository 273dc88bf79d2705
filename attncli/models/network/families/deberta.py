"""DeBERTa-v2 and v3 (He et al. 2021, 2023) as transformers' modeling_deberta_v2.py computes them: BERT's
post-LayerNorm layers with disentangled attention.

Each score adds, to the content-to-content term q_i · k_j, a content-to-position term q_i · k^r_δ and a
position-to-content term k_j · q^r_δ, δ = bucket(i - j) + span an index into the relative position embeddings
R (LayerNorm(R) when norm_rel_ebd says so), k^r = R W_K^r + b, q^r = R W_Q^r + b (with share_att_key, W_K^r
= W_K and W_Q^r = W_Q), all divided by √(d_k · (1 + the position terms)):
    S_ij = (q_i · k_j + q_i · k^r_δ(i,j) + k_j · q^r_δ(i,j)) / √(3 d_k)
The buckets are the offsets themselves up to position_buckets / 2, then logarithmic up to max_relative_positions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError, fraction, positive_int
from attncli.models.network.attention import LayerSteps, attend
from attncli.models.network.blocks import ACTIVATION_FNS, dense, linear, norm, projections

from .registry import register

if TYPE_CHECKING:
    from attncli.models.network.model import Model

TERMS = ("c2p", "p2c")
PROJECTIONS = (("q", "self.query_proj"), ("k", "self.key_proj"), ("v", "self.value_proj"), ("o", "output.dense"))


def log_buckets(rel, buckets: int, max_position: int):  # [...] int64 -> [...] int64
    """transformers' make_log_bucket_position: the offset itself while |offset| < buckets / 2, else
    sign · (⌈log(|offset| / mid) / log((max_position - 1) / mid) · (mid - 1)⌉ + mid), mid = buckets / 2, in float32.

    >>> log_buckets(np.array([-40, -5, -3, 0, 3, 5, 20, 40]), 8, 32).tolist()  # transformers' own numbers
    [-8, -5, -3, 0, 3, 5, 7, 8]
    """
    rel = np.asarray(rel, dtype=np.int64)
    mid = buckets // 2
    far = np.where((rel < mid) & (rel > -mid), mid - 1, np.abs(rel)).astype(np.float32)
    ratio = np.log(far / np.float32(mid)) / np.log(np.float32((max_position - 1) / mid))
    logs = np.ceil(ratio * np.float32(mid - 1)) + np.float32(mid)
    return np.where(far <= mid, rel, logs * np.sign(rel)).astype(np.int64)


def position_index(model: Model, n: int):  # -> [n, n] int64 rows of the relative embeddings
    """δ(i, j) = clamp(bucket(i - j) + span, 0, 2 span - 1), the row of query i and key j (both terms read it)."""
    hp = model.hp
    rel = np.arange(n)[:, None] - np.arange(n)[None, :]
    if hp["buckets"] > 0:
        rel = log_buckets(rel, hp["buckets"], hp["max_relative"])
    return np.clip(rel + hp["span"], 0, 2 * hp["span"] - 1)


def _positions(model: Model, l: int) -> dict:  # -> {"c2p": k^r [h, 2 span, d_k], "p2c": q^r [h, 2 span, d_k]}
    """The relative embeddings projected as keys (for c2p) and as queries (for p2c), per head, once per layer."""

    def make() -> dict:
        w, hp, pre = model.weights, model.hp, f"encoder.layer.{l}.attention.self."
        r = w["encoder.rel_embeddings.weight"][: 2 * hp["span"]]
        if hp["norm_rel"]:
            r = norm(w, "encoder.LayerNorm", r, model.eps)
        names = {"c2p": "key_proj", "p2c": "query_proj"}
        if not hp["share_att_key"]:
            names = {"c2p": "pos_key_proj", "p2c": "pos_query_proj"}
        out = {}
        for term in hp["terms"]:
            projected = linear(w, pre + names[term], r)  # [2 span, h · d_k]
            out[term] = np.ascontiguousarray(projected.reshape(len(r), model.n_head, model.d_k).swapaxes(0, 1))
        return out

    return model.weights.made(("deberta positions", l), make)


def terms(model: Model, l: int, q, k, heads: list[int]) -> dict:  # [h, n, d_k] twice -> {term: [h, n, n]}
    """The position terms of heads `heads` (q and k are theirs): c2p_ij = q_i · k^r_δ(i,j) and p2c_ij = k_j ·
    q^r_δ(i,j), each divided by √(d_k · scale factor) as transformers divides them."""
    n, hp = q.shape[-2], model.hp
    index, scale = position_index(model, n), np.sqrt(np.float32(model.d_k) * np.float32(1 + len(hp["terms"])))
    pos, out = _positions(model, l), {}
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    for term in hp["terms"]:
        # [h, n, 2 span]: each query (c2p) or key (p2c) against every relative position, then δ(i, j) picked
        table = np.matmul(q if term == "c2p" else k, pos[term][heads].swapaxes(-1, -2))
        out[term] = table[..., rows if term == "c2p" else cols, index] / scale
    return out


def _bias(model: Model, l: int):  # -> (q [..., h, n, d_k], k) -> [..., h, n, n]
    def bias(q, k):
        found = terms(model, l, q, k, list(range(model.n_head)))
        return sum(found.values()).astype(np.float32) if found else None

    return bias


def embed(model: Model, ids, types=None):  # [n], [n] token types -> [n, d_model]
    """LayerNorm((word + position if position_biased_input + token type) W_proj if embedding_size differs)."""
    w, hp = model.weights, model.hp
    x = w.rows("embeddings.word_embeddings.weight", ids)
    if hp["position_input"]:
        x = x + w["embeddings.position_embeddings.weight"][: len(ids)]
    if hp["types"]:
        t = w["embeddings.token_type_embeddings.weight"]
        x = x + (t[0] if types is None else t[np.asarray(types)])
    if hp["embed_proj"]:
        x = dense(x, w["embeddings.embed_proj.weight"].T)
    return norm(w, "embeddings.LayerNorm", x, model.eps)


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """Disentangled self-attention, output dense, residual, LayerNorm (DebertaV2Attention)."""
    w, pre = model.weights, f"encoder.layer.{l}.attention."
    p = projections(w, ((key, pre + name) for key, name in PROJECTIONS))
    bias = _bias(model, l) if model.hp["relative"] else None
    steps: LayerSteps = attend(l, x, p, model.n_head, model.hp["scale"], False, bias=bias)
    return norm(w, pre + "output.LayerNorm", steps.output + x, model.eps), steps


def attention_norm(model: Model, l: int) -> str:
    """The LayerNorm after the attention and its residual (DebertaV2SelfOutput's), for ALTI."""
    return f"encoder.layer.{l}.attention.output.LayerNorm"


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    w, pre, act = model.weights, f"encoder.layer.{l}.", ACTIVATION_FNS[model.activation]
    h = linear(w, pre + "output.dense", act(linear(w, pre + "intermediate.dense", x)))  # [n, d_ff] -> [n, d_model]
    return norm(w, pre + "output.LayerNorm", h + x, model.eps)


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return x


def input_note(layer: int) -> str:
    if layer == 0:
        return "X = LayerNorm(word (+ token type) embeddings): the input of layer 0 (positions enter the scores)"
    return f"X: the output of layer {layer - 1}, the input of layer {layer}'s attention"


def score_terms(model: Model, layer: int, q, k, heads: list[int]) -> list[tuple[str, str, np.ndarray]]:
    """`attn steps`' terms of the scores: content-to-content, then each position term, as their own arrays."""
    scale = f"√({1 + len(model.hp['terms'])} d_k)"
    out = [("c2c", f"content-to-content: q_i · k_j / {scale}", np.matmul(q, k.swapaxes(-1, -2)) * model.hp["scale"])]
    found = terms(model, layer, q, k, heads) if model.hp["relative"] else {}
    what = {
        "c2p": f"content-to-position: q_i · k^r_δ(i,j) / {scale}, k^r = R W_K^r + b the relative positions as keys",
        "p2c": f"position-to-content: k_j · q^r_δ(i,j) / {scale}, q^r = R W_Q^r + b the relative positions as queries",
    }
    return out + [(term, what[term], found[term]) for term in found]


@register(
    "deberta-v2",
    model_types=("deberta-v2",),
    word="embeddings.word_embeddings.weight",
    architectures={"DebertaV2": "deberta-v2"},
    embed=embed,
    attention=attention,
    attention_norm=attention_norm,
    mlp=mlp,
    final=final,
    input_note=input_note,
    score_terms=score_terms,
)
def read_config(c: dict) -> tuple[dict, dict]:
    """DebertaV2Config's hyper-parameters and wanted tensor shapes (DeBERTa-v3 is model_type deberta-v2)."""
    if (c.get("conv_kernel_size") or 0) > 0:
        raise ModelError("config.json: conv_kernel_size (DeBERTa-v2's convolution after layer 0) is not supported")
    d, ff = positive_int(c, "hidden_size", 1536), positive_int(c, "intermediate_size", 6144)
    n_head, n_layer = positive_int(c, "num_attention_heads", 24), positive_int(c, "num_hidden_layers", 24)
    if d % n_head or c.get("attention_head_size", d // n_head) != d // n_head:
        raise ModelError(f"config.json: heads of {d} / {n_head} dimensions are supported, not attention_head_size")
    kinds = c.get("pos_att_type") or []
    kinds = [t.strip() for t in kinds.lower().split("|")] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or any(t not in TERMS for t in kinds):
        raise ModelError(f"config.json: pos_att_type {c.get('pos_att_type')!r} is not made of c2p and p2c")
    positions = positive_int(c, "max_position_embeddings", 512)
    max_relative = c.get("max_relative_positions", -1)
    max_relative = max_relative if isinstance(max_relative, int) and max_relative >= 1 else positions
    buckets = c.get("position_buckets", -1)
    buckets = buckets if isinstance(buckets, int) and buckets > 0 else -1
    span = buckets if buckets > 0 else max_relative
    embedding = positive_int(c, "embedding_size", d) if c.get("embedding_size") is not None else d
    types = c.get("type_vocab_size", 0)
    hp = {
        "d_model": d,
        "n_head": n_head,
        "n_layer": n_layer,
        "max_positions": positions,
        "eps": fraction(c, "layer_norm_eps", 1e-7),
        "activation": c.get("hidden_act", "gelu"),
        "causal": False,
        "positions_key": "max_position_embeddings",
        "terms": [t for t in TERMS if t in kinds],
        "relative": bool(c.get("relative_attention", False)),
        "share_att_key": bool(c.get("share_att_key", False)),
        "norm_rel": "layer_norm" in str(c.get("norm_rel_ebd", "none")).lower(),
        "buckets": buckets,
        "max_relative": max_relative,
        "span": span,
        "position_input": c.get("position_biased_input", True) is not False,
        "types": isinstance(types, int) and types > 0,
        "embed_proj": embedding != d,
    }
    hp["scale"] = 1.0 / math.sqrt(d // n_head * (1 + len(hp["terms"])))
    if hp["relative"] and hp["terms"]:
        hp["score_bias"] = "(q_i · k^r_δ + k_j · q^r_δ) / √(3 d_k)  (DeBERTa's position terms, δ = bucket(i - j))"
        if len(hp["terms"]) == 1:
            hp["score_bias"] = hp["score_bias"].replace("3 d_k", "2 d_k")
    wanted: dict[str, tuple] = {
        "embeddings.word_embeddings.weight": (None, embedding),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
    }
    if hp["position_input"]:
        wanted["embeddings.position_embeddings.weight"] = (positions, embedding)
    if hp["types"]:
        wanted["embeddings.token_type_embeddings.weight"] = (types, embedding)
    if hp["embed_proj"]:
        wanted["embeddings.embed_proj.weight"] = (d, embedding)
    if hp["relative"]:
        wanted["encoder.rel_embeddings.weight"] = (2 * span, d)
        if hp["norm_rel"]:
            wanted |= {"encoder.LayerNorm.weight": (d,), "encoder.LayerNorm.bias": (d,)}
    for l in range(n_layer):
        p = f"encoder.layer.{l}."
        for _, name in PROJECTIONS:
            wanted |= {f"{p}attention.{name}.weight": (d, d), f"{p}attention.{name}.bias": (d,)}
        if hp["relative"] and not hp["share_att_key"]:
            pos = {"c2p": "pos_key_proj", "p2c": "pos_query_proj"}
            for term in hp["terms"]:
                wanted |= {f"{p}attention.self.{pos[term]}.weight": (d, d), f"{p}attention.self.{pos[term]}.bias": (d,)}
        wanted |= {
            p + "intermediate.dense.weight": (ff, d),
            p + "intermediate.dense.bias": (ff,),
            p + "output.dense.weight": (d, ff),
            p + "output.dense.bias": (d,),
        }
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            wanted |= {p + name + ".weight": (d,), p + name + ".bias": (d,)}
    return hp, wanted
