"""The logit lens (nostalgebraist 2020): what a decoder would predict next if it stopped after each layer.

For every layer l = 0..L (0: the embeddings; l: the output of block l - 1, transformers' hidden_states[l]) and
every position, the residual stream goes through the model's own final norm and unembedding (network/unembed.py);
the last layer is the model's own logits. An encoder–decoder's: its decoder's stream over
the target (teacher forcing, reading the source) through the decoder's final norm and head (`Decoder.logits`).

    doc = lens_document(load_model("SmolLM2-135M"), "The capital of France is", k=3)
    doc["rows"][-1]  # {"layer": 30, "position": 5, "top_ids": [...], "top_tokens": ["ĠParis", ...], ...}
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from attncli.errors import ConfigError
from attncli.models.files.folder import check_run
from attncli.models.files.hparams import ModelError
from attncli.models.network.forward import Forward, forward
from attncli.models.network.model import Model
from attncli.models.network.unembed import logits, next_logits, probabilities, top_k, unembedding
from attncli.models.runs import route
from attncli.models.runs.encdec import seq2seq_forward
from attncli.models.runs.run import _check_finite, _encode
from attncli.models.runs.seq2seq import decoder_tokens, encoder_tokens
from attncli.models.runs.source import chat_fields, describe
from attncli.models.runs.vocab import token_text
from attncli.pipeline.ranges import check_range
from attncli.pipeline.tokenize import Tokens

LENS_SCHEMA = "attncli.lens/1"
LAYERS = "layer 0 = the embeddings, layer l = the output of block l - 1 (transformers' hidden_states[l])"
DECODER_LAYERS = (
    "layer 0 = the decoder's embeddings, layer l = the output of decoder block l - 1 (transformers' "
    "decoder_hidden_states[l]), over the target with teacher forcing"
)
CHUNK_BYTES = 1 << 26  # the lens' arrays of [rows, vocab] take at most this many bytes at once
GROUP_BYTES = 1 << 28  # the logits of the layers whose streams go through a head read in chunks together


def lens_arrays(model: Model, ids) -> np.ndarray:  # [n] token ids -> [L + 1, n, vocab] logits float32
    """The lens' logits at every layer and position; the last layer is the model's own (one forward pass)."""
    run = forward(model, ids)
    assert run.final is not None  # a full pass
    inner = next_logits(model, np.stack(run.hidden))  # [L, n, vocab]: the embeddings, then blocks 0..L-2's outputs
    return np.concatenate([inner, logits(model, run.final)[None]])


def target_lens_arrays(model: Model, encoder_ids, decoder_ids) -> np.ndarray:
    # [n] source ids, [m] decoder input ids -> [L_dec + 1, m, vocab] logits float32
    """An encoder–decoder's lens: its decoder's stream entering each layer, then its output, through the decoder's
    final norm and head (`Decoder.logits`); the last layer is the model's own logits (one teacher-forced pass)."""
    _seq2seq_head(model)
    run = seq2seq_forward(model, encoder_ids, decoder_ids)
    return model.family.decoder.logits(model, np.stack([*run.hidden, run.output]))


def _seq2seq_head(model: Model) -> None:
    """ModelError when an encoder–decoder's checkpoint has no output head."""
    if model.unembed is None:
        raise ModelError(
            f"{model.name} has no output head: tie_word_embeddings is false and the checkpoint lacks lm_head.weight"
        )


