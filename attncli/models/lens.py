"""The logit lens (nostalgebraist 2020): what a decoder would predict next if it stopped after each layer.

For every layer l = 0..L (0: the embeddings; l: the output of block l - 1, transformers' hidden_states[l]) and
every position, the residual stream goes through the model's own final norm and unembedding
(attncli.models.head); the last layer is the model's own logits. An encoder–decoder's: its decoder's stream over
the target (teacher forcing, reading the source) through the decoder's final norm and head (`Decoder.logits`).

    doc = lens_document(load_model("SmolLM2-135M"), "The capital of France is", k=3)
    doc["rows"][-1]  # {"layer": 30, "position": 5, "top_ids": [...], "top_tokens": ["ĠParis", ...], ...}
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from attncli.errors import ConfigError
from attncli.pipeline.tokenize import Tokens

from .encdec import is_seq2seq, seq2seq_forward
from .forward import forward
from .head import logits, next_logits, probabilities, top_k, unembedding
from .hparams import ModelError
from .model import Model
from .run import _check_finite, _encode
from .seq2seq import decoder_tokens, source_tokens
from .source import describe

LENS_SCHEMA = "attncli.lens/1"
LAYERS = "layer 0 = the embeddings, layer l = the output of block l - 1 (transformers' hidden_states[l])"
DECODER_LAYERS = (
    "layer 0 = the decoder's embeddings, layer l = the output of decoder block l - 1 (transformers' "
    "decoder_hidden_states[l]), over the target with teacher forcing"
)


def lens_layers(model: Model, ids) -> Iterator[np.ndarray]:  # [n] token ids -> L + 1 of [n, vocab] logits float32
    """The lens' logits of each layer in turn, every position; the last layer is the model's own (one forward
    pass). One layer at a time: all of them at once are (L + 1) · n · vocab floats, 31 · 170 · 49152 (1 GB, and
    the probabilities and their top-k several times that) for 170 tokens of SmolLM2."""
    run = forward(model, ids)
    assert run.final is not None  # a full pass
    for hidden in run.hidden:  # the embeddings, then blocks 0..L-2's outputs
        yield next_logits(model, hidden)
    yield logits(model, run.final)


def lens_arrays(model: Model, ids) -> np.ndarray:  # [n] token ids -> [L + 1, n, vocab] logits float32
    """Every layer of `lens_layers` at once."""
    return np.stack(list(lens_layers(model, ids)))


def target_lens_layers(model: Model, source_ids, decoder_ids, last: bool = False) -> Iterator[np.ndarray]:
    # [n] source ids, [m] decoder input ids -> L_dec + 1 of [m, vocab] logits float32 (only the last: `last`)
    """An encoder–decoder's lens, a layer at a time: its decoder's stream entering each layer, then its output,
    through the decoder's final norm and head (`Decoder.logits`); the last layer is the model's own logits (one
    teacher-forced pass), which is all `last` gives."""
    if model.unembed is None:
        raise ModelError(
            f"{model.name} has no output head: tie_word_embeddings is false and the checkpoint lacks lm_head.weight"
        )
    run = seq2seq_forward(model, source_ids, decoder_ids)
    for hidden in [run.output] if last else [*run.hidden, run.output]:
        yield model.family.decoder.logits(model, hidden)


def target_lens_arrays(model: Model, source_ids, decoder_ids, last: bool = False) -> np.ndarray:
    # [n] source ids, [m] decoder input ids -> [L_dec + 1, m, vocab] logits float32 ([m, vocab]: `last`)
    """Every layer of `target_lens_layers` at once (the last alone: `last`)."""
    every = list(target_lens_layers(model, source_ids, decoder_ids, last))
    return every[0] if last else np.stack(every)


def written_probabilities(model: Model, ids, start: int, source_ids=None) -> np.ndarray:
    # [n] token ids (an encoder–decoder's: its decoder's, reading [s] source_ids), 1 <= start < n -> [n - start] float64
    """The probability the model gives each token from `start` on after the tokens before it: the last layer of
    the lens at the position before it (one forward pass over the whole sequence; causal, so what each step of a
    generation saw). Of greedy tokens, each is the most probable of its step:

        written_probabilities(model, tokens.ids, tokens.generated)  # the tokens --generate wrote
    """
    assert 1 <= start < len(ids)  # a token before the first written
    if source_ids is None:
        unembedding(model)
        run = forward(model, ids)
        assert run.final is not None  # a full pass
        probs = probabilities(logits(model, run.final[start - 1 : -1]))  # [n - start, vocab]
    else:
        probs = probabilities(target_lens_arrays(model, source_ids, ids, last=True)[start - 1 : -1])
    _check_finite(model, "the next-token probabilities", probs)
    return probs[np.arange(len(probs)), np.asarray(ids[start:])]


def lens_document(
    model: Model, text: str, k: int = 5, tokens: Tokens | None = None, context: str | None = None
) -> dict:
    """`attn lens -f json`: a row per layer and position with its k most probable next tokens. `tokens`: those
    of a run of `text` already made (a generation's: the text and the tokens written after it, marked in
    `generated`), instead of the text cut again. An encoder–decoder's: of its decoder over the target `text` (or
    its decoder's `tokens`), reading the source `context`."""
    if not 1 <= k <= 100:
        raise ConfigError(f"--top-k must be between 1 and 100, got {k}")
    if is_seq2seq(model):
        if context is None:
            raise ConfigError(
                f"{model.name} is an encoder–decoder: its lens is its decoder's over TEXT, the target, which reads a "
                "source: give it with --context SOURCE"
            )
        source = source_tokens(model, context)
        tokens = decoder_tokens(model, text) if tokens is None else tokens  # teacher forcing, or a written target
        every = target_lens_layers(model, source.ids, tokens.ids)  # L_dec + 1 of [m, vocab]
        n_layer, layers = int(model.hp["n_dec_layer"]), DECODER_LAYERS
    else:
        if context is not None:
            raise ConfigError(f"--context is an encoder–decoder's source; {model.name} is not one: drop --context")
        unembedding(model)  # an encoder has none: said before the text is run
        if tokens is None:
            tokens = _encode(model, text, None)[0]
        every = lens_layers(model, tokens.ids)  # L + 1 of [n, vocab]
        n_layer, layers = model.n_layer, LAYERS
    decode, generation = model.tokenizer.id_to_token, tokens.generation()
    rows = []
    for l, logit in enumerate(every):
        _check_finite(model, "the lens", logit)
        probs = probabilities(logit)
        best = top_k(probs, k)  # [n, k]
        picked = np.take_along_axis(probs, best, axis=-1)
        rows += [
            {
                "layer": l,
                "position": i,
                "top_ids": best[i].tolist(),
                "top_tokens": [decode(int(t)) for t in best[i]],
                "top_probs": picked[i].tolist(),
            }
            for i in range(len(best))
        ]
    return (
        {
            "schema": LENS_SCHEMA,
            "text": text,
            "tokens": list(tokens.strings),
            "special": list(tokens.special),
            "model": model.name,
            "summary": describe(model),
            "n_layer": n_layer,
            "k": k,
            "layers": layers,
            "rows": rows,
        }
        | ({} if context is None else {"source": context})
        | ({} if generation is None else {"generated": generation})
    )
