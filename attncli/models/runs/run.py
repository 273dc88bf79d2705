"""A real model's attention (`--model DIR`) as the objects the rest of attn already reads.

    model = load_model("path/to/all-MiniLM-L6-v2")
    r = model_result(model, "time flies like an arrow", layer=5, head=3)
    r.weights.shape            # (1, 7, 7): head 3 of layer 5, [CLS] ... [SEP]

`model_result` gives an `AttentionResult`, so `attn show` and `attn steps`, every table and
every format work unchanged (its source, `ModelLayer`, says what it is: source.py); `heads_document` is
`attn heads` (one statistic per head) and `model_rollout` is `attn show --rollout`. NumPy and the core only: no
rich, typer or click.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np

from attncli.core.attention import Projections
from attncli.core.stats import sinks_section
from attncli.errors import ConfigError
from attncli.models import (
    HEAD_STATS,
    LABELS,
    Forward,
    Model,
    ModelError,
    ModelTokens,
    check_head,
    check_layer,
    encode,
    forward,
    head_stats,
    label_heads,
    rollout,
)
from attncli.models.network.attention import LayerSteps, attention_mask
from attncli.models.runs.generate import Generation, continued
from attncli.models.runs.source import ModelLayer, chat_fields, describe, kv_head, sliding_window
from attncli.models.runs.tokens import encode_chat
from attncli.pipeline.compare import compare_document
from attncli.pipeline.config import RunConfig
from attncli.pipeline.result import AttentionResult
from attncli.pipeline.run import _check_text
from attncli.pipeline.tokenize import Tokens
from attncli.pipeline.tokentext import texts

ROLLOUT_SCHEMA = "attncli.rollout/1"
HEADS_SCHEMA = "attncli.heads/1"
ROLLOUT_METHOD = (
    "attention rollout (Abnar & Zuidema 2020): per layer the mean of the heads plus the identity "
    "for the residual, rows renormalised, multiplied from layer 0 up"
)


def _encode(
    model: Model, text: str, pair: str | None, generate: Generation | None = None, upto: int | None = None
) -> tuple[Tokens, ModelTokens]:
    """The text (and a second text `pair`) as the model's own tokenizer cuts it, as `Tokens` and as encoded.

    Its special tokens are marked, and a pair's second segment start is kept; only an encoder takes a pair.
    `generate`: a decoder's continuation of `generate.new` tokens follows (attncli.models.runs.generate). `upto`: the
    run stops after that layer, and is priced by the layers it reads (`encode`).
    """
    _check_text(text, "text")
    if pair is not None:
        _check_text(pair, "context")
        if model.causal:
            raise ConfigError(
                f"--context makes a sentence pair, which only an encoder (BERT-like) model takes; "
                f"{model.name} is a decoder ({model.model_type})"
            )
    if model.chat is None:
        t, read = encode(model, text, pair, upto=upto), text
    elif pair is not None:
        raise ConfigError("--chat reads TEXT as the user's message of a chat: drop --context")
    else:
        t, read = encode_chat(model, text, model.chat)  # `read`: the rendered chat the offsets point into
    unk = getattr(model.tokenizer.model, "unk_token", None)
    size = model.tokenizer.get_vocab_size(with_added_tokens=True)
    prompt = len(t)
    if generate is not None:
        t = continued(model, t, generate, len(read))
    tokens = Tokens(
        t.strings,
        t.ids,
        t.offsets,
        model.name,
        size,
        unk_token=unk,
        special=t.special,
        second=t.second,
        segments=t.segments,
        chat_text="" if model.chat is None else read,
        generated=None if generate is None else prompt,
        generated_text=model.tokenizer.decode(list(t.ids[prompt:]), skip_special_tokens=False)
        if generate is not None
        else "",
        generated_by="" if generate is None else generate.describe(),
        texts=texts(t.ids, t.special, lambda ids: model.tokenizer.decode(ids, skip_special_tokens=False)),
    )
    return tokens, t


def model_tokens(model: Model, text: str, pair: str | None = None) -> Tokens:
    """The text (and a pair's second text) as the model's own tokenizer cuts it ([CLS] ... [SEP] for BERT)."""
    return _encode(model, text, pair)[0]


def run_pass(
    model: Model, text: str, pair: str | None = None, generate: Generation | None = None, **kwargs
) -> tuple[Tokens, Forward]:
    """Tokenize and run the model (`forward`'s keywords): a pair with its token types; with `generate`, the text
    and its continuation, in one pass over the whole sequence (causal: each row is what that step saw)."""
    tokens, t = _encode(model, text, pair, generate, kwargs.get("upto_layer"))
    return tokens, forward(model, t.ids, types=None if pair is None else t.types, **kwargs)


def _check_finite(model: Model, what: str, *arrays: np.ndarray) -> None:
    """ModelError when any of `arrays` holds NaN or an infinity: finite weights can still overflow float32, and
    nothing that is not a number is ever written (a table, a rollout, JSON or CSV)."""
    for a in arrays:
        if not np.isfinite(a).all():
            raise ModelError(
                f"{what} of {model.name} is not finite (NaN or infinity: its weights overflow float32 on this "
                "text); nothing was written"
            )


def _score(model: Model, layer: int) -> tuple[str, float]:
    """The model's score as a variant and a temperature: BERT qᵀk/√d_k; GPT-2 may drop the √d_k
    (scale_attn_weights false) or also divide by layer + 1 (scale_attn_by_inverse_layer_idx);
    Gemma 2 scales by 1/√query_pre_attn_scalar (`hp["scale"]`) instead of 1/√d_k."""
    variant = "scaled" if model.hp.get("scale_attn_weights", True) else "dot"
    temperature = float(layer + 1) if model.hp.get("scale_by_layer") else 1.0
    if "scale" in model.hp:
        temperature *= model.d_k**-0.5 / model.hp["scale"]
    return variant, temperature


def layer_mask(model: Model, layer: int, n: int) -> np.ndarray | None:  # -> [n, n] bool, True = masked; or None
    """The cells `layer` masks on n tokens: none, causal, a sliding window (ModernBERT's local layers), or both."""
    return attention_mask(n, model.causal, sliding_window(model, layer))


def model_result(
    model: Model,
    text: str,
    layer: int | None = None,
    head: int | None = None,
    pair: str | None = None,
    generate: Generation | None = None,
) -> AttentionResult:
    """One layer's self-attention (default the last layer), every head or the one `head`, as an AttentionResult.

    `pair`: a second text, run with `text` as a sentence pair (the tokenizer's pair template, token types 0/1).

    x is that attention's input; q, k, v, scores, weights and head_outputs are the heads shown;
    output is the attention output of the layer, all heads merged (concat(O_h) W_O + b_O).
    `generate`: the text and the tokens a decoder writes after it, one sequence.
    """
    return model_layer(model, text, layer, head, pair, generate)[0]


def model_layer(
    model: Model,
    text: str,
    layer: int | None = None,
    head: int | None = None,
    pair: str | None = None,
    generate: Generation | None = None,
) -> tuple[AttentionResult, LayerSteps]:
    """`model_result`, and the layer's every stage as the model ran it (its scale and soft-cap, each key/value
    head once): what the page's steps view redoes."""
    layer = check_layer(model, -1 if layer is None else layer)
    chosen = None if head is None else check_head(model, head)
    tokens, run = run_pass(model, text, pair, generate, upto_layer=layer, steps_layer=layer)
    assert run.steps is not None  # steps_layer asks for them
    return layer_result(model, text, tokens, run.steps, chosen, pair), run.steps


def layer_result(
    model: Model, text: str, tokens: Tokens, s: LayerSteps, chosen: int | None, pair: str | None
) -> AttentionResult:
    """The result of one layer's stages `s` as a pass of `tokens` ran them: every head, or the one `chosen`
    (a head already checked); ModelError when a stage holds NaN or an infinity."""
    layer = s.layer
    _check_finite(model, f"layer {layer}", s.x, s.q, s.k, s.v, s.scores, s.weights, s.out, s.output)
    pick = slice(None) if chosen is None else slice(chosen, chosen + 1)
    variant, temperature = _score(model, layer)
    config = RunConfig(
        tokenizer=model.name,
        variant=variant,
        heads=model.n_head if chosen is None else 1,
        dim=model.d_model,
        d_k=model.d_k,
        d_v=model.d_k,
        d_a=model.d_k,
        mask=(("causal",) if model.causal else ())
        + ((f"window:{window - 1}",) if (window := sliding_window(model, layer)) is not None else ()),
        temperature=temperature,
    )
    masked = None if s.masked is None else np.ascontiguousarray(s.masked[pick])
    return AttentionResult(
        text=text,
        context=None,
        tokens=tokens,
        context_tokens=None,
        config=config,
        x=s.x,
        x_context=None,
        q=s.q[pick],
        k=s.k[pick],
        v=s.v[pick],
        scores=s.scores[pick],
        masked=masked,
        weights=s.weights[pick],
        head_outputs=s.out[pick],
        output=s.output,
        source=ModelLayer(model, layer, chosen, pair),
        params={"b_Q": s.b_q, "b_K": s.b_k, "b_V": s.b_v, "b_O": s.b_o},
        projections=Projections(s.w_q, s.w_k, s.w_v, s.w_o),
    )


def every_layer(
    model: Model, result: AttentionResult, on_layer: Callable[[LayerSteps], None] | None = None
) -> tuple[Tokens, np.ndarray, np.ndarray | None, Forward]:
    """Every layer's weights [L, h, n, n] of a result's text from one pass, each layer's mask [L, h, n, n] (causal,
    a sliding window on some layers, both; None: no layer masks) and the pass itself, with the steps of the
    result's layer (its `steps`) and the residual streams (the page's lens): the text and its sentence pair, or
    (--generate) the text and what the model wrote, the result's own ids. `on_layer`: forward's, given every
    layer's stages as the pass makes them."""
    source = cast(ModelLayer, result.source)
    if result.tokens.generated is None:
        tokens, run = run_pass(model, result.text or "", source.pair, steps_layer=source.layer, on_layer=on_layer)
    else:
        ids = np.asarray(result.tokens.ids)
        tokens, run = result.tokens, forward(model, ids, steps_layer=source.layer, on_layer=on_layer)
    weights = np.stack(run.weights)  # [L, h, n, n]
    n_layer, n_head, n = weights.shape[:3]
    cells = [layer_mask(model, l, n) for l in range(n_layer)]  # causal, a sliding window (some layers), both, none
    none = np.zeros((n, n), dtype=bool)
    masked = None
    if any(c is not None for c in cells):
        masked = np.stack([np.broadcast_to(none if c is None else c, (n_head, n, n)) for c in cells])
    assert run.steps is not None  # steps_layer asks for them
    return tokens, weights, masked, run


# ---- attn heads -----------------------------------------------------------------------------------


def heads_document(
    model: Model,
    text: str,
    pair: str | None = None,
    generate: Generation | None = None,
    maps: Callable[[Forward], np.ndarray] | None = None,
) -> dict:
    """`attn heads -f json`: every statistic of HEAD_STATS and a label for every head of every layer (of the
    sentence pair `text`, `pair` with its token types, when a second text is given; of the text and the
    `generate` tokens a decoder writes after it). `maps`: what the statistics and the sinks are computed on
    instead of the weights, [L, h, n, n] of the pass with rows that sum to 1 (`attn heads --contrib`'s shares)."""
    tokens, run = run_pass(model, text, pair, generate)
    weights = np.stack(run.weights) if maps is None else maps(run)  # [L, h, n, n]
    _check_finite(model, "the attention", weights)
    generation = tokens.generation()
    return (
        heads_rows(model, text, tokens, weights, model.causal)
        | ({} if pair is None else {"pair": pair})
        | ({} if generation is None else {"generated": generation})
        | {"sinks": sinks_section(weights, np.stack(run.hidden), list(tokens.strings))}
        | chat_fields(tokens)
    )


def heads_rows(model: Model, text: str, tokens: Tokens, weights, causal: bool) -> dict:  # weights [L, h, n, n]
    """The `attn heads` document of these self-attention weights (a model's, or one part of an encoder–decoder's).
    The statistics are computed a layer at a time: head_stats works in float64, and every layer's at once would be
    twice the float32 weights again (an 8B's 32 layers × 32 heads)."""
    layers = [head_stats(w[None], causal=causal) for w in weights]  # each {stat: [1, h]}
    stats = {k: np.concatenate([s[k] for s in layers]) for k in layers[0]}
    return heads_table(model, text, tokens, stats, label_heads(stats), HEAD_STATS, LABELS) | {"causal": causal}


def heads_table(
    model: Model, text: str, tokens: Tokens, stats: dict, labels: list, meanings: dict, kinds: tuple
) -> dict:  # stats {stat: [L, h]}, labels [L][h]
    """The `attn heads` document: a row per head with every statistic of `meanings` and its label (one of
    `kinds` or "")."""
    shared = {"kv_head": kv_head} if model.n_kv_head != model.n_head else {}  # grouped-query: name the shared head
    n_layer, n_head = len(labels), len(labels[0])  # an encoder–decoder's part: its own heads
    rows = [
        {
            "layer": l,
            "head": h,
            **{key: f(model, h) for key, f in shared.items()},
            **{k: float(stats[k][l, h]) for k in meanings},
            "label": labels[l][h],
        }
        for l in range(n_layer)
        for h in range(n_head)
    ]
    return {
        "schema": HEADS_SCHEMA,
        "text": text,
        "tokens": list(tokens.strings),
        "model": model.name,
        "summary": describe(model),
        "model_type": model.model_type,
        "n_layer": n_layer,
        "n_head": n_head,
        **({"n_kv_head": model.n_kv_head} if shared else {}),
        "stats": dict(meanings),
        "labels": list(kinds),
        "rows": rows,
    }


# ---- attn show --rollout --------------------------------------------------------------------------


@dataclass(frozen=True)
class Rollout:
    """The rolled-out token-to-token matrix through layers 0..layer, and the weights it came from."""

    text: str
    tokens: Tokens
    model: Model
    layer: int
    matrix: np.ndarray  # [n, n] float64, rows sum to 1 (cross: [m target, n source], rows sum to the source's share)
    weights: np.ndarray  # [layer + 1, n_head, n, n] the model's attention, layer by layer (cross: [.., m, n])
    pair: str | None = None  # --context: the second text of a sentence pair
    context: str | None = None  # an encoder–decoder's source, when the columns are its tokens
    context_tokens: Tokens | None = None  # the columns' tokens when they are not `tokens`
    method: str = ROLLOUT_METHOD

    @property
    def key_tokens(self) -> Tokens:
        return self.tokens if self.context_tokens is None else self.context_tokens


def model_rollout(model: Model, text: str, layer: int | None = None, pair: str | None = None) -> Rollout:
    """Attention rollout through layers 0..layer (default all), from one forward pass (of a pair with `pair`)."""
    layer = check_layer(model, -1 if layer is None else layer)
    tokens, run = run_pass(model, text, pair, upto_layer=layer)
    weights = run.weights
    matrix = rollout(weights, upto_layer=layer)
    _check_finite(model, "the rollout", matrix, *weights)
    return Rollout(text, tokens, model, layer, matrix, np.stack(weights), pair)


# ---- attn compare --model -------------------------------------------------------------------------


def compare_with_model(text: str, results: list[AttentionResult], extra: AttentionResult) -> dict:
    """`attn compare` with --model: the model's run is one more row (its own sizes, trained float32 weights)."""
    doc = compare_document(text, [*results, extra])
    source = cast(ModelLayer, extra.source)  # extra is route.result's (seq2seq's PartLayer is a ModelLayer)
    row, m = doc["rows"][-1], source.model
    p = extra.projections
    assert p is not None  # a model's trained W_Q, W_K, W_V, W_O
    row["weight_bytes"] = int(sum(a.nbytes for a in (p.w_q, p.w_k, p.w_v, p.w_o, *extra.params.values())))
    row["embedding_bytes"] = m.vocab_size * m.d_model * 4  # float32, as the forward pass holds it
    doc["model"] = {"name": m.name, "model_type": m.model_type, "layer": source.layer, "head": source.head}
    return doc
