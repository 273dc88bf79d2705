"""An encoder–decoder's three attentions (`--part`) as the objects the rest of attn already reads.

    model = load_model("tests/models/golden/bart")
    r, _ = part_layer(model, "le chat est assis sur le tapis", None, None, "the cat sat on the mat", "cross")
    r.weights.shape     # (4, 9, 8): every head of the last decoder layer's cross-attention, target × source

`attn show TARGET --model DIR --context SOURCE` runs SOURCE through the encoder and TARGET through the
decoder with teacher forcing, as transformers does given labels (labels = the tokenizer's ids of
TARGET, decoder input = the decoder start token then the labels without their last; mBART's target starts
with its language code, and its decoder with that code, the last label). The part names
are attncli.core.parts.PARTS; route.py checks the part and sends only an encoder–decoder's runs here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attncli.core.attention import Projections
from attncli.core.parts import DEFAULT_PART, PARTS
from attncli.core.statistics import CROSS_LABELS, CROSS_PATTERNS, CROSS_STATS, CROSS_UNDEFINED
from attncli.core.stats import cross_head_stats, cross_rollout, label_heads, rollout
from attncli.errors import ConfigError
from attncli.models.files.folder import check_run
from attncli.models.network.attention import LayerSteps
from attncli.models.network.forward import Forward, forward
from attncli.models.network.model import Model
from attncli.models.runs.encdec import Seq2Seq, decode_target, decoder_input, generation_start, seq2seq_forward
from attncli.models.runs.generate import Generation, check_room
from attncli.models.runs.languages import check_language, with_language
from attncli.models.runs.run import Rollout, heads_rows, heads_table
from attncli.models.runs.source import ModelLayer, describe, token_marks
from attncli.models.runs.tokens import ModelTokens, encode
from attncli.pipeline.config import RunConfig
from attncli.pipeline.result import AttentionResult, Step, config_record
from attncli.pipeline.run import _check_text
from attncli.pipeline.steps import mask_softmax_mix, shown
from attncli.pipeline.tokenize import Tokens
from attncli.pipeline.tokentext import texts


def _tokens(model: Model, strings, ids, offsets, special) -> Tokens:
    unk = getattr(model.tokenizer.model, "unk_token", None)
    size = model.tokenizer.get_vocab_size(with_added_tokens=True)
    return Tokens(
        tuple(strings),
        tuple(ids),
        tuple(offsets),
        model.name,
        size,
        unk_token=unk,
        special=tuple(special),
        texts=_texts(model, ids, special),
    )


def _texts(model: Model, ids, special) -> tuple[str, ...]:  # [n] ids, [n] special -> [n] texts
    """Each token's text, as its tokenizer decodes it (attncli.pipeline.tokentext)."""
    return texts(list(ids), list(special), lambda kept: model.tokenizer.decode(kept, skip_special_tokens=False))


def encoder_tokens(model: Model, source: str) -> Tokens:
    """The encoder's tokens: the source (--context) as the model's tokenizer cuts it for its encoder."""
    _check_text(source, "context")
    check_language(model, source)
    t = with_language(model, source, encode(model, source, what="context"), target=False)
    return _tokens(model, t.strings, t.ids, t.offsets, t.special)


def target_labels(model: Model, target: str) -> ModelTokens:
    """The target as transformers' labels: its tokenizer's tokens (mBART's with the target's language code)."""
    _check_text(target, "text")
    return with_language(model, target, encode(model, target), target=True)


def decoder_tokens(model: Model, target: str) -> Tokens:
    """The decoder's input: the start token, then the target's tokens (its labels) without the last."""
    labels = target_labels(model, target)
    ids = decoder_input(model, labels.ids)
    start = model.tokenizer.id_to_token(ids[0]) or f"<{ids[0]}>"
    return _tokens(
        model,
        [start, *labels.strings[:-1]],
        ids,
        [(0, 0), *labels.offsets[:-1]],
        [True, *labels.special[:-1]],
    )


