"""ALBERT (Lan et al. 2020) as transformers' modeling_albert.py computes it: factorised embeddings and one
set of layer weights shared across the depth.

x = LN(word + token type + position) at embedding_size, then x W_map + b_map (embedding_hidden_mapping_in)
up to hidden_size; layer l runs the weights of group ⌊l / (num_hidden_layers / num_hidden_groups)⌋ (one group,
so every layer the same weights, in the released models):
    x = LN(x + Attn(x) W_O + b_O);   x = LN(x + act(x W_ffn + b_ffn) W_out + b_out)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError, fraction, positive_int
from attncli.models.network.attention import LayerSteps, attend
from attncli.models.network.blocks import ACTIVATION_FNS, linear, norm, projections

from . import bert
from .registry import register

if TYPE_CHECKING:
    from attncli.models.network.model import Model


def group(model: Model, l: int) -> str:
    """The weight prefix layer l runs: its layer group's one layer."""
    g = int(l / (model.n_layer / model.hp["groups"]))
    return f"encoder.albert_layer_groups.{g}.albert_layers.0."


def embed(model: Model, ids, types=None):  # [n], [n] -> [n, d_model]
    """BERT's embeddings at embedding_size, then embedding_hidden_mapping_in to hidden_size."""
    x = bert.embeddings(model, ids, types, np.arange(len(ids)))  # [n, d_embed]
    w = model.weights
    return linear(w, "encoder.embedding_hidden_mapping_in", x)


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """Self-attention (query, key, value, dense), residual, LayerNorm (AlbertAttention)."""
    w, pre = model.weights, group(model, l) + "attention."
    p = projections(
        w, ((key, pre + name) for key, name in (("q", "query"), ("k", "key"), ("v", "value"), ("o", "dense")))
    )
    steps: LayerSteps = attend(l, x, p, model.n_head, model.d_k**-0.5, causal=False)
    return norm(w, pre + "LayerNorm", steps.output + x, model.eps), steps


def attention_norm(model: Model, l: int) -> str:
    """The LayerNorm after the attention and its residual (AlbertAttention's), for ALTI."""
    return group(model, l) + "attention.LayerNorm"


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """ffn_output(act(ffn(x))), residual, full_layer_layer_norm (AlbertLayer)."""
    w, pre, act = model.weights, group(model, l), ACTIVATION_FNS[model.activation]
    h = linear(w, pre + "ffn_output", act(linear(w, pre + "ffn", x)))  # [n, d_ff] -> [n, d_model]
    return norm(w, pre + "full_layer_layer_norm", h + x, model.eps)


def input_note(layer: int) -> str:
    if layer == 0:
        return "X = (LayerNorm(word + position + token type embeddings)) W_map + b_map: the input of layer 0"
    return f"X: the output of layer {layer - 1} (the same shared weights), the input of layer {layer}'s attention"


@register(
    "albert",
    model_types=("albert",),
    word="embeddings.word_embeddings.weight",
    positions="embeddings.position_embeddings.weight",
    architectures={"Albert": "albert"},
    embed=embed,
    attention=attention,
    attention_norm=attention_norm,
    mlp=mlp,
    final=bert.final,
    input_note=input_note,
)
def read_config(c: dict) -> tuple[dict, dict]:
    """ALBERT hyper-parameters (transformers' AlbertConfig defaults) and the tensors of its layer groups."""
    if c.get("position_embedding_type", "absolute") != "absolute":
        raise ModelError(f"position_embedding_type {c['position_embedding_type']!r} is not supported, only 'absolute'")
    if c.get("inner_group_num", 1) != 1:
        raise ModelError(f"config.json: inner_group_num {c['inner_group_num']!r} is not supported, only 1")
    d, e, ff = (
        positive_int(c, k, v) for k, v in (("hidden_size", 4096), ("embedding_size", 128), ("intermediate_size", 16384))
    )
    hp = {
        "d_model": d,
        "n_head": positive_int(c, "num_attention_heads", 64),
        "n_layer": positive_int(c, "num_hidden_layers", 12),
        "groups": positive_int(c, "num_hidden_groups", 1),
        "max_positions": positive_int(c, "max_position_embeddings", 512),
        "eps": fraction(c, "layer_norm_eps", 1e-12),
        "activation": c.get("hidden_act", "gelu_new"),
        "causal": False,
        "positions_key": "max_position_embeddings",
    }
    if hp["groups"] > hp["n_layer"]:
        raise ModelError(f"config.json: num_hidden_groups {hp['groups']} exceeds num_hidden_layers {hp['n_layer']}")
    wanted: dict[str, tuple[int | None, ...]] = {
        f"embeddings.{t}.weight": (None, e) for t in ("word_embeddings", "position_embeddings", "token_type_embeddings")
    }
    wanted |= {"embeddings.LayerNorm.weight": (e,), "embeddings.LayerNorm.bias": (e,)}
    wanted |= {"encoder.embedding_hidden_mapping_in.weight": (d, e), "encoder.embedding_hidden_mapping_in.bias": (d,)}
    for g in range(hp["groups"]):
        p = f"encoder.albert_layer_groups.{g}.albert_layers.0."
        for name in ("attention.query", "attention.key", "attention.value", "attention.dense"):
            wanted |= {p + name + ".weight": (d, d), p + name + ".bias": (d,)}
        wanted |= {
            p + "ffn.weight": (ff, d),
            p + "ffn.bias": (ff,),
            p + "ffn_output.weight": (d, ff),
            p + "ffn_output.bias": (d,),
        }
        for name in ("attention.LayerNorm", "full_layer_layer_norm"):
            wanted |= {p + name + ".weight": (d,), p + name + ".bias": (d,)}
    return hp, wanted
