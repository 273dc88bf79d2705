"""A decoder's next-token head: the residual stream through the final norm, then the unembedding.

    logits = final_norm(x) Wᵀ        W [vocab, d_model]: the word embedding table (tied) or lm_head

as transformers' *ForCausalLM; Gemma 2 then soft-caps them, cap · tanh(logits / cap) (final_logit_softcapping).
The probabilities are the one softmax of attncli.core, in float64 (a log-probability keeps its digits).
"""

from __future__ import annotations

import numpy as np

from attncli.core.attention import softmax
from attncli.errors import ConfigError
from attncli.models.files.hparams import ModelError
from attncli.models.network.blocks import dense
from attncli.models.network.model import TABLE_CHUNK, Model


def unembedding(model: Model, command: str = "attn ablate switches off a decoder-only model's heads") -> str:
    # -> the name in model.weights of its [vocab, d_model] output matrix
    """A decoder-only model's output matrix (its name: `logits` reads it whole or a chunk at a time), or ModelError
    when it has none (an untied head not saved); ConfigError for an encoder (no head: a command that does not fit
    it) and for an encoder–decoder, whose head reads its decoder's stream (`Decoder.logits`), not the text's:
    `command` says what the command that refuses it does."""
    if model.family.decoder is not None:
        raise ConfigError(
            f"{model.name} is an encoder–decoder ({model.model_type}): {command} (its decoder's lens: attn lens "
            "TARGET --context SOURCE; its target: --generate N)"
        )
    if model.unembed is None:
        if model.family.head is None and not model.causal:
            raise ConfigError(  # a command that does not fit the model, as --context on a decoder (docs/limits.md)
                f"{model.name} is an encoder ({model.model_type}): it has no next-token head, which the logit lens, "
                "ablation, patching, logit attribution, knockout and --generate read; its attention: attn show, "
                "attn heads or attn view with --model"
            )
        if model.family.head is None:
            raise ModelError(f"attn does not run the next-token head of {model.model_type} models ({model.name})")
        raise ModelError(
            f"{model.name} has no next-token head: tie_word_embeddings is false and the checkpoint lacks "
            f"{model.family.head[0]} (a base model saved without its head)"
        )
    return model.unembed


def logits(model: Model, normed) -> np.ndarray:  # [..., d_model] after the final norm -> [..., vocab] float32
    """The next-token logits of rows already through the final norm (the family's `final`): the output matrix
    whole when the weights keep it (`Weights.whole`), else TABLE_CHUNK bytes of its rows at a time, read (a GGUF's
    dequantized) for this call and dropped (a 128,256 x 4,096 head is 2 GiB as float32), each chunk's columns of
    the logits one product. Every row of a call shares each chunk's reading: give it all the rows at once."""
    x, name, w = np.asarray(normed, dtype=np.float32), unembedding(model), model.weights
    if w.whole(name):
        out = dense(x, w[name].T)
    else:
        vocab, d = w.shape(name)
        out = np.empty((*x.shape[:-1], vocab), np.float32)
        step = max(1, TABLE_CHUNK // (4 * d))
        for a in range(0, vocab, step):
            out[..., a : a + step] = dense(x, w.rows(name, np.arange(a, min(a + step, vocab))).T)
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
    """The k largest of each row, best first; equal ones in the order of their ids (a stable sort of -p, which
    would sort every row: only the candidates at or above each row's k-th largest are sorted here).

    >>> top_k(np.array([0.1, 0.5, 0.1, 0.3]), 3).tolist()
    [1, 3, 0]
    """
    k = min(k, probs.shape[-1])
    rows = probs.reshape(-1, probs.shape[-1])
    kth = -np.partition(-rows, k - 1, axis=-1)[:, k - 1 : k]  # [rows, 1]: each row's k-th largest
    out = np.empty((len(rows), k), np.int64)
    for r, (row, t) in enumerate(zip(rows, kth)):
        candidates = np.flatnonzero(row >= t)  # k of them, more when some equal the k-th
        out[r] = candidates[np.argsort(-row[candidates], kind="stable")[:k]]
    return out.reshape(*probs.shape[:-1], k)
