"""Switch attention heads off and see the next token change (head ablation, as TransformerLens users do).

A head is switched off by setting its slice of the output projection's input (its A_h V_h, the columns
h·d_k .. (h+1)·d_k of concat_h(A_h V_h)) to zero, or to its mean over the text's positions ("mean"), then
running the rest of the model. Reported for each head: the change in the logit and in the log-probability of
one token at the last position (the model's own next token, or a target), ablated minus clean, and with a
contrast token the change in the logit difference target − contrast (Wang et al. 2022, "Interpretability in
the Wild", §3: the metric of the circuit literature).

`RANKINGS` is the registry of what ranks the heads. A logit alone also moves with every shift shared by all
tokens (a head that scales the residual stream moves every logit alike and no probability): Δ log-probability
(default) and Δ logit difference are free of such shifts, Δ logit is not.

One forward pass keeps the residual stream entering every layer; then one sweep runs every ablated copy through
the layers once (`sweep`): at layer l the copies of the heads of layers <= l advance through layer l together, the
heads of l joining as copies of the clean stream entering l, each copy with its own head switched off there
(`editing`), as a batch (attncli.models.network.attention's `padding`, nothing padded). A streamed model (one that
does not fit ATTN_MAX_MEMORY: models/network/model.py's `Weights.fit`) so reads (dequantizes) each layer once for
every head, not once per ablated layer after it (about L²/2 layer reads). The copies run a layer `at_once` at a time
while the layer's weights stay held; only when the copies' streams themselves do not fit beside the weights
(`sizes`: a long text, a small budget) are the heads cut into several sweeps, each reading the layers from its
first head's layer once. A copy's numbers are those of the copy run alone to float32 rounding (a batch's products
add over other rows, as models/interpret/patch.py's batches of copies).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attncli.errors import ConfigError
from attncli.models.files.folder import check_run
from attncli.models.files.hparams import ModelError
from attncli.models.network.attention import editing, padding
from attncli.models.network.forward import forward
from attncli.models.network.model import Model, check_head, check_layer
from attncli.models.network.unembed import logits, next_logits, probabilities, unembedding
from attncli.models.runs.run import _encode
from attncli.models.runs.source import describe
from attncli.models.runs.vocab import check_token, spellings, token_record, token_text, vocab_token
from attncli.pipeline.budget import machine_bytes, max_bytes_from
from attncli.pipeline.tokenize import Tokens

MODES = {
    "zero": "the head's output set to zero",
    "mean": "the head's output set to its mean over the text's positions",
}


@dataclass(frozen=True)
class Ranking:
    """What ranks the heads of an ablation: the row's column, its label, what it measures, whether it needs
    --contrast."""

    column: str
    label: str
    means: str
    contrast: bool = False


RANKINGS = {
    "logprob": Ranking("delta_logprob", "Δ log-prob", "the change in the target's log-probability"),
    "logit": Ranking("delta_logit", "Δ logit", "the change in the target's logit (shifts shared by every token too)"),
    "logit-diff": Ranking(
        "delta_logit_diff", "Δ logit diff", "the change in the logit difference target − contrast", contrast=True
    ),
}


def ranking_of(rank_by: str | None, contrast: bool) -> str:
    """The ranking asked for, checked: default `logit-diff` with a contrast, `logprob` without; ConfigError for
    an unknown one or `logit-diff` without a contrast."""
    name = rank_by or ("logit-diff" if contrast else "logprob")
    if name not in RANKINGS:
        raise ConfigError(f"--rank-by must be one of {', '.join(RANKINGS)}, not {name!r}")
    if RANKINGS[name].contrast and not contrast:
        raise ConfigError(f"--rank-by {name} compares the target with another token: add --contrast TOKEN")
    return name


def _switch_off(heads: list[tuple[int, int]], layer: int, d_k: int, mode: str):
    # -> edit(merged [B, m, n_head · d_k]) in place: copy b's head off when its (layer, head) is of `layer`
    def edit(merged) -> None:
        for b, (l, h) in enumerate(heads):
            if l == layer:
                cut = merged[b, :, h * d_k : (h + 1) * d_k]  # [m, d_k]: copy b's head h
                cut[...] = 0 if mode == "zero" else cut.mean(axis=0)

    return edit


def _prices(model: Model, n: int) -> tuple[int, int, int]:
    """The bytes of one copy: its stream held between layers ([n, d_model] float32), running a layer (check_run's
    price of a layer's arrays), running the head (its last row's logits, float32, and the two float64 arrays of
    their softmax: `probabilities`' copy and the softmax's own; measured on the 1B shape, 4 + 8 alone left the
    run 0.4 GiB above the budget)."""
    vocab = model.weights.shape(unembedding(model))[0]
    return 4 * n * model.d_model, (3 * model.n_head * n * n + 8 * n * model.d_model) * 4, vocab * (4 + 2 * 8)


def sizes(model: Model, n: int, total: int) -> tuple[int, int]:
    """(held, at_once): how many copies of an n-token text one sweep holds (its streams) and how many run through a
    layer (or the head) together, within ATTN_MAX_MEMORY and what the machine can give, beside the weights a pass
    holds at least and the clean pass's streams; `total` (every ablated head) each when no limit applies. All the
    copies in one sweep when their streams fit beside one copy running (then each layer is read once); else half
    the room for the running ones and the rest for the streams (then once per sweep)."""
    budget, machine = max_bytes_from(os.environ), machine_bytes()
    limits = [b for b in (budget, None if machine is None else machine.bytes) if b is not None]
    if not limits:
        return total, total
    stream, layer, head = _prices(model, n)
    copy = max(layer, head)
    room = min(limits) - model.weights.least() - (model.n_layer + 1) * stream  # beside the clean streams
    if total * stream + copy <= room:
        return total, int(min(total, (room - total * stream) // copy))
    at_once = int(max(1, min(total, room // 2 // copy)))
    return int(max(at_once, min(total, (room - at_once * copy) // stream))), at_once


def sweep(
    model: Model, hidden: list[np.ndarray], heads: list[tuple[int, int]], mode: str, at_once: int, tick: Callable
) -> np.ndarray:
    # hidden (L+1) × [n, d_model] clean, heads sorted (layer, head) -> [len(heads), d_model]: last position, last layer
    """Every copy of `heads` (one per head, switched off in its layer) through the layers from the first head's on,
    the layers read once: at layer l the copies of layers <= l run through it `at_once` at a time (the weights of l
    held meanwhile), the heads of l joining from the clean stream `hidden[l]`. `tick()` after each layer."""
    f, n = model.family, len(hidden[0])
    started = np.array([l for l, _ in heads])  # [B] each copy's layer, ascending
    streams = np.empty((len(heads), *hidden[0].shape), np.float32)  # [B, n, d_model]
    for l in range(heads[0][0], model.n_layer):
        streams[started == l] = hidden[l]
        active = int(np.searchsorted(started, l, side="right"))  # copies 0..active-1 have started
        for a in range(0, active, at_once):
            b = min(a + at_once, active)
            with padding(np.zeros((b - a, n), dtype=bool)), editing(l, _switch_off(heads[a:b], l, model.d_k, mode)):
                mid, _ = f.attention(model, l, streams[a:b])
                streams[a:b] = f.mlp(model, l, mid)
        tick()
    return streams[:, -1].copy()  # the streams freed before the head's rows are made


def _deltas(model: Model, last, target: int, contrast: int | None) -> np.ndarray:
    # last [B, d_model] -> [B, 3]: logit, log-probability of `target`, logit − contrast's (0 without a contrast)
    """The logit and log-probability of `target` from each copy's last stream, and its logit minus `contrast`'s; not
    yet minus the clean values."""
    out = next_logits(model, last)  # [B, vocab]
    other = out[:, target if contrast is None else contrast]  # [B]
    return np.stack([out[:, target], np.log(probabilities(out)[:, target]), out[:, target] - other], axis=-1)


def ablate(
    model: Model,
    ids,
    heads: list[tuple[int, int]],
    target: int | None = None,
    mode: str = "zero",
    progress: Callable[[int, int], None] | None = None,
    contrast: int | None = None,
    rank_by: str | None = None,
) -> dict:
    # [n] ids, (layer, head) pairs -> {"target": id, "top", "clean_logit", "clean_logprob", "rows": [...]} (ranked)
    """Each head of `heads` switched off alone: Δ logit and Δ log-probability of `target` (default: the model's
    own next token after `ids`) at the last position, and Δ logit difference target − `contrast` when one is
    given, ranked by |Δ| of `rank_by` (a `RANKINGS` name; default `ranking_of`'s), largest first. `progress(done,
    total)` is told after each layer a sweep goes through (`attn explore` says how far it is). "top" is the model's
    own next token, "clean_logit_diff" the clean difference (with a contrast)."""
    if mode not in MODES:
        raise ConfigError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    column = RANKINGS[ranking_of(rank_by, contrast is not None)].column
    order, n = sorted(heads), len(ids)  # by layer: the copies started by layer l are the first ones
    held, at_once = sizes(model, n, len(order))
    stream, a_layer, the_head = _prices(model, n)
    beside = (held + model.n_layer + 1) * stream + at_once * max(0, the_head - a_layer)
    # priced as `at_once` layers of one pass (check_run's), with the streams held and the head's rows beside them
    room = check_run(
        model.weights.least() + beside, at_once, model.n_head, model.d_model, n, f"{model.name} with heads off"
    )
    model.weights.fit(None if room is None else room - beside)
    run = forward(model, ids)
    assert run.final is not None  # a full pass
    clean = logits(model, run.final[-1])  # [vocab]
    top = int(np.argmax(clean))
    token = top if target is None else target
    clean_logprob = float(np.log(probabilities(clean)[token]))
    clean_diff = float(clean[token] - clean[token if contrast is None else contrast])
    parts = [order[i : i + held] for i in range(0, len(order), held)]
    total, done = sum(model.n_layer - part[0][0] for part in parts), 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    rows = []
    for part in parts:
        last = sweep(model, run.hidden, part, mode, at_once, tick)  # [len(part), d_model]
        for a in range(0, len(part), at_once):
            deltas = _deltas(model, last[a : a + at_once], token, contrast)  # [at_once, 3]
            for (layer, h), (logit, logprob, diff) in zip(part[a : a + at_once], deltas):
                if not np.isfinite([logit, logprob, diff]).all():
                    raise ModelError(f"the logits of {model.name} with a head of layer {layer} off are not finite")
                row = {
                    "layer": layer,
                    "head": h,
                    "delta_logit": float(logit - clean[token]),
                    "delta_logprob": float(logprob - clean_logprob),
                }
                if contrast is not None:
                    row["delta_logit_diff"] = float(diff - clean_diff)
                rows.append(row)
    rows.sort(key=lambda r: (-abs(r[column]), r["layer"], r["head"]))
    found = {"target": token, "top": top, "clean_logit": float(clean[token]), "clean_logprob": clean_logprob}
    if contrast is not None:
        found["clean_logit_diff"] = clean_diff
    return found | {"rows": rows}


ABLATE_SCHEMA = "attncli.ablate/1"


def another_spelling(model: Model, target: int, top: int, given: str) -> str | None:
    """One line when the target watched is not the model's own next token but a spelling of it is
    (`--target Paris` watches `Paris`, p 0.0005, where the model writes ` Paris`, p 0.77); else None."""
    if target == top or top not in spellings(model, target):
        return None
    return (
        f"--target {given!r} watches the token {token_text(model, target)!r} (id {target}), but the model's own "
        f"next token is {token_text(model, top)!r} (id {top}), another spelling of it: --target "
        f"{token_text(model, top)!r} watches that one"
    )


def ablate_record(
    model: Model,
    ids,
    heads: list[tuple[int, int]] | None = None,
    target: str | None = None,
    mode: str = "zero",
    progress: Callable[[int, int], None] | None = None,
    contrast: str | None = None,
    rank_by: str | None = None,
) -> dict:
    # [n] ids -> the fields of `attn ablate -f json` that describe the ablation (mode ... rows)
    """Every head (or `heads`, (layer, head) pairs) switched off alone after `ids`, ranked: the mode, the position
    watched (the last), the target token (`target`, default the model's own next token; a token's text or its
    vocabulary form, `vocab_token`), the `contrast` token, the ranking, the clean logit, log-probability (and
    logit difference), a row {layer, head, delta_logit, delta_logprob(, delta_logit_diff)} per head, and
    "notes": the lines a user must be told (what an ambiguous token was taken as; a target that is another
    spelling of the model's next token). `progress` as `ablate`'s."""
    unembedding(model)  # an encoder, or no head: said before any pass
    ranked = ranking_of(rank_by, contrast is not None)
    chosen = (
        [(l, h) for l in range(model.n_layer) for h in range(model.n_head)]
        if heads is None
        else sorted({(check_layer(model, l), check_head(model, h)) for l, h in heads})
    )
    named = {
        option: None if given is None else vocab_token(model, given, option)
        for option, given in (("--target", target), ("--contrast", contrast))
    }
    watched, against = named["--target"], named["--contrast"]
    found = ablate(
        model,
        ids,
        chosen,
        None if watched is None else watched.id,
        mode,
        progress,
        None if against is None else against.id,
        ranked,
    )
    spelt = None if target is None else another_spelling(model, found["target"], found["top"], target)
    notes = [t.note for t in named.values() if t is not None and t.note is not None and spelt is None] + (
        [] if spelt is None else [spelt]
    )
    entry = RANKINGS[ranked]
    out = {
        "mode": mode,
        "means": MODES[mode],
        "position": len(ids) - 1,
        "target": token_record(model, found["target"], target),
        "contrast": None if against is None else token_record(model, against.id, contrast),
        "ranked_by": {"name": ranked, "column": entry.column, "label": entry.label, "means": entry.means},
        "clean_logit": found["clean_logit"],
        "clean_logprob": found["clean_logprob"],
    }
    if against is not None:
        out["clean_logit_diff"] = found["clean_logit_diff"]
    return out | {"notes": notes, "rows": found["rows"]}


def ablate_document(
    model: Model,
    text: str,
    heads: list[tuple[int, int]] | None = None,
    target: str | None = None,
    mode: str = "zero",
    tokens: Tokens | None = None,
    progress: Callable[[int, int], None] | None = None,
    contrast: str | None = None,
    rank_by: str | None = None,
) -> dict:
    """`attn ablate -f json`: every head (or `heads`, (layer, head) pairs) switched off alone, ranked. `tokens`:
    those of a run of `text` already made, instead of the text cut again (of a generation's, the text's own,
    before the first written token: its next token is the first the model wrote); `progress`, `contrast` and
    `rank_by` as `ablate_record`'s."""
    if target is not None:
        check_token(target)  # the command line's mistake before the text's
    tokens = _encode(model, text, None)[0] if tokens is None else tokens.prompt()
    unembedding(model)  # an encoder, or no head: said before the text is run
    found = ablate_record(model, tokens.ids, heads, target, mode, progress, contrast, rank_by)
    return {
        "schema": ABLATE_SCHEMA,
        "text": text,
        "tokens": list(tokens.strings),
        "texts": list(tokens.text_of()),
        "model": model.name,
        "summary": describe(model),
        **found,
    }
