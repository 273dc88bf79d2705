"""ELECTRA (Clark et al. 2020), the discriminator's (or generator's) encoder: BERT's layers and weight names,
embeddings of their own width.

x = LN(word + token type + position) at embedding_size, then x W_proj + b_proj up to hidden_size when the two
differ (embeddings_project); the layers are BERT's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import positive_int
from attncli.models.network.blocks import linear

from . import bert
from .registry import register

if TYPE_CHECKING:
    from attncli.models.network.model import Model


def embed(model: Model, ids, types=None):  # [n], [n] -> [n, d_model]
    """BERT's embeddings at embedding_size, projected to hidden_size by embeddings_project if the sizes differ."""
    x = bert.embeddings(model, ids, types, np.arange(len(ids)))  # [n, d_embed]
    if model.hp["project"]:
        x = linear(model.weights, "embeddings_project", x)
    return x


def input_note(layer: int) -> str:
    if layer == 0:
        return "X = LayerNorm(word + position + token type embeddings), projected to hidden_size: the input of layer 0"
    return f"X: the output of layer {layer - 1}, the input of layer {layer}'s attention"


@register(
    "electra",
    model_types=("electra",),
    word="embeddings.word_embeddings.weight",
    positions="embeddings.position_embeddings.weight",
    vocab_files="vocab.txt",
    architectures={"Electra": "electra"},
    embed=embed,
    attention=bert.attention,
    attention_norm=bert.attention_norm,
    mlp=bert.mlp,
    final=bert.final,
    input_note=input_note,
)
def read_config(c: dict) -> tuple[dict, dict]:
    """BERT's hyper-parameters and layer tensors; embedding tables of embedding_size (default 128) columns."""
    hp, wanted = bert.read_config(c)
    d, e = hp["d_model"], positive_int(c, "embedding_size", 128)
    for name in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        wanted[f"embeddings.{name}.weight"] = (None, e)
    wanted |= {"embeddings.LayerNorm.weight": (e,), "embeddings.LayerNorm.bias": (e,)}
    if e != d:
        wanted |= {"embeddings_project.weight": (d, e), "embeddings_project.bias": (d,)}
    return hp | {"project": e != d}, wanted