def written_target(model: Model, text: str, source: str, how: Generation) -> Tokens:
    """The target the model writes from `source` (`--generate`): the decoder input of `text` as teacher forcing
    reads it (`decoder_tokens`) without the end-of-sequence token its tokenizer appends (the target given so far;
    "" = none: the decoder start token alone, where transformers' generate starts), then `how.new` written tokens
    (`encdec.decode_target`), each at the offset len(text); the whole target priced against the memory limit first."""
    src = encoder_tokens(model, source)
    if text:
        given = decoder_tokens(model, text)
    else:
        start = generation_start(model)
        given = _tokens(model, [model.tokenizer.id_to_token(start) or f"<{start}>"], [start], [(0, 0)], [True])
    keep = len(given) - next((i for i, s in enumerate(reversed(given.special[1:])) if not s), len(given) - 1)
    strings, ids, offsets, special = given.strings[:keep], given.ids[:keep], given.offsets[:keep], given.special[:keep]
    check_room(model, len(ids), how.new)
    room = check_run(
        model.weights.least(),
        model.hp["n_dec_layer"],
        model.hp["n_dec_head"],
        model.d_model,
        len(ids) + how.new,
        model.name,
    )
    model.weights.fit(room)
    new = decode_target(model, src.ids, ids, how.new, how)
    unk = getattr(model.tokenizer.model, "unk_token", None)
    return Tokens(
        strings + tuple(model.tokenizer.id_to_token(i) or "" for i in new),
        ids + tuple(new),
        offsets + ((len(text), len(text)),) * len(new),
        model.name,
        model.tokenizer.get_vocab_size(with_added_tokens=True),
        unk_token=unk,
        special=special + (False,) * len(new),
        generated=len(ids),
        generated_text=model.tokenizer.decode(new, skip_special_tokens=False),
        generated_by=how.describe(),
        texts=_texts(model, ids + tuple(new), special + (False,) * len(new)),
    )


def score_formula(model: Model, part: str) -> str:
    """The family's score: BART and Marian qᵀk/√d_k; T5 qᵀk plus its relative position bias in self-attention."""
    if model.hp.get("scale_attn_weights", True):
        return "S = qᵀk / √d_k"
    return "S = qᵀk (not scaled)" if part == "cross" else "S = qᵀk + b_h(bucket(j - i))  (T5's relative position bias)"


def part_layer(
    model: Model,
    text: str,
    layer: int | None,
    head: int | None,
    context: str | None,
    chosen: str,
    target: Tokens | None = None,
) -> tuple[AttentionResult, LayerSteps]:
    """One layer (default the last) of the part `chosen` (route.check_part's): `text` is the target (the source
    with --part encoder and no context), `context` the source; `target`: the decoder's tokens already made (a
    target the model wrote, `written_target`) instead of `text`'s. With the result, the layer's every stage as the
    model ran it (its scale and T5's position bias too:
    what the page's steps view redoes)."""
    layer = _check_layer(model, chosen, layer, model.n_layer if chosen == "encoder" else model.hp["n_dec_layer"])
    n_head, d_k = part_heads(model, chosen)
    pick_head = None if head is None else _check_head(model, chosen, head, n_head)
    source = context if context is not None else text
    src = encoder_tokens(model, source)
    tgt, memory = None, None
    if chosen == "encoder":
        s = forward(model, src.ids, upto_layer=layer, steps_layer=layer).steps
        assert s is not None  # steps_layer asks for them
    else:
        tgt = target if target is not None else decoder_tokens(model, text)
        run = seq2seq_forward(model, src.ids, tgt.ids)
        s, memory = (run.cross if chosen == "cross" else run.decoder)[layer], run.encoder.final
    pick = slice(None) if pick_head is None else slice(pick_head, pick_head + 1)
    cross = chosen == "cross"
    config = RunConfig(
        tokenizer=model.name,
        variant="scaled" if model.hp.get("scale_attn_weights", True) else "dot",
        heads=n_head if pick_head is None else 1,
        dim=model.d_model,
        d_k=d_k,
        d_v=d_k,
        d_a=d_k,
        mask=("causal",) if s.masked is not None else (),
    )
    result = AttentionResult(
        text=source if tgt is None else text,
        context=source if cross else None,
        tokens=src if tgt is None else tgt,
        context_tokens=src if cross else None,
        config=config,
        x=s.x,
        x_context=memory if cross else None,
        q=s.q[pick],
        k=s.k[pick],
        v=s.v[pick],
        scores=s.scores[pick],
        masked=None if s.masked is None else np.ascontiguousarray(s.masked[pick]),
        weights=s.weights[pick],
        head_outputs=s.out[pick],
        output=s.output,
        source=PartLayer(model, layer, pick_head, None, chosen, source if tgt is not None else None),
        params={"b_Q": s.b_q, "b_K": s.b_k, "b_V": s.b_v, "b_O": s.b_o},
        projections=Projections(s.w_q, s.w_k, s.w_v, s.w_o),
    )
    return result, s


