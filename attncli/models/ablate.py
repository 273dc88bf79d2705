"""Switch attention heads off and see the next token change (head ablation, as TransformerLens users do).

A head is switched off by setting its slice of the output projection's input (its A_h V_h, the columns
h·d_k .. (h+1)·d_k of concat_h(A_h V_h)) to zero, or to its mean over the text's positions ("mean"), then
running the rest of the model. Reported for each head: the change in the logit and in the log-probability of
one token at the last position (the model's own next token, or a target), ablated minus clean.

One forward pass keeps the residual stream entering every layer; the heads of a layer are then run together,
as one batch of copies of that stream (attncli.models.attention's `padding`, nothing padded), from that layer
on, each copy with its own head switched off (`editing`): SmolLM2's 270 heads cost 30 batched partial passes,
not 270 full ones.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attncli.errors import ConfigError
from attncli.pipeline.tokenize import Tokens

from .attention import editing, padding
from .folder import check_run
from .forward import forward
from .head import logits, next_logits, probabilities, unembedding
from .hparams import ModelError
from .load import check_head, check_layer
from .model import Model
from .run import _encode
from .source import describe
from .tokens import encode

MODES = {
    "zero": "the head's output set to zero",
    "mean": "the head's output set to its mean over the text's positions",
}


def _switch_off(heads: list[int], d_k: int, mode: str):  # -> edit(merged [B, m, n_head · d_k]) in place
    def edit(merged) -> None:
        for b, h in enumerate(heads):
            cut = merged[b, :, h * d_k : (h + 1) * d_k]  # [m, d_k]: copy b's head h
            cut[...] = 0 if mode == "zero" else cut.mean(axis=0)

    return edit


def layer_deltas(model: Model, x, layer: int, heads: list[int], target: int, mode: str) -> np.ndarray:
    # x [n, d_model] entering `layer` -> [len(heads), 2]: Δ logit, Δ log-probability of `target` (not yet minus clean)
    """The logit and log-probability of `target` at the last position with each of `heads` of `layer` off."""
    f = model.family
    batch = np.repeat(x[None], len(heads), axis=0)  # [B, n, d_model]: one copy per head
    with padding(np.zeros(batch.shape[:2], dtype=bool)), editing(layer, _switch_off(heads, model.d_k, mode)):
        for l in range(layer, model.n_layer):
            batch, _ = f.attention(model, l, batch)
            batch = f.mlp(model, l, batch)
    last = next_logits(model, batch[:, -1])  # [B, vocab]
    return np.stack([last[:, target], np.log(probabilities(last)[:, target])], axis=-1)


def ablate(
    model: Model,
    ids,
    heads: list[tuple[int, int]],
    target: int | None = None,
    mode: str = "zero",
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    # [n] ids, (layer, head) pairs -> {"target": id, "clean_logit", "clean_logprob", "rows": [...]} (rows ranked)
    """Each head of `heads` switched off alone: Δ logit and Δ log-probability of `target` (default: the model's
    own next token after `ids`) at the last position, ranked by |Δ logit|, largest first. `progress(done,
    total)` is told after each layer's heads (`attn explore` says how far it is)."""
    if mode not in MODES:
        raise ConfigError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    copies = max((sum(1 for l, _ in heads if l == layer) for layer, _ in heads), default=0)
    # priced as `copies` layers of one pass: the copies of one layer run together, a layer at a time
    room = check_run(
        model.weights.least(), copies, model.n_head, model.d_model, len(ids), f"{model.name} with heads off"
    )
    model.weights.fit(room)
    run = forward(model, ids)
    assert run.final is not None  # a full pass
    clean = logits(model, run.final[-1])  # [vocab]
    token = int(np.argmax(clean)) if target is None else target
    clean_logprob = float(np.log(probabilities(clean)[token]))
    rows = []
    layers = sorted({l for l, _ in heads})
    for done, layer in enumerate(layers, 1):
        chosen = sorted(h for l, h in heads if l == layer)
        deltas = layer_deltas(model, run.hidden[layer], layer, chosen, token, mode)
        if not np.isfinite(deltas).all():
            raise ModelError(f"the logits of {model.name} with a head of layer {layer} off are not finite")
        for h, (logit, logprob) in zip(chosen, deltas):
            rows.append(
                {
                    "layer": layer,
                    "head": h,
                    "delta_logit": float(logit - clean[token]),
                    "delta_logprob": float(logprob - clean_logprob),
                }
            )
        if progress is not None:
            progress(done, len(layers))
    rows.sort(key=lambda r: (-abs(r["delta_logit"]), r["layer"], r["head"]))
    return {"target": token, "clean_logit": float(clean[token]), "clean_logprob": clean_logprob, "rows": rows}


