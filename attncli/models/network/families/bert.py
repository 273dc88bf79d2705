"""BERT (Devlin et al. 2019) as transformers' modeling_bert.py computes it (post-LayerNorm encoder).

x = LN(word + token_type[0] + position); per layer
    x = LN(x + Attn(x) W_O + b_O);   x = LN(x + act(x W_1 + b_1) W_2 + b_2)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError, fraction, positive_int
from attncli.models.network.attention import LayerSteps, attend
from attncli.models.network.blocks import ACTIVATION_FNS, feed_forward, norm, projections

from .registry import register

if TYPE_CHECKING:
    from attncli.models.network.model import Model


def embeddings(model: Model, ids, types, positions):  # [n], [n] or None, [n] -> [n, d_embed]
    """LayerNorm(word + token type + position) in transformers' order of additions; types None = all 0.

    BERT, RoBERTa, ELECTRA and ALBERT share it (the last two at their embedding_size, before a projection).
    """
    w = model.weights
    t = w["embeddings.token_type_embeddings.weight"]
    x = w.rows("embeddings.word_embeddings.weight", ids) + (t[0] if types is None else t[np.asarray(types)])
    x = x + w["embeddings.position_embeddings.weight"][positions]
    return norm(w, "embeddings.LayerNorm", x, model.eps)


def embed(model: Model, ids, types=None):  # [n], [n] token types (pair: 0 then 1) -> [n, d_model]
    """LayerNorm(word + token type + absolute position 0..n-1)."""
    return embeddings(model, ids, types, np.arange(len(ids)))


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """Self-attention, output dense, residual, LayerNorm (BertAttention)."""
    w, pre = model.weights, f"encoder.layer.{l}.attention."
    names = (("q", "self.query"), ("k", "self.key"), ("v", "self.value"), ("o", "output.dense"))
    p = projections(w, ((key, pre + name) for key, name in names))
    steps: LayerSteps = attend(l, x, p, model.n_head, model.d_k**-0.5, model.causal)
    return norm(w, pre + "output.LayerNorm", steps.output + x, model.eps), steps


def attention_norm(model: Model, l: int) -> str:
    """The LayerNorm after the attention and its residual (BertSelfOutput's), for ALTI."""
    return f"encoder.layer.{l}.attention.output.LayerNorm"


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """Intermediate dense + activation, output dense, residual, LayerNorm (BertIntermediate, BertOutput)."""
    w, pre, act = model.weights, f"encoder.layer.{l}.", ACTIVATION_FNS[model.activation]
    h = feed_forward(w, pre + "intermediate.dense", pre + "output.dense", act, x)  # x + MLP(x), through [n, d_ff]
    return norm(w, pre + "output.LayerNorm", h, model.eps)


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return x


def input_note(layer: int) -> str:
    if layer == 0:
        return "X = LayerNorm(word + position + token type embeddings): the input of layer 0"
    return f"X: the output of layer {layer - 1}, the input of layer {layer}'s attention"


@register(
    "bert",
    model_types=("bert",),
    word="embeddings.word_embeddings.weight",
    positions="embeddings.position_embeddings.weight",
    vocab_files="vocab.txt",
    architectures={"Bert": "bert"},
    embed=embed,
    attention=attention,
    attention_norm=attention_norm,
    mlp=mlp,
    final=final,
    input_note=input_note,
)
def read_config(c: dict) -> tuple[dict, dict]:
    """BERT hyper-parameters (transformers' BertConfig defaults) and wanted tensor shapes."""
    if c.get("position_embedding_type", "absolute") != "absolute":
        raise ModelError(f"position_embedding_type {c['position_embedding_type']!r} is not supported, only 'absolute'")
    d, ff = positive_int(c, "hidden_size", 768), positive_int(c, "intermediate_size", 3072)
    hp = {
        "d_model": d,
        "n_head": positive_int(c, "num_attention_heads", 12),
        "n_layer": positive_int(c, "num_hidden_layers", 12),
        "max_positions": positive_int(c, "max_position_embeddings", 512),
        "eps": fraction(c, "layer_norm_eps", 1e-12),
        "activation": c.get("hidden_act", "gelu"),
        "causal": bool(c.get("is_decoder", False)),
        "positions_key": "max_position_embeddings",
    }
    wanted = {
        "embeddings.word_embeddings.weight": (None, d),
        "embeddings.position_embeddings.weight": (None, d),
        "embeddings.token_type_embeddings.weight": (None, d),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
    }
    for l in range(hp["n_layer"]):
        p = f"encoder.layer.{l}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            wanted |= {p + name + ".weight": (d, d), p + name + ".bias": (d,)}
        wanted |= {
            p + "intermediate.dense.weight": (ff, d),
            p + "intermediate.dense.bias": (ff,),
            p + "output.dense.weight": (d, ff),
            p + "output.dense.bias": (d,),
        }
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            wanted |= {p + name + ".weight": (d,), p + name + ".bias": (d,)}
    return hp, wanted
