"""The forward pass of an encoder–decoder (BART, mBART, T5, Marian) with teacher forcing, as transformers runs it.

The encoder is the family's ordinary blocks, run by `forward` over the source; the decoder's blocks
(cross.py's `Decoder`, a family's `decoder`) run over the decoder input, each layer its causal self-attention,
its cross-attention over the encoder's output, and its MLP. Given labels (the target's token ids),
transformers feeds the decoder the decoder start token followed by the labels without their last
(`shift_tokens_right`); `decoder_input` builds the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention import LayerSteps
from .cross import Decoder
from .forward import Forward, forward
from .hparams import ModelError
from .model import Model


@dataclass(frozen=True)
class Seq2Seq:
    """What one teacher-forced pass computed, every layer."""

    encoder: Forward  # the encoder over the source; .final is the memory the cross-attention reads
    decoder: list[LayerSteps]  # per decoder layer: the causal self-attention
    cross: list[LayerSteps]  # per decoder layer: the cross-attention (q from the decoder, k and v from memory)


def is_seq2seq(model: Model) -> bool:
    return model.family.decoder is not None


def decoder_input(model: Model, labels) -> list[int]:  # [m] label ids -> [m] decoder input ids
    """The decoder start token, then the labels without their last (transformers' shift_tokens_right); a model
    with no start token (mBART) starts from its last label instead, the target language's code."""
    ids = [int(i) for i in labels]
    start = model.hp["decoder_start"]
    return [ids[-1] if start is None else start, *ids[:-1]]


def seq2seq_forward(model: Model, source_ids, decoder_ids) -> Seq2Seq:  # [n], [m] -> Seq2Seq
    """Run the source through the encoder and the decoder input through the decoder, every layer."""
    dec: Decoder | None = model.family.decoder
    if dec is None:
        raise ModelError(f"{model.name} is not an encoder–decoder ({model.model_type})")
    ids = np.asarray(decoder_ids, dtype=np.int64).reshape(-1)
    if ids.size > model.max_positions:
        raise ModelError(f"{ids.size} target tokens, but {model.name} takes at most {model.max_positions}")
    encoded = forward(model, source_ids)
    memory = encoded.final
    assert memory is not None  # a whole pass ends with the encoder's final block
    y = dec.embed(model, ids)  # [m, d_model]
    selfs, crosses = [], []
    for l in range(model.hp["n_dec_layer"]):
        y, s = dec.self_attention(model, l, y)
        y, c = dec.cross_attention(model, l, y, memory)
        y = dec.mlp(model, l, y)
        selfs.append(s)
        crosses.append(c)
    return Seq2Seq(encoder=encoded, decoder=selfs, cross=crosses)