ABLATE_SCHEMA = "attncli.ablate/1"


MAX_TARGET_CHARS = 256  # --target is one token: the longest of a real vocabulary is a few dozen characters


def check_target(token: str) -> None:
    """--target as one token can be, before any text is read: ConfigError when it is empty or longer than a token
    (a target that is not one token of the model is refused by `target_id`, exit 2 too)."""
    if not token:
        raise ConfigError("--target is empty: give one token, as the vocabulary writes it (attn tokens shows them)")
    if len(token) > MAX_TARGET_CHARS:
        raise ConfigError(
            f"--target is {len(token):,} characters long, and one token is at most {MAX_TARGET_CHARS}: give one "
            "token, as the vocabulary writes it (attn tokens shows them)"
        )


def target_id(model: Model, token: str) -> int:
    """--target: a token as the vocabulary writes it ("ĠParis"), else a text that is one token (" Paris"); else
    ConfigError (a token the model does not have, as a head it does not have: the command line's mistake)."""
    check_target(token)
    found = model.tokenizer.token_to_id(token)
    if found is not None and found < model.vocab_size:
        return int(found)
    t = encode(model, token, what="target")
    cut = [(i, s) for i, s, special in zip(t.ids, t.strings, t.special) if not special]
    if len(cut) != 1:
        shown = " ".join(s for _, s in cut)
        raise ConfigError(
            f"--target {token!r} is {len(cut)} tokens for {model.name} ({shown}): give one token, as the vocabulary "
            "writes it (attn tokens shows them)"
        )
    return cut[0][0]


def ablate_record(
    model: Model,
    ids,
    heads: list[tuple[int, int]] | None = None,
    target: str | None = None,
    mode: str = "zero",
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    # [n] ids -> the fields of `attn ablate -f json` that describe the ablation (mode ... rows)
    """Every head (or `heads`, (layer, head) pairs) switched off alone after `ids`, ranked: the mode, the position
    watched (the last), the target token (`target`, default the model's own next token), its clean logit and
    log-probability, and a row {layer, head, delta_logit, delta_logprob} per head; `progress` as `ablate`'s."""
    unembedding(model)  # an encoder, or no head: said before any pass
    chosen = (
        [(l, h) for l in range(model.n_layer) for h in range(model.n_head)]
        if heads is None
        else sorted({(check_layer(model, l), check_head(model, h)) for l, h in heads})
    )
    found = ablate(model, ids, chosen, None if target is None else target_id(model, target), mode, progress)
    return {
        "mode": mode,
        "means": MODES[mode],
        "position": len(ids) - 1,
        "target": {"id": found["target"], "token": model.tokenizer.id_to_token(found["target"]), "given": target},
        "clean_logit": found["clean_logit"],
        "clean_logprob": found["clean_logprob"],
        "rows": found["rows"],
    }


def ablate_document(
    model: Model,
    text: str,
    heads: list[tuple[int, int]] | None = None,
    target: str | None = None,
    mode: str = "zero",
    tokens: Tokens | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """`attn ablate -f json`: every head (or `heads`, (layer, head) pairs) switched off alone, ranked. `tokens`:
    those of a run of `text` already made, instead of the text cut again (of a generation's, the text's own,
    before the first written token: its next token is the first the model wrote); `progress` as `ablate`'s."""
    if target is not None:
        check_target(target)  # the command line's mistake before the text's
    tokens = _encode(model, text, None)[0] if tokens is None else tokens.prompt()
    unembedding(model)  # an encoder, or no head: said before the text is run
    found = ablate_record(model, tokens.ids, heads, target, mode, progress)
    return {
        "schema": ABLATE_SCHEMA,
        "text": text,
        "tokens": list(tokens.strings),
        "model": model.name,
        "summary": describe(model),
        **found,
    }
