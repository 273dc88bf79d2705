"""RoBERTa (Liu et al. 2019), XLM-R (Conneau et al. 2020) and CamemBERT (Martin et al. 2020): BERT's layers and
weight names, other positions (CamemBERT is RoBERTa's architecture with a SentencePiece vocabulary).

Positions start after the padding index: position ids = cumsum(non-pad mask) · mask + padding_idx, so
an unpadded text of n tokens reads rows padding_idx + 1 .. padding_idx + n of the position table
(transformers' create_position_ids_from_input_ids), and the table's first padding_idx + 1 rows are
never a text's. Token types are all 0 (type_vocab_size 1), also for a sentence pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError

from . import bert
from .registry import register

if TYPE_CHECKING:
    from attncli.models.network.model import Model


def positions(ids, pad: int):  # [n] -> [n]
    """cumsum(ids != pad) · (ids != pad) + pad: the position row of each token.

    >>> positions(np.array([0, 31, 7, 2]), pad=1).tolist()
    [2, 3, 4, 5]
    """
    keep = (np.asarray(ids) != pad).astype(np.int64)
    return np.cumsum(keep) * keep + pad


def embed(model: Model, ids, types=None):  # [n], [n] -> [n, d_model]
    """LayerNorm(word + token type + position from padding_idx + 1)."""
    return bert.embeddings(model, ids, types, positions(ids, model.hp["pad"]))


def input_note(layer: int) -> str:
    if layer == 0:
        return "X = LayerNorm(word + position (from padding_idx + 1) + token type embeddings): the input of layer 0"
    return f"X: the output of layer {layer - 1}, the input of layer {layer}'s attention"


@register(
    "roberta",
    model_types=("roberta", "xlm-roberta", "camembert"),
    word="embeddings.word_embeddings.weight",
    positions="embeddings.position_embeddings.weight",
    architectures={"Roberta": "roberta", "XLMRoberta": "xlm-roberta", "Camembert": "camembert"},
    embed=embed,
    attention=bert.attention,
    attention_norm=bert.attention_norm,
    mlp=bert.mlp,
    final=bert.final,
    input_note=input_note,
)
def read_config(c: dict) -> tuple[dict, dict]:
    """BERT's hyper-parameters and tensors, with pad_token_id (default 1); a text gets the positions after it."""
    hp, wanted = bert.read_config(c)
    pad = c.get("pad_token_id", 1)
    if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
        raise ModelError(f"config.json: pad_token_id must be an integer >= 0, not {pad!r}")
    if hp["max_positions"] <= pad + 1:
        raise ModelError(
            f"config.json: max_position_embeddings {hp['max_positions']} leaves no position after pad {pad}"
        )
    wanted["embeddings.position_embeddings.weight"] = (hp["max_positions"], hp["d_model"])  # every row is needed
    return hp | {"pad": pad, "max_positions": hp["max_positions"] - pad - 1}, wanted
