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

One forward pass keeps the residual stream entering every layer; the heads of a layer are then run together,
as one batch of copies of that stream (attncli.models.network.attention's `padding`, nothing padded), from that layer
on, each copy with its own head switched off (`editing`): SmolLM2's 270 heads cost 30 batched partial passes,
not 270 full ones.
"""

from __future__ import annotations

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
from attncli.models.runs.vocab import check_token, spellings, token_text, vocab_token
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


def _switch_off(heads: list[int], d_k: int, mode: str):  # -> edit(merged [B, m, n_head · d_k]) in place
    def edit(merged) -> None:
        for b, h in enumerate(heads):
            cut = merged[b, :, h * d_k : (h + 1) * d_k]  # [m, d_k]: copy b's head h
            cut[...] = 0 if mode == "zero" else cut.mean(axis=0)

    return edit


def layer_deltas(
    model: Model, x, layer: int, heads: list[int], target: int, mode: str, contrast: int | None = None
) -> np.ndarray:
    # x [n, d_model] entering `layer` -> [len(heads), 3]: logit, log-probability of `target`, logit − contrast's
    """The logit and log-probability of `target` at the last position with each of `heads` of `layer` off, and
    its logit minus `contrast`'s (0 without a contrast); not yet minus the clean values."""
    f = model.family
    batch = np.repeat(x[None], len(heads), axis=0)  # [B, n, d_model]: one copy per head
    with padding(np.zeros(batch.shape[:2], dtype=bool)), editing(layer, _switch_off(heads, model.d_k, mode)):
        for l in range(layer, model.n_layer):
            batch, _ = f.attention(model, l, batch)
            batch = f.mlp(model, l, batch)
    last = next_logits(model, batch[:, -1])  # [B, vocab]
    other = last[:, target if contrast is None else contrast]  # [B]
    return np.stack([last[:, target], np.log(probabilities(last)[:, target]), last[:, target] - other], axis=-1)


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
    total)` is told after each layer's heads (`attn explore` says how far it is). "top" is the model's own next
    token, "clean_logit_diff" the clean difference (with a contrast)."""
    if mode not in MODES:
        raise ConfigError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    column = RANKINGS[ranking_of(rank_by, contrast is not None)].column
    copies = max((sum(1 for l, _ in heads if l == layer) for layer, _ in heads), default=0)
    # priced as `copies` layers of one pass: the copies of one layer run together, a layer at a time
    room = check_run(
        model.weights.least(), copies, model.n_head, model.d_model, len(ids), f"{model.name} with heads off"
    )
    model.weights.fit(room)
    run = forward(model, ids)
    assert run.final is not None  # a full pass
    clean = logits(model, run.final[-1])  # [vocab]
    top = int(np.argmax(clean))
    token = top if target is None else target
    clean_logprob = float(np.log(probabilities(clean)[token]))
    clean_diff = float(clean[token] - clean[token if contrast is None else contrast])
    rows = []
    layers = sorted({l for l, _ in heads})
    for done, layer in enumerate(layers, 1):
        chosen = sorted(h for l, h in heads if l == layer)
        deltas = layer_deltas(model, run.hidden[layer], layer, chosen, token, mode, contrast)
        if not np.isfinite(deltas).all():
            raise ModelError(f"the logits of {model.name} with a head of layer {layer} off are not finite")
        for h, (logit, logprob, diff) in zip(chosen, deltas):
            row = {
                "layer": layer,
                "head": h,
                "delta_logit": float(logit - clean[token]),
                "delta_logprob": float(logprob - clean_logprob),
            }
            if contrast is not None:
                row["delta_logit_diff"] = float(diff - clean_diff)
            rows.append(row)
        if progress is not None:
            progress(done, len(layers))
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
        "target": _token_field(model, found["target"], target),
        "contrast": None if against is None else _token_field(model, against.id, contrast),
        "ranked_by": {"name": ranked, "column": entry.column, "label": entry.label, "means": entry.means},
        "clean_logit": found["clean_logit"],
        "clean_logprob": found["clean_logprob"],
    }
    if against is not None:
        out["clean_logit_diff"] = found["clean_logit_diff"]
    return out | {"notes": notes, "rows": found["rows"]}


def _token_field(model: Model, token: int, given: str | None) -> dict:
    """A token of the ablation in JSON: its id, its vocabulary form, its text, and the words that named it."""
    return {"id": token, "token": model.tokenizer.id_to_token(token), "text": token_text(model, token), "given": given}


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