@dataclass(frozen=True)
class PartLayer(ModelLayer):
    """The source of `part_layer()`'s result: one layer of one part of an encoder–decoder."""

    part: str = DEFAULT_PART
    encoder_text: str | None = None  # the encoder's text, the source the decoder read (decoder and cross parts)

    @property
    def matrix_name(self) -> str | None:
        return PARTS[self.part].title

    @property
    def _n_head(self) -> int:
        return part_heads(self.model, self.part)[0]

    def _heads_phrase(self) -> str:
        n = self._n_head
        return f"head {self.head} of {n}" if self.head is not None else f"all {n} heads"

    def caption(self, result: AttentionResult) -> list[str]:
        m, p = self.model, PARTS[self.part]
        n_layer = m.n_layer if self.part == "encoder" else m.hp["n_dec_layer"]
        lines = [
            describe(m)
            + (
                " (encoder–decoder)"
                if m.hp["n_dec_head"] == m.n_head
                else f" (encoder–decoder, decoder {m.hp['n_dec_head']} heads)"
            ),
            f"--part {self.part}: {p.help}",
            f"{self.part} layer {self.layer} of 0..{n_layer - 1} · {self._heads_phrase()} · d_k {result.config.d_k}",
            f"the model's weights, not attn's seeded projections: {score_formula(m, self.part)}, as transformers' "
            f"{self.part}_attentions",
        ]
        if self.part != "encoder" and result.tokens.generated is not None:
            given = result.tokens.generated - 1
            then = f", then TEXT as its tokenizer cuts it ({given} tokens)" if given else ""
            lines.append(
                f"written: the decoder read its start token{then}, then wrote one token a pass, each from those "
                "before it and the source"
            )
        elif self.part != "encoder":
            start = "its start token" if m.hp["decoder_start"] is not None else "the target's language code"
            lines.append(f"teacher forcing: the decoder reads {start}, then the target without its last token")
        lines += token_marks(result.tokens, *([] if result.context_tokens is None else [result.context_tokens]))
        if self.part == "cross":
            lines.append(
                f"alignment: rows = target tokens ({len(result.tokens)}), columns = source tokens "
                f"({len(result.key_tokens)}); ▸ marks each target token's strongest source token; rows sum to 1"
            )
        else:
            if result.config.mask:
                lines.append("mask: causal, no token sees a later one (· = masked, weight 0)")
            lines.append("rows: queries, columns: keys; each row sums to 1; ▸ = row maximum")
        lines.append(f"output: the attention output, all {self._n_head} heads: concat(A_h V_h) W_O + b_O")
        return lines

    def config_record(self, result: AttentionResult) -> dict:
        m = self.model
        chosen = {"model": m.name, "part": self.part, "layer": self.layer}
        chosen |= {} if self.head is None else {"head": self.head}
        chosen |= {} if self.encoder_text is None else {"source": self.encoder_text}
        positional = "relative" if "n_buckets" in m.hp else "learned" if m.hp.get("learned_positions") else "sinusoidal"
        return config_record(result.config, m.name, positional, "trained", None, chosen)

    def steps(self, result: AttentionResult) -> list[Step]:
        """`attn steps --model --part`: one layer's attention; cross: Q from the decoder, K and V from the encoder."""
        m, note = self.model, self.model.family.decoder.input_note
        cross = self.part == "cross"
        x = m.family.input_note(self.layer) if self.part == "encoder" else note(self.layer, self.part)
        split = f", split into heads ({self._heads_phrase()})"
        src = "X_context" if cross else "X"
        out = [Step("x", x, result.x, ("query", "dim"), stage="layer input")]
        if cross:
            assert result.x_context is not None
            out.append(
                Step(
                    "x_context",
                    "X_context: the encoder's output over the source",
                    result.x_context,
                    ("key", "dim"),
                    stage="layer input",
                )
            )
        out += [
            Step(
                "q",
                f"Q = X W_Q + b_Q (from the {'decoder' if cross else self.part}){split}",
                result.q,
                ("head", "query", "dim"),
            ),
            Step(
                "k",
                f"K = {src} W_K + b_K{' (from the encoder)' if cross else ''}{split}",
                result.k,
                ("head", "key", "dim"),
            ),
            Step(
                "v",
                f"V = {src} W_V + b_V{' (from the encoder)' if cross else ''}{split}",
                result.v,
                ("head", "key", "dim"),
            ),
            Step(
                "scores",
                score_formula(m, self.part) + "  (for every query–key pair)",
                shown(result)[0],
                ("head", "query", "key"),
            ),
        ]
        out += mask_softmax_mix(result, "causal: keys after the query")
        out.append(
            Step(
                "output",
                f"O = concat(O_0, …, O_{self._n_head - 1}) W_O + b_O: the {self.part} attention output of layer "
                f"{self.layer}, before the residual",
                result.output,
                ("query", "dim"),
            )
        )
        return out


