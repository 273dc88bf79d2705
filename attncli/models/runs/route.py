"""Where a `--model` run goes: a model's kind (encoder, decoder, encoder–decoder) and its parts.

    model = load_model("tests/models/golden/bart")
    kind_of(model)                                               # 'encoder-decoder'
    r = result(model, "le chat", context="the cat", part="decoder")  # seq2seq.py's part_layer
    result(load_model("tests/models/golden/gpt2"), "time flies")     # run.py's model_result

An encoder (BERT) and a decoder (GPT-2) have one part, their own self-attention, run by run.py (a second text
`context` is an encoder's sentence pair); an encoder–decoder (BART, mBART, T5, Marian) has the three parts of
attncli.core.parts.PARTS, run by seq2seq.py (`context` is the source). `result` (and `layer`, with the layer's
steps), `rollout` and `heads` check the part, then hand the run to its kind's module; `own_part` is the part a
text's own self-attention is (`attn compare --model`'s row); the page reads every layer in one pass through
`every_layer` (an encoder or a decoder: its one part) or `every_part` (an encoder–decoder): every model run of attn
goes through them.
"""

from __future__ import annotations

import numpy as np

from attncli.core.parts import DEFAULT_PART, PARTS
from attncli.errors import ConfigError
from attncli.models.network.attention import LayerSteps
from attncli.models.network.forward import Forward
from attncli.models.network.model import Model
from attncli.models.runs import run, seq2seq
from attncli.models.runs.encdec import is_seq2seq
from attncli.models.runs.generate import Generation
from attncli.models.runs.seq2seq import PartWeights, PassMaps
from attncli.pipeline.result import AttentionResult
from attncli.pipeline.tokenize import Tokens

KINDS = {  # a model's kind -> how its messages name it
    "encoder": "an encoder-only",
    "decoder": "a decoder-only",
    "encoder-decoder": "an encoder–decoder",
}


def kind_of(model: Model) -> str:
    """One of KINDS: an encoder–decoder has its family's decoder blocks, a decoder masks later keys (causal)."""
    return "encoder-decoder" if is_seq2seq(model) else "decoder" if model.causal else "encoder"


def model_parts(model: Model) -> tuple[str, ...]:
    """The parts a model has: an encoder–decoder all of PARTS, an encoder (BERT) or a decoder (GPT-2) its one."""
    kind = kind_of(model)
    return tuple(PARTS) if kind == "encoder-decoder" else (kind,)


def check_part(model: Model, part: str | None, context: str | None) -> str:
    """The part to show (an encoder–decoder's default: cross), or ConfigError naming the parts the model has."""
    if part is not None and part not in PARTS:
        raise ConfigError(f"unknown part {part!r}; the parts are {', '.join(PARTS)}")
    parts, kind = model_parts(model), kind_of(model)
    chosen = part or (DEFAULT_PART if kind == "encoder-decoder" else parts[0])
    if chosen not in parts:
        raise ConfigError(
            f"--part {chosen}: {model.name} is {KINDS[kind]} model ({model.model_type}); its only part is "
            f"{parts[0]}, its own self-attention (drop --part); cross-attention needs an encoder–decoder "
            "(BART, mBART, T5, Marian)"
        )
    if kind == "encoder-decoder" and PARTS[chosen].needs_source and context is None:
        default = " (the default)" if part is None else ""
        raise ConfigError(
            f"--part {chosen}{default} runs the text through {model.name}'s decoder, which reads a source: "
            "give it with --context SOURCE, or see the text's own self-attention in the encoder with --part encoder"
        )
    return chosen


def own_part(model: Model) -> str:
    """The part that is a text's own self-attention, read without a source: an encoder–decoder's encoder, else
    the model's one part."""
    return "encoder" if kind_of(model) == "encoder-decoder" else model_parts(model)[0]


def part_layers(model: Model, part: str) -> int:
    """How many layers a part has: the encoder's, or the decoder's (its self- and cross-attention)."""
    if not is_seq2seq(model) or not PARTS[part].needs_source:
        return model.n_layer
    return int(model.hp["n_dec_layer"])


