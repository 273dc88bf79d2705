"""Attention knockout (Geva et al. 2023, "Dissecting recall of factual associations in auto-regressive language
models"): block the edges from one query position to some key positions, their scores set to −∞ before the
softmax, in a window of K consecutive layers, and see how much the probability of the model's own top next token
moves:

    delta_prob = (p_blocked(t) − p(t)) / p(t)        t = argmax of the full run's next-token distribution

A window that blocks the flow of information the prediction needs shows a large drop. Every window is one copy of
the text in one batch (models/network/attention.py's `padding`, nothing padded), each with its own blocked cells
(`blocking`, added to the causal mask).
"""

from __future__ import annotations

import re

import numpy as np

from attncli.errors import ConfigError
from attncli.models.files.folder import check_run
from attncli.models.files.hparams import ModelError
from attncli.models.interpret.causal import check_decoder
from attncli.models.network.attention import blocking, padding
from attncli.models.network.forward import forward
from attncli.models.network.model import Model
from attncli.models.network.unembed import logits, next_logits, probabilities
from attncli.models.runs.run import _encode
from attncli.models.runs.source import describe
from attncli.models.runs.vocab import token_text
from attncli.pipeline.tokenize import Tokens

_POSITIONS = re.compile(r"\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*")


def span_positions(tokens: Tokens, text: str, span: str) -> list[int]:
    """--from: token positions ("3", "2-4", "0,5-6") or a text span of `text` (its first occurrence: the tokens
    whose characters overlap it), as sorted positions; ConfigError when out of range or not found.

    >>> t = Tokens(("The", " capital", " of", " France"), (0, 1, 2, 3), ((0, 3), (3, 11), (11, 14), (14, 21)), "t")
    >>> span_positions(t, "The capital of France", "France"), span_positions(t, "", "0, 2-3")
    ([3], [0, 2, 3])
    """
    n = len(tokens)
    if _POSITIONS.fullmatch(span):
        out: set[int] = set()
        for part in span.split(","):
            first, _, last = part.strip().partition("-")
            a, b = int(first), int(last or first)
            if not a <= b < n:
                raise ConfigError(f"--from {part.strip()!r}: the text has positions 0..{n - 1}")
            out.update(range(a, b + 1))
        return sorted(out)
    start = text.find(span)
    if start < 0 or not span:
        raise ConfigError(f"--from {span!r} is neither positions (such as 2-4) nor a part of the text")
    end = start + len(span)
    found = [
        i
        for i, ((s, e), special) in enumerate(zip(tokens.offsets, tokens.special or [False] * n))
        if not special and s < end and e > start
    ]
    if not found:
        raise ConfigError(f"--from {span!r}: no token of the text covers it")
    return found


def default_window(model: Model) -> int:
    """About a fifth of the layers, as Geva et al.'s 9 of GPT-2 XL's 48."""
    return max(1, round(model.n_layer / 5))


def knockout(model: Model, ids, keys: list[int], query: int, window: int) -> dict:
    # [n] ids -> {"top": id, "prob": p, "rows": [{first_layer, last_layer, prob, delta_prob}]}
    """The edges query -> keys blocked in every window of `window` consecutive layers, one copy per window."""
    n, layers = len(ids), model.n_layer
    if not 1 <= window <= layers:
        raise ConfigError(f"--window must be 1..{layers} (the layers of {model.name}), not {window}")
    if any(k > query for k in keys):
        raise ConfigError(
            f"--from includes a position after --to {query}: a decoder's query never reads a later key "
            "(the causal mask blocks it already)"
        )
    if len(set(keys)) == query + 1:
        raise ConfigError(f"--from blocks every key of position {query}: its attention would have nothing to read")
    starts = np.arange(layers - window + 1)  # [B]: each copy's first blocked layer
    room = check_run(
        model.weights.least(), len(starts) + 1, model.n_head, model.d_model, n, f"{model.name} knocked out"
    )
    model.weights.fit(room)
    run = forward(model, ids)
    assert run.final is not None  # a full pass
    probs = probabilities(logits(model, run.final[query]))  # [vocab]: the next token after the query's position
    top = int(np.argmax(probs))

    def cells(layer: int):  # -> [B, 1, n, n] bool or None: the copies whose window holds `layer`
        on = (starts <= layer) & (layer < starts + window)
        if not on.any():
            return None
        out = np.zeros((len(starts), 1, n, n), dtype=bool)
        out[np.ix_(on, np.zeros(1, np.int64), np.full(1, query), np.asarray(keys, np.int64))] = True
        return out

    f = model.family
    batch = np.repeat(run.hidden[0][None], len(starts), axis=0)  # [B, n, d_model]
    with padding(np.zeros(batch.shape[:2], dtype=bool)), blocking(cells):
        for l in range(layers):
            batch, _ = f.attention(model, l, batch)
            batch = f.mlp(model, l, batch)
    blocked = probabilities(next_logits(model, batch[:, query]))[:, top]  # [B]
    if not np.isfinite(blocked).all():
        raise ModelError(f"the logits of {model.name} with edges blocked are not finite")
    p = float(probs[top])
    rows = [
        {"first_layer": int(s), "last_layer": int(s) + window - 1, "prob": float(q), "delta_prob": float((q - p) / p)}
        for s, q in zip(starts, blocked)
    ]
    return {"top": top, "prob": p, "rows": rows}


KNOCKOUT_SCHEMA = "attncli.knockout/1"


def knockout_document(model: Model, text: str, span: str, to: int | None = None, window: int | None = None) -> dict:
    """`attn knockout -f json`: the edges from position `to` (default the last) to the tokens of `span` blocked in
    every window of `window` layers (default `default_window`), a row {first_layer, last_layer, prob, delta_prob}
    each."""
    check_decoder(model, "knockout")
    tokens = _encode(model, text, None)[0]
    n = len(tokens)
    if to is not None and not -n <= to < n:
        raise ConfigError(f"--to {to}: the text has positions 0..{n - 1} (negative counts from the end)")
    query = n - 1 if to is None else to % n
    keys = span_positions(tokens, text, span)
    k = default_window(model) if window is None else window
    found = knockout(model, tokens.ids, keys, query, k)
    word = model.tokenizer.id_to_token
    return {
        "schema": KNOCKOUT_SCHEMA,
        "text": text,
        "tokens": list(tokens.strings),
        "texts": list(tokens.text_of()),
        "special": list(tokens.special),
        "model": model.name,
        "summary": describe(model),
        "n_layer": model.n_layer,
        "from": {"given": span, "positions": keys},
        "to": query,
        "window": k,
        "top": {
            "id": found["top"],
            "token": word(found["top"]),
            "text": token_text(model, found["top"]),
            "prob": found["prob"],
        },
        "rows": found["rows"],
    }