#: What `attn heads --contrib` computes its statistics on in place of a part's weights: from the part's pass (the
#: encoder's Forward over the source, or the teacher-forced Seq2Seq for the decoder's parts), [L, h, n_q, n_k].
PassMaps = Callable[[Forward | Seq2Seq], np.ndarray]


def _part_weights(
    model: Model, text: str, context: str | None, part: str, target: Tokens | None = None, maps: PassMaps | None = None
) -> tuple[Tokens, str, list]:
    # -> the rows' tokens, the text they are, per layer [n_head, n_q, n_k]
    """Every layer's weights of one part: the encoder's over the source, or the decoder's over the target; with
    `maps`, what it computes from the part's pass instead of the weights."""
    source = context if context is not None else text
    src = encoder_tokens(model, source)
    if part == "encoder":
        encoded = forward(model, src.ids)
        return src, source, encoded.weights if maps is None else list(maps(encoded))
    tgt = target if target is not None else decoder_tokens(model, text)
    run = seq2seq_forward(model, src.ids, tgt.ids)
    if maps is not None:
        return tgt, text, list(maps(run))
    return tgt, text, [s.weights for s in (run.cross if part == "cross" else run.decoder)]


CROSS_ROLLOUT_METHOD = (
    "attention rollout through an encoder–decoder (Abnar & Zuidema 2020, carried through the cross-attention "
    "after the encoder–decoder rule of Chefer, Gur & Wolf 2021, with plain head means where they weight heads by "
    "gradients): the source's flows are the encoder's rollout E; per decoder "
    "layer T, S <- Â T, Â S (Â = ½ mean of the self-attention heads + ½ I), then T, S <- ½ T, ½ S + ½ C E "
    "(C = mean of the cross-attention heads); the matrix is S with each row rescaled to sum to 1 (the source's "
    "share of every row is 1 - 2^-(layer+1) by the ½ residual, the same in every row)"
)


def part_heads(model: Model, part: str) -> tuple[int, int]:
    """(heads, d_k) of a part: the encoder's, or the decoder's (its self- and cross-attention: BART and Marian may
    have other decoder_attention_heads than encoder_attention_heads)."""
    if part == "encoder":
        return model.n_head, model.d_k
    return int(model.hp["n_dec_head"]), int(model.hp["d_dec_k"])


def _check_head(model: Model, part: str, head: int, n_head: int) -> int:
    if not -n_head <= head < n_head:
        raise ConfigError(
            f"head {head} is out of range: --part {part} of {model.name} has {n_head} heads per layer, 0..{n_head - 1}"
        )
    return head % n_head


def _check_layer(model: Model, part: str, layer: int | None, n_layer: int) -> int:
    if not -n_layer <= (layer := -1 if layer is None else layer) < n_layer:
        raise ConfigError(
            f"layer {layer} is out of range: --part {part} of {model.name} has {n_layer} layers, 0..{n_layer - 1}"
        )
    return layer % n_layer