def top_tokens(
    model: Model, streams: list[np.ndarray], read: Callable[[int, slice], np.ndarray], k: int
) -> tuple[np.ndarray, np.ndarray]:
    # L + 1 streams [n, d_model], read(layer, rows) -> those rows' logits -> [L + 1, n, k] ids int64, probs float64
    """The k most probable next tokens of every layer and position, best first, and their probabilities: a layer
    and CHUNK_BYTES of rows at a time, so that the lens of a long text never holds [L + 1, n, vocab] at once."""
    assert model.unembed is not None  # the callers said so first (unembedding, _seq2seq_head)
    n, vocab = streams[0].shape[0], model.weights.shape(model.unembed)[0]
    # float32 logits, float64 probabilities and top_k's two float64 copies (its negation, its partition) of `rows`
    rows = max(1, CHUNK_BYTES // (28 * vocab))
    k = min(k, vocab)
    ids, probs = np.empty((len(streams), n, k), np.int64), np.empty((len(streams), n, k))
    for l in range(len(streams)):
        for a in range(0, n, rows):
            z = read(l, slice(a, a + rows))
            _check_finite(model, "the lens", z)
            p = probabilities(z)
            ids[l, a : a + rows] = top_k(p, k)
            probs[l, a : a + rows] = np.take_along_axis(p, ids[l, a : a + rows], axis=-1)
    return ids, probs


def lens_top(model: Model, run: Forward, k: int) -> tuple[np.ndarray, np.ndarray]:
    # a decoder's full pass over n tokens -> [L + 1, n, k] ids int64, [L + 1, n, k] probabilities float64
    """`top_tokens` of a decoder's pass: its residual streams (`hidden`) through the final norm and the head, and
    its final rows (already through the norm) through the head."""
    assert run.final is not None  # a full pass
    last, streams = len(run.hidden), [*run.hidden, run.final]
    if not model.weights.whole(unembedding(model)):  # a head read a chunk at a time: all the rows of a pass of it
        return top_tokens(model, streams, _grouped(model, streams), k)
    return top_tokens(model, streams, lambda l, at: (logits if l == last else next_logits)(model, streams[l][at]), k)


def _per_group(model: Model, n: int) -> int:
    """The layers whose n rows of logits go through a head read in chunks together: as many as GROUP_BYTES hold,
    at least one (a long text's group is one layer's logits, more than GROUP_BYTES), at most every layer."""
    vocab = model.weights.shape(model.unembed or "")[0]
    return min(model.n_layer + 1, max(1, GROUP_BYTES // (4 * vocab * n)))


def check_lens(model: Model, n: int) -> None:
    """The lens of a decoder's pass over n tokens priced against ATTN_MAX_MEMORY (folder.py's `check_run`) before
    its logits are made, and the weights told what room is left (`Weights.fit`): the pass, a group of layers'
    logits (`_per_group`, float32) and the CHUNK_BYTES of rows `top_tokens` takes at once."""
    vocab = model.weights.shape(unembedding(model))[0]
    beside = 4 * vocab * n * _per_group(model, n) + CHUNK_BYTES
    room = check_run(
        model.weights.least() + beside, model.n_layer, model.n_head, model.d_model, n, f"the lens of {model.name}"
    )
    model.weights.fit(None if room is None else room - beside)


def _grouped(model: Model, streams: list[np.ndarray]) -> Callable[[int, slice], np.ndarray]:
    # L + 1 streams [n, d_model] (the last already through the final norm) -> read(layer, rows) -> [rows, vocab]
    """The lens' logits when the head is read a chunk of rows at a time (`unembed.logits`): the streams of as many
    layers as GROUP_BYTES of logits hold go through the head together, so that it is read once per group rather
    than once per layer and chunk of rows (33 times for an 8B model's 16 tokens)."""
    n, last = streams[0].shape[0], len(streams) - 1
    per = _per_group(model, n)  # layers a group
    group: dict[int, np.ndarray] = {}

    def read(l: int, at: slice) -> np.ndarray:
        if l not in group:
            group.clear()
            layers = range(l, min(l + per, len(streams)))
            normed = [streams[i] if i == last else model.family.final(model, streams[i]) for i in layers]
            z = logits(model, np.concatenate(normed))  # [len(layers) n, vocab]
            group.update({i: z[j * n : (j + 1) * n] for j, i in enumerate(layers)})
        return group[l][at]

    return read


def target_lens_top(model: Model, encoder_ids, decoder_ids, k: int) -> tuple[np.ndarray, np.ndarray]:
    # [n] source ids, [m] decoder input ids -> [L_dec + 1, m, k] ids int64, probabilities float64
    """`top_tokens` of an encoder–decoder's decoder (what `target_lens_arrays` holds whole): one teacher-forced
    pass, each stream through the decoder's final norm and head."""
    _seq2seq_head(model)  # said before the pass
    run = seq2seq_forward(model, encoder_ids, decoder_ids)
    streams = [*run.hidden, run.output]
    return top_tokens(model, streams, lambda l, at: model.family.decoder.logits(model, streams[l][at]), k)


def written_probabilities(model: Model, ids, start: int, encoder_ids=None, run: Forward | None = None) -> np.ndarray:
    # [n] token ids (an encoder–decoder: its decoder's, reading [s] encoder_ids), 1 <= start < n -> [n - start] float64
    """The probability the model gives each token from `start` on after the tokens before it: the last layer of
    the lens at the position before it, from `run` (a full pass over `ids`; default one made here: causal, so
    what each step of a generation saw), CHUNK_BYTES of logits at a time; an encoder–decoder's (`encoder_ids`), from
    its decoder's output in one teacher-forced pass. Of greedy tokens, each is the most probable of its step; of
    sampled ones, it is before the sampling's temperature, top-k and top-p:

        written_probabilities(model, tokens.ids, tokens.generated)  # the tokens --generate wrote
    """
    _check_start(start, len(ids))
    if encoder_ids is not None:  # an encoder–decoder: one teacher-forced pass over the source and the target
        _seq2seq_head(model)
        output = seq2seq_forward(model, encoder_ids, ids).output
        read = partial(model.family.decoder.logits, model)
        return _chosen(model, output[start - 1 : len(ids) - 1], ids[start:], read)
    unembedding(model)  # an encoder has none: said before the pass
    run = forward(model, ids) if run is None else run
    assert run.final is not None  # a full pass
    return _chosen(model, run.final[start - 1 : len(ids) - 1], ids[start:], partial(logits, model))


def _check_start(start: int, n: int) -> None:
    if not 1 <= start < n:
        raise ModelError(f"the written tokens start after the first token and before the end, not at {start}")


def _chosen(model: Model, rows: np.ndarray, chosen, read: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    # [m, d_model] streams, [m] ids -> [m] float64: each row's probability of its id, CHUNK_BYTES of logits at a time
    assert model.unembed is not None  # the callers said so first
    step = max(1, CHUNK_BYTES // (12 * model.weights.shape(model.unembed)[0]))  # float32 logits, float64 probs
    ids, out = np.asarray(chosen, dtype=np.int64), np.empty(len(rows))
    for a in range(0, len(rows), step):
        probs = probabilities(read(rows[a : a + step]))  # [step, vocab]
        _check_finite(model, "the next-token probabilities", probs)
        out[a : a + step] = probs[np.arange(len(probs)), ids[a : a + step]]
    return out


def rows_of(model: Model, best: np.ndarray, picked: np.ndarray) -> list[dict]:
    # [L + 1, n, k] ids, [L + 1, n, k] probabilities -> the rows of `attn lens -f json`
    """{layer, position, top_ids, top_tokens, top_probs, top_texts}, layer by layer, each layer's positions in
    order; a token's text is what it decodes to alone (`ĠParis`: ` Paris`)."""
    decode = model.tokenizer.id_to_token
    texts = {int(t): token_text(model, int(t)) for t in np.unique(best)}
    return [
        {
            "layer": l,
            "position": i,
            "top_ids": best[l, i].tolist(),
            "top_tokens": [decode(int(t)) for t in best[l, i]],
            "top_probs": picked[l, i].tolist(),
            "top_texts": [texts[int(t)] for t in best[l, i]],  # last: the columns before keep their places
        }
        for l in range(best.shape[0])
        for i in range(best.shape[1])
    ]


def lens_rows(model: Model, run: Forward, k: int) -> list[dict]:
    """The rows of `attn lens -f json` of a decoder's pass (the page's lens reads the page's own pass)."""
    return rows_of(model, *lens_top(model, run, k))


def check_k(k: int) -> None:
    """ConfigError when k is not a count of tokens the lens shows (1 to 100)."""
    check_range("top_k", k)


def lens_document(
    model: Model, text: str, k: int = 5, tokens: Tokens | None = None, context: str | None = None
) -> dict:
    """`attn lens -f json`: a row per layer and position with its k most probable next tokens. `tokens`: those
    of a run of `text` already made (a generation's: the text and the tokens written after it, marked in
    `generated`), instead of the text cut again. An encoder–decoder's: of its decoder over the target `text` (or
    its decoder's `tokens`), reading the source `context`."""
    check_k(k)
    if route.kind(model).reads_source:
        if context is None:
            raise ConfigError(
                f"{model.name} is an encoder–decoder: its lens is its decoder's over TEXT, the target, which reads a "
                "source: give it with --context SOURCE"
            )
        source = encoder_tokens(model, context)
        tokens = decoder_tokens(model, text) if tokens is None else tokens  # teacher forcing, or a written target
        rows = rows_of(model, *target_lens_top(model, source.ids, tokens.ids, k))
        n_layer, layers = int(model.hp["n_dec_layer"]), DECODER_LAYERS
    else:
        if context is not None:
            raise ConfigError(f"--context is an encoder–decoder's source; {model.name} is not one: drop --context")
        unembedding(model)  # an encoder has none: said before the text is run
        if tokens is None:
            tokens = _encode(model, text, None)[0]
        check_lens(model, len(tokens))
        rows = lens_rows(model, forward(model, tokens.ids), k)
        n_layer, layers = model.n_layer, LAYERS
    generation = tokens.generation()
    return (
        {
            "schema": LENS_SCHEMA,
            "text": text,
            "tokens": list(tokens.strings),
            "texts": list(tokens.text_of()),
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
        | chat_fields(tokens)
    )
