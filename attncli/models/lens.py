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

from .forward import forward
from .head import logits, next_logits, probabilities, top_k, unembedding
from .model import Model
from .run import _check_finite, _encode
from .source import describe

LENS_SCHEMA = "attncli.lens/1"
LAYERS = "layer 0 = the embeddings, layer l = the output of block l - 1 (transformers' hidden_states[l])"


def lens_arrays(model: Model, ids) -> np.ndarray:  # [n] token ids -> [L + 1, n, vocab] logits float32
    """The lens' logits at every layer and position; the last layer is the model's own (one forward pass)."""
    run = forward(model, ids)
    assert run.final is not None  # a full pass
    inner = next_logits(model, np.stack(run.hidden))  # [L, n, vocab]: the embeddings, then blocks 0..L-2's outputs
    return np.concatenate([inner, logits(model, run.final)[None]])


def written_probabilities(model: Model, ids, start: int) -> np.ndarray:
    # [n] token ids, 1 <= start < n -> [n - start] float64
    """The probability the model gives each token from `start` on after the tokens before it: the last layer of
    the lens at the position before it (one forward pass over the whole sequence; causal, so what each step of a
    generation saw). Of greedy tokens, each is the most probable of its step:

        written_probabilities(model, tokens.ids, tokens.generated)  # the tokens --generate wrote
    """
    unembedding(model)
    run = forward(model, ids)
    assert run.final is not None and 1 <= start < len(ids)  # a full pass; a token before the first written
    probs = probabilities(logits(model, run.final[start - 1 : -1]))  # [n - start, vocab]
    _check_finite(model, "the next-token probabilities", probs)
    return probs[np.arange(len(probs)), np.asarray(ids[start:])]


def lens_document(model: Model, text: str, k: int = 5, tokens: Tokens | None = None) -> dict:
    """`attn lens -f json`: a row per layer and position with its k most probable next tokens. `tokens`: those
    of a run of `text` already made (a generation's: the text and the tokens written after it, marked in
    `generated`), instead of the text cut again."""
    if not 1 <= k <= 100:
        raise ConfigError(f"--top-k must be between 1 and 100, got {k}")
    unembedding(model)  # an encoder has none: said before the text is run
    if tokens is None:
        tokens = _encode(model, text, None)[0]
    every = lens_arrays(model, tokens.ids)  # [L + 1, n, vocab]
    _check_finite(model, "the lens", every)
    probs = probabilities(every)
    best = top_k(probs, k)  # [L + 1, n, k]
    picked = np.take_along_axis(probs, best, axis=-1)
    decode, generation = model.tokenizer.id_to_token, tokens.generation()
    rows = [
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