def part_rollout(
    model: Model, text: str, layer: int | None, context: str | None, chosen: str, target: Tokens | None = None
) -> Rollout:
    """Attention rollout through the layers 0..layer of the part `chosen`: the encoder's or the decoder's
    self-attention, or (cross) how much each source token has flowed into each target position after decoder
    layer `layer`."""
    if chosen == "cross":
        assert context is not None  # route.check_part asks for the source
        src, tgt = encoder_tokens(model, context), target if target is not None else decoder_tokens(model, text)
        run = seq2seq_forward(model, src.ids, tgt.ids)
        layer = _check_layer(model, "decoder", layer, len(run.cross))
        decoder, cross = [s.weights for s in run.decoder], [s.weights for s in run.cross]
        _, flows = cross_rollout(run.encoder.weights, decoder, cross, layer)  # [m, n]
        matrix = flows / flows.sum(axis=-1, keepdims=True)  # of what came from the source, each token's share
        kept = np.stack(cross[: layer + 1])  # [layer + 1, n_head, m, n]
        return Rollout(text, tgt, model, layer, matrix, kept, None, context, src, CROSS_ROLLOUT_METHOD)
    tokens, shown_text, weights = _part_weights(model, text, context, chosen, target)
    layer = _check_layer(model, chosen, layer, len(weights))
    rolled = rollout(weights, upto_layer=layer)
    return Rollout(shown_text, tokens, model, layer, rolled, np.stack(weights[: layer + 1]))


def part_heads_document(
    model: Model,
    text: str,
    context: str | None,
    chosen: str,
    target: Tokens | None = None,
    maps: PassMaps | None = None,
) -> dict:
    """`attn heads --part`: every head of every layer of the part `chosen`. Cross-attention has its own
    statistics (CROSS_STATS; `undefined` says why diagonal and previous are not). `maps`: what the statistics
    are computed on instead of the weights, rows that sum to 1 (`attn heads --contrib`'s shares)."""
    tokens, shown_text, weights = _part_weights(model, text, context, chosen, target, maps)
    generation = tokens.generation()
    source = ({} if context is None else {"source": context}) | (
        {} if generation is None else {"generated": generation}
    )
    if chosen == "cross":
        assert context is not None  # route.check_part asks for the source
        stats = cross_head_stats(np.stack(weights))
        doc = heads_table(
            model, shown_text, tokens, stats, label_heads(stats, CROSS_PATTERNS), CROSS_STATS, CROSS_LABELS
        )
        src = encoder_tokens(model, context)
        return doc | {"part": chosen, **source, "context_tokens": list(src.strings), "undefined": CROSS_UNDEFINED}
    doc = heads_rows(model, shown_text, tokens, np.stack(weights), causal=chosen == "decoder")
    return doc | {"part": chosen, **source}


@dataclass(frozen=True)
class PartWeights:
    """Every layer of one part: its rows' tokens, its columns' (None: the same tokens) and weights."""

    tokens: Tokens
    key_tokens: Tokens | None
    weights: list[np.ndarray]  # per layer [n_head, n_q, n_k]
    masked: np.ndarray | None  # [n_q, n_k] bool, True = masked (the decoder's causal mask), the same in every head


def every_part(model: Model, text: str, context: str | None, target: Tokens | None = None) -> dict[str, PartWeights]:
    """Every layer of every part of an encoder–decoder from one teacher-forced pass (`text` the target, `context`
    the source; `target`: the decoder's tokens already made, a written target); without a context, `text` is the
    source and only the encoder's part is there."""
    source = context if context is not None else text
    src = encoder_tokens(model, source)
    if context is None:
        return {"encoder": PartWeights(src, None, forward(model, src.ids).weights, None)}
    tgt = target if target is not None else decoder_tokens(model, text)
    run = seq2seq_forward(model, src.ids, tgt.ids)
    side = {"source": src, "target": tgt}
    out = {}
    for name, p in PARTS.items():
        weights, masked = run.encoder.weights, None
        if p.needs_source:  # a decoder's part: Seq2Seq's field of the same name, each layer's steps
            steps = getattr(run, name)
            weights, masked = [s.weights for s in steps], None if steps[0].masked is None else steps[0].masked[0]
        out[name] = PartWeights(side[p.queries], None if p.keys == p.queries else side[p.keys], weights, masked)
    return out
