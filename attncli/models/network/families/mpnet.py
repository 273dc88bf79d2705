"""MPNet (Song et al. 2020) as transformers' modeling_mpnet.py computes it: BERT's post-LayerNorm layers with
RoBERTa's positions and T5's relative position bias.

x = LN(word + position from padding_idx + 1); per layer
    x = LN(x + Attn(x) W_O + b_O);   x = LN(x + act(x W_1 + b_1) W_2 + b_2)
with the scores S = QKᵀ/√d_k + b_h(bucket(j - i)): one table of 32 bidirectional buckets (max distance 128),
the encoder's, added in every layer. No token types (a sentence pair differs by its separators).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError, fraction, positive_int
from attncli.models.network.attention import LayerSteps, attend
from attncli.models.network.blocks import norm, projections

from .bert import final, mlp  # MPNet's MLP and (absent) final norm are BERT's
from .registry import register
from .roberta import positions
from .t5 import position_buckets

if TYPE_CHECKING:
    from attncli.models.network.model import Model

BUCKETS, DISTANCE = 32, 128  # transformers' compute_position_bias buckets with these, whatever the config says
PAD = 1  # MPNetEmbeddings' padding_idx, fixed


def embed(model: Model, ids, types=None):  # [n], [n] (ignored: no token types) -> [n, d_model]
    """LayerNorm(word + position from padding_idx + 1)."""
    w = model.weights
    x = (
        w.rows("embeddings.word_embeddings.weight", ids)
        + w["embeddings.position_embeddings.weight"][positions(ids, PAD)]
    )
    return norm(w, "embeddings.LayerNorm", x, model.eps)


def _bias(model: Model, n: int):  # -> [n_head, n, n] float32
    cells = position_buckets(n, n, True, BUCKETS, DISTANCE)
    table = model.weights["encoder.relative_attention_bias.weight"]  # [buckets, n_head]
    return np.ascontiguousarray(table[cells].transpose(2, 0, 1))


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """Self-attention with the relative position bias, o, residual, LayerNorm (MPNetAttention)."""
    w, pre = model.weights, f"encoder.layer.{l}.attention."
    p = projections(w, ((key, f"{pre}attn.{key}") for key in "qkvo"))
    steps: LayerSteps = attend(l, x, p, model.n_head, model.d_k**-0.5, False, bias=_bias(model, x.shape[-2]))
    return norm(w, pre + "LayerNorm", steps.output + x, model.eps), steps


def attention_norm(model: Model, l: int) -> str:
    """The LayerNorm after the attention and its residual (MPNetAttention's), for ALTI."""
    return f"encoder.layer.{l}.attention.LayerNorm"


def input_note(layer: int) -> str:
    if layer == 0:
        return "X = LayerNorm(word + position (from padding_idx + 1) embeddings): the input of layer 0"
    return f"X: the output of layer {layer - 1}, the input of layer {layer}'s attention"


@register(
    "mpnet",
    model_types=("mpnet",),
    word="embeddings.word_embeddings.weight",
    positions="embeddings.position_embeddings.weight",
    architectures={"MPNet": "mpnet"},
    embed=embed,
    attention=attention,
    attention_norm=attention_norm,
    mlp=mlp,
    final=final,
    input_note=input_note,
)
def read_config(c: dict) -> tuple[dict, dict]:
    """MPNetConfig's hyper-parameters and wanted tensor shapes; a text gets the positions after padding_idx 1."""
    d, ff = positive_int(c, "hidden_size", 768), positive_int(c, "intermediate_size", 3072)
    n_head, n_buckets = (
        positive_int(c, "num_attention_heads", 12),
        positive_int(c, "relative_attention_num_buckets", 32),
    )
    if n_buckets < BUCKETS:
        raise ModelError(f"config.json: relative_attention_num_buckets {n_buckets} < the {BUCKETS} buckets MPNet reads")
    hp = {
        "d_model": d,
        "n_head": n_head,
        "n_layer": positive_int(c, "num_hidden_layers", 12),
        "max_positions": positive_int(c, "max_position_embeddings", 512) - PAD - 1,
        "eps": fraction(c, "layer_norm_eps", 1e-12),
        "activation": c.get("hidden_act", "gelu"),
        "causal": False,
        "positions_key": "max_position_embeddings",
        "score_bias": "b_h(bucket(j - i))  (MPNet's relative position bias)",
    }
    if hp["max_positions"] < 1:
        raise ModelError(f"config.json: max_position_embeddings leaves no position after padding_idx {PAD}")
    wanted = {
        "embeddings.word_embeddings.weight": (None, d),
        "embeddings.position_embeddings.weight": (hp["max_positions"] + PAD + 1, d),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
        "encoder.relative_attention_bias.weight": (n_buckets, n_head),
    }
    for l in range(hp["n_layer"]):
        p = f"encoder.layer.{l}."
        for key in "qkvo":
            wanted |= {f"{p}attention.attn.{key}.weight": (d, d), f"{p}attention.attn.{key}.bias": (d,)}
        wanted |= {
            p + "intermediate.dense.weight": (ff, d),
            p + "intermediate.dense.bias": (ff,),
            p + "output.dense.weight": (d, ff),
            p + "output.dense.bias": (d,),
        }
        for name in ("attention.LayerNorm", "output.LayerNorm"):
            wanted |= {p + name + ".weight": (d,), p + name + ".bias": (d,)}
    return hp, wanted
