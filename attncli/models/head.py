"""A decoder's next-token head: the residual stream through the final norm, then the unembedding.

    logits = final_norm(x) Wᵀ        W [vocab, d_model]: the word embedding table (tied) or lm_head

as transformers' *ForCausalLM; Gemma 2 then soft-caps them, cap · tanh(logits / cap) (final_logit_softcapping).
The probabilities are the one softmax of attncli.core, in float64 (a log-probability keeps its digits).
"""

from __future__ import annotations

import numpy as np

from attncli.core.attention import softmax

from .blocks import dense
from .load import Model, ModelError


def unembedding(model: Model) -> np.ndarray:  # -> [vocab, d_model] float32
    """The model's output matrix, or ModelError when it has none (an encoder, or an untied head not saved)."""
    if model.unembed is None:
        if model.family.head is None:
            raise ModelError(f"{model.name} is an encoder ({model.model_type}): it has no next-token head")
        raise ModelError(
            f"{model.name} has no next-token head: tie_word_embeddings is false and the checkpoint lacks "
            f"{model.family.head[0]} (a base model saved without its head)"
        )
    return model.weights[model.unembed]


def logits(model: Model, normed) -> np.ndarray:  # [..., d_model] after the final norm -> [..., vocab] float32
    """The next-token logits of rows already through the final norm (the family's `final`)."""
    out = dense(np.asarray(normed, dtype=np.float32), unembedding(model).T)
    cap = model.hp.get("logit_softcap")
    if cap is not None:
        out *= np.float32(1 / cap)
        np.tanh(out, out=out)
        out *= np.float32(cap)
    return out


def next_logits(model: Model, x) -> np.ndarray:  # [..., d_model] residual stream -> [..., vocab] float32
    """The logits the model would predict from the residual stream x: the final norm, then `logits`."""
    return logits(model, model.family.final(model, x))


def probabilities(logit_rows) -> np.ndarray:  # [..., vocab] -> [..., vocab] float64, rows sum to 1
    """softmax of the logits, in float64.

    >>> probabilities(np.array([0.0, np.log(3.0)], np.float32)).round(6).tolist()
    [0.25, 0.75]
    """
    return softmax(np.asarray(logit_rows, dtype=np.float64))


def top_k(probs, k: int) -> np.ndarray:  # [..., vocab] -> [..., k] int64: the k most probable ids, best first
    """The k largest of each row, best first; ties by the lower id (as a stable sort of -p).

    >>> top_k(np.array([0.1, 0.5, 0.1, 0.3]), 3).tolist()
    [1, 3, 0]
    """
    k = min(k, probs.shape[-1])
    part = np.argpartition(-probs, k - 1, axis=-1)[..., :k]  # the k largest, in no order
    picked = np.take_along_axis(probs, part, axis=-1)
    order = np.lexsort((part, -picked), axis=-1)
    return np.take_along_axis(part, order, axis=-1).astype(np.int64)
