"""The logit lens (nostalgebraist 2020): what a decoder would predict next if it stopped after each layer.

For every layer l = 0..L (0: the embeddings; l: the output of block l - 1, transformers' hidden_states[l]) and
every position, the residual stream goes through the model's own final norm and unembedding
(attncli.models.head); the last layer is the model's own logits.

    doc = lens_document(load_model("SmolLM2-135M"), "The capital of France is", k=3)
    doc["rows"][-1]  # {"layer": 30, "position": 5, "top_ids": [...], "top_tokens": ["ĠParis", ...], ...}
"""

from __future__ import annotations

import numpy as np

from attncli.errors import ConfigError
from attncli.pipeline.tokenize import Tokens

from .forward import Forward, forward
from .head import logits, next_logits, probabilities, top_k, unembedding
from .hparams import ModelError
from .model import Model
from .run import _check_finite, _encode
from .source import describe

LENS_SCHEMA = "attncli.lens/1"
LAYERS = "layer 0 = the embeddings, layer l = the output of block l - 1 (transformers' hidden_states[l])"
CHUNK_BYTES = 1 << 26  # the lens' arrays of [rows, vocab] take at most this many bytes at once


def lens_arrays(model: Model, ids) -> np.ndarray:  # [n] token ids -> [L + 1, n, vocab] logits float32
    """The lens' logits at every layer and position; the last layer is the model's own (one forward pass)."""
    run = forward(model, ids)
    assert run.final is not None  # a full pass
    inner = next_logits(model, np.stack(run.hidden))  # [L, n, vocab]: the embeddings, then blocks 0..L-2's outputs
    return np.concatenate([inner, logits(model, run.final)[None]])


def lens_top(model: Model, run: Forward, k: int) -> tuple[np.ndarray, np.ndarray]:
    # a full pass over n tokens -> [L + 1, n, k] ids int64, [L + 1, n, k] probabilities float64
    """The k most probable next tokens of every layer and position, best first, and their probabilities, from a
    pass's residual streams (`hidden`) and its final rows: a layer and CHUNK_BYTES of rows at a time, so that the
    lens of a long text never holds [L + 1, n, vocab] at once."""
    assert run.final is not None  # a full pass
    streams = [*run.hidden, run.final]  # the last: already through the final norm
    n, vocab = run.final.shape[0], unembedding(model).shape[0]
    # float32 logits, float64 probabilities and top_k's two float64 copies (its negation, its partition) of `rows`
    rows = max(1, CHUNK_BYTES // (28 * vocab))
    k = min(k, vocab)
    ids, probs = np.empty((len(streams), n, k), np.int64), np.empty((len(streams), n, k))
    for l, x in enumerate(streams):
        for a in range(0, n, rows):
            z = logits(model, x[a : a + rows]) if l == len(streams) - 1 else next_logits(model, x[a : a + rows])
            _check_finite(model, "the lens", z)
            p = probabilities(z)
            ids[l, a : a + rows] = top_k(p, k)
            probs[l, a : a + rows] = np.take_along_axis(p, ids[l, a : a + rows], axis=-1)
    return ids, probs


def written_probabilities(model: Model, ids, start: int, run: Forward | None = None) -> np.ndarray:
    # [n] token ids, 1 <= start < n -> [n - start] float64
    """The probability the model gives each token from `start` on after the tokens before it: the last layer of
    the lens at the position before it, from `run` (a full pass over `ids`; default one made here: causal, so
    what each step of a generation saw), CHUNK_BYTES of logits at a time. Of greedy tokens, each is the most
    probable of its step; of sampled ones, it is before the sampling's temperature, top-k and top-p:

        written_probabilities(model, tokens.ids, tokens.generated)  # the tokens --generate wrote
    """
    if not 1 <= start < len(ids):
        raise ModelError(f"the written tokens start after the first token and before the end, not at {start}")
    step = max(1, CHUNK_BYTES // (12 * unembedding(model).shape[0]))  # float32 logits, float64 probabilities
    run = forward(model, ids) if run is None else run
    assert run.final is not None  # a full pass
    rows, chosen = run.final[start - 1 : len(ids) - 1], np.asarray(ids[start:], dtype=np.int64)
    out = np.empty(len(rows))
    for a in range(0, len(rows), step):
        probs = probabilities(logits(model, rows[a : a + step]))  # [step, vocab]
        _check_finite(model, "the next-token probabilities", probs)
        out[a : a + step] = probs[np.arange(len(probs)), chosen[a : a + step]]
    return out


def lens_rows(model: Model, run: Forward, k: int) -> list[dict]:
    """The rows of `attn lens -f json` from a pass: {layer, position, top_ids, top_tokens, top_probs}, layer by
    layer, each layer's positions in order."""
    best, picked = lens_top(model, run, k)
    decode = model.tokenizer.id_to_token
    return [
        {
            "layer": l,
            "position": i,
            "top_ids": best[l, i].tolist(),
            "top_tokens": [decode(int(t)) for t in best[l, i]],
            "top_probs": picked[l, i].tolist(),
        }
        for l in range(best.shape[0])
        for i in range(best.shape[1])
    ]


def check_k(k: int) -> None:
    """ConfigError when k is not a count of tokens the lens shows (1 to 100)."""
    if not 1 <= k <= 100:
        raise ConfigError(f"--top-k must be between 1 and 100, got {k}")


def lens_document(model: Model, text: str, k: int = 5, tokens: Tokens | None = None) -> dict:
    """`attn lens -f json`: a row per layer and position with its k most probable next tokens. `tokens`: those
    of a run of `text` already made (a generation's: the text and the tokens written after it, marked in
    `generated`), instead of the text cut again."""
    check_k(k)
    unembedding(model)  # an encoder has none: said before the text is run
    if tokens is None:
        tokens = _encode(model, text, None)[0]
    rows, generation = lens_rows(model, forward(model, tokens.ids), k), tokens.generation()
    return {
        "schema": LENS_SCHEMA,
        "text": text,
        "tokens": list(tokens.strings),
        "special": list(tokens.special),
        "model": model.name,
        "summary": describe(model),
        "n_layer": model.n_layer,
        "k": k,
        "layers": LAYERS,
        "rows": rows,
    } | ({} if generation is None else {"generated": generation})