def _written(model: Model, text: str, context: str | None, part: str, generate: Generation | None):
    # -> the target an encoder–decoder writes (seq2seq.written_target's Tokens), or None: teacher forcing
    """With `generate`, the target the model writes from the source `context` after `text` (its beginning, or "");
    None for the encoder part: the source's own attention, which the writing does not change."""
    if not PARTS[part].needs_source:
        return None
    assert context is not None  # check_part asks for the source
    return written_target(model, text, context, generate)


def written_target(model: Model, text: str, context: str | None, generate: Generation | None):
    # -> the target an encoder–decoder writes (seq2seq.written_target's Tokens), or None
    """The target an encoder–decoder writes with `generate` from the source `context` after `text` (its beginning,
    or ""); None without `generate` or a source (teacher forcing: the target is `text`)."""
    if generate is None or context is None:
        return None
    return seq2seq.written_target(model, text, context, generate)


def result(
    model: Model,
    text: str,
    layer: int | None = None,
    head: int | None = None,
    context: str | None = None,
    part: str | None = None,
    generate: Generation | None = None,
) -> AttentionResult:
    """One layer (default the last) of one part, every head or the one `head`: `attn show`, `steps`, `view`,
    `compare`; `generate`: of a decoder's text and the tokens it writes after it; of an encoder–decoder's target,
    `text` its beginning (or ""), and the tokens it writes after it from the source `context`."""
    return layer_of(model, text, layer, head, context, part, generate)[0]


def layer_of(
    model: Model,
    text: str,
    layer: int | None = None,
    head: int | None = None,
    context: str | None = None,
    part: str | None = None,
    generate: Generation | None = None,
    target: Tokens | None = None,
) -> tuple[AttentionResult, LayerSteps]:
    """`result`, and the layer's every stage as the model ran it: what the page's steps view redoes. `target`: an
    encoder–decoder's target already written (a result's tokens), instead of writing it again (`generate`)."""
    chosen = check_part(model, part, context)
    if is_seq2seq(model):
        if target is None:  # the encoder part needs none: its source is the same
            target = _written(model, text, context, chosen, generate)
        return seq2seq.part_layer(model, text, layer, head, context, chosen, target)
    return run.model_layer(model, text, layer, head, context, generate)


def every_layer(model: Model, shown: AttentionResult) -> tuple[Tokens, np.ndarray, np.ndarray | None, Forward]:
    """An encoder's or a decoder's every layer on the text of `shown` (a `result` of it), from one pass: the
    tokens, the weights [L, h, n, n], each layer's mask [L, h, n, n] or None, and the pass (its `steps`: those of
    the layer shown)."""
    if is_seq2seq(model):
        raise ValueError(f"{model.name} is an encoder–decoder: every_part reads its every layer")
    return run.every_layer(model, shown)


def every_part(model: Model, text: str, context: str | None, target: Tokens | None = None) -> dict[str, PartWeights]:
    """An encoder–decoder's every layer of every part, from one teacher-forced pass of `text` over `context` (no
    context: `text` is the source, and only the encoder is there); `target`: the target it wrote (--generate)."""
    if not is_seq2seq(model):
        raise ValueError(f"{model.name} has one part: every_layer reads its every layer")
    return seq2seq.every_part(model, text, context, target)


def rollout(
    model: Model, text: str, layer: int | None = None, context: str | None = None, part: str | None = None
) -> run.Rollout:
    """Attention rollout through one part's layers 0..layer (default all): `attn show --rollout`."""
    chosen = check_part(model, part, context)
    if is_seq2seq(model):
        return seq2seq.part_rollout(model, text, layer, context, chosen)
    return run.model_rollout(model, text, layer, context)


def heads(
    model: Model,
    text: str,
    context: str | None = None,
    part: str | None = None,
    generate: Generation | None = None,
    maps: PassMaps | None = None,
) -> dict:
    """Every head of every layer of one part, its statistics and label: `attn heads -f json` (`generate`: as
    `result`'s; `maps`: what the statistics are computed on from the part's pass instead of its weights, as
    `attn heads --contrib` asks)."""
    chosen = check_part(model, part, context)
    if is_seq2seq(model):
        return seq2seq.part_heads_document(
            model, text, context, chosen, _written(model, text, context, chosen, generate), maps
        )
    return run.heads_document(model, text, context, generate, maps)
