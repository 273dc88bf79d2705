"""Where a `--model` run goes: a model's kind (encoder, decoder, encoder–decoder) and its parts.

    model = load_model("tests/models/golden/bart")
    kind_of(model)                                               # 'encoder-decoder'
    r = result(model, "le chat", context="the cat", part="decoder")  # seq2seq.py's part_layer
    result(load_model("tests/models/golden/gpt2"), "time flies")     # run.py's model_result

An encoder (BERT) and a decoder (GPT-2) have one part, their own self-attention, run by run.py (a second text
`context` is an encoder's sentence pair); an encoder–decoder (BART, mBART, T5, Marian) has the three parts of
attncli.core.parts.PARTS, run by seq2seq.py (`context` is the source). Each kind is an entry of KINDS (`Kind`):
its parts, its default and own part, whether its decoder reads a source, and the functions that run it. `result`
(and `layer_of`, with the layer's steps), `rollout` and `heads` check the part, then hand the run to its kind's
entry; `own_part` is the part a text's own self-attention is (`attn compare --model`'s row); `page_attention` is a
page's every layer (an encoder or a decoder) or every part (an encoder–decoder) from one pass (page.py). Every
model run of attn goes through them, and code elsewhere asks `kind(model)` rather than testing the model's family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attncli.core.parts import DEFAULT_PART, PARTS
from attncli.errors import ConfigError
from attncli.models.network.attention import LayerSteps
from attncli.models.network.model import Model
from attncli.models.runs import page, run, seq2seq, tokens
from attncli.models.runs.encdec import is_seq2seq
from attncli.models.runs.generate import Generation
from attncli.models.runs.seq2seq import PassMaps
from attncli.pipeline.result import AttentionResult
from attncli.pipeline.tokenize import Tokens


def _self_layer(model, text, layer, head, context, part, generate, target):  # -> (AttentionResult, LayerSteps)
    return run.model_layer(model, text, layer, head, context, generate)


def _part_layer(model, text, layer, head, context, part, generate, target):  # -> (AttentionResult, LayerSteps)
    if target is None:  # the encoder part needs none: its source is the same
        target = _written(model, text, context, part, generate)
    return seq2seq.part_layer(model, text, layer, head, context, part, target)


def _self_rollout(model, text, layer, context, part) -> run.Rollout:
    return run.model_rollout(model, text, layer, context)


def _self_heads(model, text, context, part, generate, maps) -> dict:
    return run.heads_document(model, text, context, generate, maps)


def _part_heads(model, text, context, part, generate, maps) -> dict:
    written = _written(model, text, context, part, generate)
    return seq2seq.part_heads_document(model, text, context, part, written, maps)


def _self_page(model, result, pair, generate, maps) -> page.Layers:
    return page.layers(model, result, maps)


def _part_page(model, result, pair, generate, maps) -> page.Parts:
    return page.parts(model, result, pair, generate, maps)


@dataclass(frozen=True)
class Kind:
    """One kind of model and how its runs go: its parts (PARTS' names), the part shown without --part and the part
    that is a text's own self-attention, whether its decoder reads a source (`context`: an encoder–decoder's
    source; else an encoder's sentence pair), and the functions that run one layer, a rollout, the heads and the
    page's attention (`page.py`) of it."""

    says: str  # how messages name it
    parts: tuple[str, ...]
    default: str  # the part shown without --part
    own: str  # the part that is a text's own self-attention, read without a source
    reads_source: bool  # a decoder that reads a source: TEXT is the target, --context the source
    layer: Callable[..., tuple[AttentionResult, LayerSteps]]
    rollout: Callable[..., run.Rollout]
    heads: Callable[..., dict]
    page: Callable[..., page.Layers | page.Parts]


SELF = (_self_layer, _self_rollout, _self_heads, _self_page)  # an encoder's and a decoder's: run.py's
KINDS = {  # a model's kind -> how its runs go
    "encoder": Kind("an encoder-only", ("encoder",), "encoder", "encoder", False, *SELF),
    "decoder": Kind("a decoder-only", ("decoder",), "decoder", "decoder", False, *SELF),
    "encoder-decoder": Kind(
        "an encoder–decoder",
        tuple(PARTS),
        DEFAULT_PART,
        "encoder",
        True,
        _part_layer,
        seq2seq.part_rollout,
        _part_heads,
        _part_page,
    ),
}


def kind_of(model: Model) -> str:
    """One of KINDS: an encoder–decoder has its family's decoder blocks, a decoder masks later keys (causal)."""
    return "encoder-decoder" if is_seq2seq(model) else "decoder" if model.causal else "encoder"


def kind(model: Model) -> Kind:
    """The KINDS entry of `model`: what the rest of attn asks instead of testing the model's family."""
    return KINDS[kind_of(model)]


def model_parts(model: Model) -> tuple[str, ...]:
    """The parts a model has: an encoder–decoder all of PARTS, an encoder (BERT) or a decoder (GPT-2) its one."""
    return kind(model).parts


def with_chat(model: Model, system: str | None) -> Model:
    """`model` reading each text as the user's message of a chat in its template (`tokens.with_chat`), or
    ConfigError: an encoder–decoder's TEXT is its target, not a prompt; a model without a template."""
    if kind(model).reads_source:
        raise ConfigError(
            f"--chat writes a prompt for a decoder; {model.name} is an encoder–decoder, whose TEXT is its target: "
            "drop --chat"
        )
    return tokens.with_chat(model, system)


def check_part(model: Model, part: str | None, context: str | None) -> str:
    """The part to show (an encoder–decoder's default: cross), or ConfigError naming the parts the model has."""
    if part is not None and part not in PARTS:
        raise ConfigError(f"unknown part {part!r}; the parts are {', '.join(PARTS)}")
    k = kind(model)
    chosen = part or k.default
    if chosen not in k.parts:
        raise ConfigError(
            f"--part {chosen}: {model.name} is {k.says} model ({model.model_type}); its only part is "
            f"{k.parts[0]}, its own self-attention (drop --part); cross-attention needs an encoder–decoder "
            "(BART, mBART, T5, Marian)"
        )
    if k.reads_source and PARTS[chosen].needs_source and context is None:
        default = " (the default)" if part is None else ""
        raise ConfigError(
            f"--part {chosen}{default} runs the text through {model.name}'s decoder, which reads a source: "
            "give it with --context SOURCE, or see the text's own self-attention in the encoder with --part encoder"
        )
    return chosen


def own_part(model: Model) -> str:
    """The part that is a text's own self-attention, read without a source: an encoder–decoder's encoder, else
    the model's one part."""
    return kind(model).own


def part_layers(model: Model, part: str) -> int:
    """How many layers a part has: the encoder's, or the decoder's (its self- and cross-attention)."""
    if not (kind(model).reads_source and PARTS[part].needs_source):
        return model.n_layer
    return int(model.hp["n_dec_layer"])


def _written(model: Model, text: str, context: str | None, part: str, generate: Generation | None):
    # -> the target an encoder–decoder writes (seq2seq.written_target's Tokens), or None: teacher forcing
    """With `generate`, the target the model writes from the source `context` after `text` (its beginning, or "");
    None for the encoder part (the source's own attention, which the writing does not change) and without
    `generate` (teacher forcing: the target is `text`)."""
    if not PARTS[part].needs_source or generate is None:
        return None
    assert context is not None  # check_part asks for the source
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
    return kind(model).layer(model, text, layer, head, context, chosen, generate, target)


def page_attention(
    model: Model,
    shown: AttentionResult,
    pair: tuple[str, str | None] | None,
    generate: Generation | None,
    maps: page.MapsCost | None = None,
) -> page.Layers | page.Parts:
    """The attention of a model's page on the text of `shown` (a `result` of it), from one pass (`page.py`): an
    encoder's or a decoder's every layer (`page.layers`), an encoder–decoder's every part, run on `pair` (the
    (target, source) the command was given; default the result's) with the target it writes with `generate`
    (`page.parts`); priced first with its contribution maps' bytes, `maps`, if it has them."""
    return kind(model).page(model, shown, pair, generate, maps)


def rollout(
    model: Model, text: str, layer: int | None = None, context: str | None = None, part: str | None = None
) -> run.Rollout:
    """Attention rollout through one part's layers 0..layer (default all): `attn show --rollout`."""
    chosen = check_part(model, part, context)
    return kind(model).rollout(model, text, layer, context, chosen)


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
    return kind(model).heads(model, text, context, chosen, generate, maps)
