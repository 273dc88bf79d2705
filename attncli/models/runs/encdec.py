"""The forward pass of an encoder–decoder (BART, mBART, T5, Marian) with teacher forcing, as transformers runs it.

The encoder is the family's ordinary blocks, run by `forward` over the source; the decoder's blocks
(cross.py's `Decoder`, a family's `decoder`) run over the decoder input, each layer its causal self-attention,
its cross-attention over the encoder's output, and its MLP. Given labels (the target's token ids),
transformers feeds the decoder the decoder start token followed by the labels without their last
(`shift_tokens_right`); `decoder_input` builds the same.

`decode_target` writes a target from a source as transformers' `generate(do_sample=False)` does: the encoder
once, each cross-attention's keys and values of its output once, then the decoder one new token a pass with its
self-attention's key/value cache (attncli.models.runs.generate's loop, with the forced BOS / EOS of the settings).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.models.files.hparams import ModelError
from attncli.models.network.attention import LayerSteps, cached
from attncli.models.network.cross import Decoder
from attncli.models.network.forward import Forward, forward
from attncli.models.network.model import Model
from attncli.models.runs.generate import Generation, KVCache, check_room, setting, writes


@dataclass(frozen=True)
class Seq2Seq:
    """What one teacher-forced pass computed, every layer."""

    encoder: Forward  # the encoder over the source; .final is the memory the cross-attention reads
    decoder: list[LayerSteps]  # per decoder layer: the causal self-attention
    cross: list[LayerSteps]  # per decoder layer: the cross-attention (q from the decoder, k and v from memory)
    hidden: list[np.ndarray]  # per decoder layer: the stream y [m, d_model] entering it (0: the embeddings)
    output: np.ndarray  # [m, d_model] the last decoder layer's output, before the decoder's final norm (if any)


def is_seq2seq(model: Model) -> bool:
    return model.family.decoder is not None


def decoder_input(model: Model, labels) -> list[int]:  # [m] label ids -> [m] decoder input ids
    """The decoder start token, then the labels without their last (transformers' shift_tokens_right); a model
    with no start token (mBART) starts from its last label instead, the target language's code."""
    ids = [int(i) for i in labels]
    start = model.hp["decoder_start"]
    return [ids[-1] if start is None else start, *ids[:-1]]


def seq2seq_forward(model: Model, encoder_ids, decoder_ids) -> Seq2Seq:  # [n], [m] -> Seq2Seq
    """Run the source through the encoder and the decoder input through the decoder, every layer."""
    dec: Decoder | None = model.family.decoder
    if dec is None:
        raise ModelError(f"{model.name} is not an encoder–decoder ({model.model_type})")
    ids = np.asarray(decoder_ids, dtype=np.int64).reshape(-1)
    if ids.size > model.max_positions:
        raise ModelError(f"{ids.size} target tokens, but {model.name} takes at most {model.max_positions}")
    encoded = forward(model, encoder_ids)
    memory = encoded.final
    assert memory is not None  # a whole pass ends with the encoder's final block
    y = dec.embed(model, ids)  # [m, d_model]
    selfs, crosses, hidden = [], [], []
    for l in range(model.hp["n_dec_layer"]):
        hidden.append(y)
        y, s = dec.self_attention(model, l, y)
        y, c = dec.cross_attention(model, l, y, memory)
        y = dec.mlp(model, l, y)
        selfs.append(s)
        crosses.append(c)
    return Seq2Seq(encoder=encoded, decoder=selfs, cross=crosses, hidden=hidden, output=y)


def generation_start(model: Model) -> int:
    """The token a generated target starts from, as transformers' generate picks it: the settings'
    decoder_start_token_id (the family's default where its config has one: BART's 2, T5's 0), else bos_token_id
    (mBART, which has no start token: <s>)."""
    for start in (setting(model, "decoder_start_token_id"), model.hp["decoder_start"], setting(model, "bos_token_id")):
        if isinstance(start, int) and not isinstance(start, bool) and 0 <= start < model.vocab_size:
            return start
    raise ModelError(f"{model.name} names no decoder start token (decoder_start_token_id, bos_token_id) to write from")


def decode_target(model: Model, encoder_ids, first, n_new: int, how: Generation | None = None) -> list[int]:
    # [n] source ids, [m] decoder ids to continue -> up to n_new new ids
    """The n_new tokens greedy decoding (or `how`'s sampling) writes after the decoder input `first` (the start
    token, then any target already given) reading the source `encoder_ids`; fewer if it writes an end id (kept)."""
    dec: Decoder | None = model.family.decoder
    if dec is None:
        raise ModelError(f"{model.name} is not an encoder–decoder ({model.model_type})")
    if model.unembed is None:
        raise ModelError(
            f"{model.name} has no output head: tie_word_embeddings is false and the checkpoint lacks lm_head.weight"
        )
    first = [int(i) for i in first]
    check_room(model, len(first), n_new)
    memory = forward(model, encoder_ids).final  # [n, d_model]: the encoder runs once
    assert memory is not None  # a whole pass ends with the encoder's final block
    cache = KVCache(model.hp["n_dec_layer"], len(first) + n_new)

    def step(rows):  # [m] -> [vocab]
        y = dec.embed(model, rows)  # [m, d_model]: the decoder input, then one new token a pass
        for l in range(model.hp["n_dec_layer"]):
            y, _ = dec.self_attention(model, l, y)
            y, _ = dec.cross_attention(model, l, y, memory)  # keys and values of memory: the first pass's
            y = dec.mlp(model, l, y)
        cache.advance(len(rows))
        return dec.logits(model, y[-1:])[0]

    with cached(cache):
        return writes(model, first, n_new, how, step)
