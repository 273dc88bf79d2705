"""A real model's contribution maps (`--contrib norm|alti|value-zeroing`): the measures of
attncli.core.measures' `CONTRIBUTIONS` on one layer of an encoder or a decoder, and (contrib_parts.py) of an
encoder–decoder's decoder self-attention and cross-attention.

    model = load_model("tests/models/golden/bert")
    c = contributions(model, "time flies", "alti")
    c.layer_matrix.shape, c.rollout.shape      # (n, n) and (n, n): layer 1's ALTI and its rollout from layer 0

What ALTI decomposes (Ferrando et al. 2022, §3), by the block's form:

- a post-norm block (BERT and its kin), LN(x + Attn(x)): the layer norm's output, its linear part L_i at each
  output row (the family's `attention_norm` names the norm);
- a pre-norm block (GPT-2, Llama and every RMSNorm decoder), x + Attn(Norm(x)): the attention block's output plus
  the residual, before the next norm. The norm before the attention is a function of x_j alone, so it sits inside
  f_h(x_j) = Norm(x_j) W_V^h W_O^h (bias b_V included), and nothing is linearized. The block is recognized by its
  output being exactly x + Attn(Norm(x)).

- a norm on the attention's output alone, inside the residual, x + N(Attn(N'(x))) (Gemma 2 and 3's, OLMo 2's
  post_attention_layernorm; the family's `attention_out_linear`): N is RMSNorm, linear at each output row once its
  scale s_i = 1/rms(o_i) of the whole attention output o_i is fixed, so T_i(x_j) = s_i γ ⊙ Σ_h α^h_ij f_h(x_j)
  + [i = j] x_j (core.contrib's `alti_out_norm`, the equations there); s_i does not cancel, the residual being
  outside the norm;
- parallel attention and MLP, x + Attn(N_1(x)) + MLP(N_2(x)) (GPT-NeoX's parallel residual; the family's
  `parallel_mlp`): the attention block's output plus the residual, x + Attn(N_1(x)), as for a pre-norm block. ALTI
  measures how the attention mixes the tokens and leaves the MLP out of every block (§3: the decomposition ends
  at the attention's layer norm in BERT, before the feed-forward network, which acts on each token alone); the
  parallel MLP also reads x_i alone, so counting it in token i's own share would make the same quantity mean
  something else in GPT-NeoX than in a sequential block.

A block of yet another form is refused in one line. Value zeroing (Mohebbi et al. 2023) runs the layer itself,
attention, MLP and norms, once more per token in batches, so it takes every form; an output that is zero and stays
zero (a token whose embedding row is zero, as the padding row transformers' nn.Embedding(padding_idx) keeps at 0,
Gemma's <pad>) is not moved by any token: its row is 0.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from attncli.core.contrib import (
    alti_layer,
    alti_out_norm,
    cosine_distance,
    head_vectors,
    norm_heads,
    norm_layer,
    normalize_rows,
    roll,
    rollouts,
)
from attncli.core.measures import CONTRIBUTIONS, computed
from attncli.core.parts import DEFAULT_PART, PARTS
from attncli.errors import ConfigError
from attncli.models.files.hparams import ModelError
from attncli.models.interpret.contrib_parts import part_maps, part_note, part_steps
from attncli.models.network.attention import LayerSteps, editing_values, padding
from attncli.models.network.forward import Forward, forward
from attncli.models.network.model import Model
from attncli.models.runs.encdec import Seq2Seq, seq2seq_forward
from attncli.models.runs.generate import Generation
from attncli.models.runs.route import check_part, heads, kind
from attncli.models.runs.run import run_pass
from attncli.models.runs.seq2seq import PartLayer, encoder_tokens
from attncli.models.runs.source import ModelLayer
from attncli.pipeline.budget import max_bytes_from
from attncli.pipeline.result import AttentionResult

#: The share of ATTN_MAX_MEMORY a block of [rows, n, d] float64 vectors may take (the pass's arrays hold the rest).
SHARE = 4
#: With no ATTN_MAX_MEMORY limit, the bytes a block takes all the same.
UNBOUNDED_BLOCK = 256 * 2**20


@dataclass(frozen=True)
class Contributions:
    """One layer's contribution map of one measure: per head (where it has them), the layer's, its rollout."""

    measure: str  # a key of CONTRIBUTIONS
    layer: int
    heads: np.ndarray | None  # [h, n, n] float64, or None (ALTI, value zeroing: defined for the layer only)
    layer_matrix: np.ndarray  # [n, n] float64
    rollout: np.ndarray | None  # [n, n] float64 through layers 0..layer (ALTI), or None
    # an encoder–decoder's decoder and cross parts (contrib_parts.py): the part (None: an encoder's or a decoder's
    # one self-attention), and cross ALTI's share of each row that the residual carries [m] (the rest of the row)
    part: str | None = None
    residual: np.ndarray | None = None
    note: str | None = None  # what the part's maps are, where they differ from the measure's formula

    def document(self, precision: int | None = None) -> dict:
        """`-f json`'s `contributions`: {measure, heads (where defined), layer, rollout (ALTI)}."""

        def listed(a: np.ndarray) -> list:
            return (a if precision is None else np.round(a, precision)).tolist()

        doc: dict = {"measure": self.measure, "title": CONTRIBUTIONS[self.measure].title}
        doc |= {} if self.part is None else {"part": self.part}
        if self.heads is not None:
            doc["heads"] = listed(self.heads)
        doc["layer"] = listed(self.layer_matrix)
        if self.residual is not None:
            doc["residual"] = listed(self.residual)
        doc |= {} if self.note is None else {"note": self.note}
        if self.rollout is not None:
            doc["rollout"] = listed(self.rollout)
        return doc


def of_result(result: AttentionResult, measure: str) -> Contributions:
    """`measure` on the layer of a model's `result` (`attn show --model ... --contrib`), from one more pass of its
    text through that layer (its sentence pair, or its written tokens with --generate); `heads` those the result
    holds (every head, or the one --head)."""
    source = _model_layer(result, measure)
    model, layer = source.model, source.layer
    if kind(model).reads_source:
        part = getattr(source, "part", None)
        if part is None or PARTS[part].needs_source:
            return _one_head(seq2seq_of(model, result, layer, measure, part or DEFAULT_PART), source.head)
    return _one_head(contributions(model, _pass(result, layer), layer, measure), source.head)


def _model_layer(result: AttentionResult, measure: str) -> ModelLayer:
    if not isinstance(result.source, ModelLayer):
        raise ConfigError(f"--contrib {measure} measures a real model's layer: give --model")
    return result.source


def _pass(result: AttentionResult, layer: int) -> Forward:
    """One more pass of the model's `result` through `layer` (its steps kept): its text and sentence pair, or its
    tokens as they are (written ones, an encoder–decoder's source)."""
    source = cast(ModelLayer, result.source)
    model = source.model
    if kind(model).reads_source or result.tokens.generated is not None:
        return forward(model, np.asarray(result.tokens.ids), upto_layer=layer, steps_layer=layer)
    return run_pass(model, result.text or "", source.pair, upto_layer=layer, steps_layer=layer)[1]


def _one_head(c: Contributions, head: int | None) -> Contributions:
    """The maps with only head `head`'s per-head map (the one --head shown), or as they are."""
    if c.heads is None or head is None:
        return c
    return replace(c, heads=c.heads[head : head + 1])


def seq2seq_of(model: Model, result: AttentionResult, layer: int, measure: str, part: str) -> Contributions:
    """`measure` on decoder layer `layer`'s `part` (decoder, cross) of an encoder–decoder's result: one more
    teacher-forced pass of its source and its decoder's tokens (contrib_parts.py computes the maps)."""
    if not computed(measure):
        raise ConfigError(f"unknown contribution measure {measure!r}; the measures are {', '.join(CONTRIBUTIONS)}")
    encoder_text = cast(PartLayer, result.source).encoder_text
    assert encoder_text is not None  # a decoder's part reads a source (route.check_part asks for it)
    run = seq2seq_forward(model, encoder_tokens(model, encoder_text).ids, result.tokens.ids)
    budget = block_budget()
    encoder = None
    if CONTRIBUTIONS[measure].rolls_out and PARTS[part].keys != PARTS[part].queries:  # cross: the encoder's rollout
        encoder = roll([alti_of(model, l, run.encoder.hidden[l], budget) for l in range(model.n_layer)])
    maps = part_maps(model, run, part, layer, measure, budget, encoder)
    return Contributions(measure, layer, maps.heads, maps.layer, maps.rollout, part, maps.residual, maps.note)


def block_budget() -> int:
    """Bytes a block of [rows, n, d] vectors may take: a share of ATTN_MAX_MEMORY."""
    limit = max_bytes_from(os.environ)
    return UNBOUNDED_BLOCK if limit is None else max(1, limit // SHARE)


def contributions(model: Model, run: Forward, layer: int, measure: str) -> Contributions:
    """`measure` (a key of CONTRIBUTIONS other than weights) on `layer` of the pass `run` (its `hidden` through
    `layer`, and its `steps` of `layer`)."""
    return every_layer(model, run, measure, [layer])[0]


def every_layer(model: Model, run: Forward, measure: str, layers: list[int]) -> list[Contributions]:
    """`measure` on each of `layers` (ascending) of the one pass `run` (its `hidden` through the last of them; its
    `steps`, where it kept a layer's, spare that layer's attention): each layer's attention block once, and ALTI's
    rollout accumulated once through layers 0..L (`rollouts`), not again for every layer: the same numbers as
    `contributions` of each layer alone, at the cost of one layer pass per layer instead of L(L+1)/2."""
    if not computed(measure):
        raise ConfigError(f"unknown contribution measure {measure!r}; the measures are {', '.join(CONTRIBUTIONS)}")
    return LAYER_MAPS[measure](model, run, layers, block_budget())


def _steps(model: Model, run: Forward, l: int) -> LayerSteps:
    """Layer `l`'s attention as the pass ran it: its kept steps, or the layer's attention again on its stream."""
    if run.steps is not None and run.steps.layer == l:
        return run.steps
    return model.family.attention(model, l, run.hidden[l])[1]


def _norm_maps(model: Model, run: Forward, layers: list[int], budget: int) -> list[Contributions]:
    """Kobayashi et al. 2020: ‖α^h_ij f_h(x_j)‖ per head and ‖Σ_h α^h_ij f_h(x_j)‖ for the layer."""
    out = []
    for l in layers:
        steps = _steps(model, run, l)
        f = head_vectors(steps.v, steps.w_o)  # [h, n, d_model]
        out.append(Contributions("norm", l, norm_heads(steps.weights, f), norm_layer(steps.weights, f, budget), None))
    return out


def _alti_maps(model: Model, run: Forward, layers: list[int], budget: int) -> list[Contributions]:
    """Ferrando et al. 2022: each layer's ALTI through the last of `layers`, once, and their rollouts, once."""
    each = [alti_of(model, l, run.hidden[l], budget) for l in range(layers[-1] + 1)]
    rolled = rollouts(each)
    return [Contributions("alti", l, None, each[l], rolled[l]) for l in layers]


def _zeroing_maps(model: Model, run: Forward, layers: list[int], budget: int) -> list[Contributions]:
    """Mohebbi et al. 2023: the layer's output with each token's values zeroed, by cosine distance."""
    return [
        Contributions("value-zeroing", l, None, value_zeroing(model, l, run.hidden[l], _steps(model, run, l)), None)
        for l in layers
    ]


#: How each measure of CONTRIBUTIONS that is computed (`Measure.computed`) is, on layers of an encoder or a
#: decoder: measure -> f(model, run, layers, bytes a block may take) -> a Contributions for each of the layers
#: (contrib_parts.PART_MAPS: on a decoder's part).
LAYER_MAPS = {"norm": _norm_maps, "alti": _alti_maps, "value-zeroing": _zeroing_maps}


def alti_of(model: Model, l: int, x, budget: int) -> np.ndarray:  # [n, d_model] the stream entering l -> [n, n]
    """ALTI of layer `l`'s attention block (see the module's docstring for what it decomposes)."""
    y, s = model.family.attention(model, l, x)
    f = head_vectors(s.v, s.w_o)
    family = model.family
    if np.array_equal(y, s.output + x) or (family.parallel_mlp is not None and family.parallel_mlp(model)):
        return alti_layer(s.weights, f, x, None, budget)  # pre-norm x + Attn(Norm(x)), no norm after; or parallel
    normed = None if family.attention_out_linear is None else family.attention_out_linear(model, l, s.output)
    if normed is not None:  # x + N(Attn(N'(x))): the norm's per-row linear map
        gain, scale = normed
        return alti_out_norm(s.weights, f, x, gain, scale, budget)
    if family.attention_norm is None:
        raise ConfigError(
            f"--contrib alti: the attention block of {model.name} ({model.model_type}) is none of LN(x + Attn(x)), "
            "x + Attn(Norm(x)), x + N(Attn(Norm(x))) and x + Attn(N_1(x)) + MLP(N_2(x)), which ALTI's "
            "decomposition here covers; norm and value-zeroing take it"
        )
    gamma = model.weights[family.attention_norm(model, l) + ".weight"]
    return alti_layer(s.weights, f, x, (gamma, True), budget)  # its scale 1/σ_i cancels in each row (core.contrib)


def value_zeroing(model: Model, l: int, x, steps: LayerSteps) -> np.ndarray:
    # [n, d_model] the stream entering l -> [n, n]
    """c_ij = 1 - cos(x̃_i, x̃_i^(¬j)), rows normalized (Mohebbi et al. 2023, §2): x̃ the output of layer `l`
    (attention, MLP and their norms), x̃^(¬j) the same with token j's value vectors zeroed in every head. The layer
    runs once on x, then on copies of x a batch of tokens at a time (one copy per zeroed token, as the padding
    batch of attncli.models.runs.batch). A causal model's masked cells (j > i) are 0: token j does not reach row i."""
    f = model.family
    n, d = np.shape(x)
    original = f.mlp(model, l, f.attention(model, l, x)[0])  # [n, d_model]
    per_copy = 8 * n * max(d, 4 * d, n * model.n_head)  # the copy's widest arrays: its MLP and its weights
    batch = max(1, min(n, block_budget() // per_copy))
    distance = np.empty((n, n))  # [i, j]: output i, token j zeroed
    for start in range(0, n, batch):
        tokens = np.arange(start, min(n, start + batch))

        def zero(v, tokens=tokens):  # [B, h_kv, n, d_v]: copy b loses token tokens[b]'s values
            v[np.arange(len(tokens)), :, tokens, :] = 0

        copies = np.repeat(np.asarray(x)[None], len(tokens), axis=0)  # [B, n, d_model]
        with padding(np.zeros((len(tokens), n), dtype=bool)), editing_values(l, zero):
            zeroed = f.mlp(model, l, f.attention(model, l, copies)[0])  # [B, n, d_model]
        with np.errstate(invalid="ignore"):  # 0/0 at an output of length 0; read below
            moved = cosine_distance(original[None], zeroed)  # [B, n]
        still = ~original.any(axis=-1) & ~zeroed.any(axis=-1)  # [B, n]: a zero output that zeroing left zero
        distance[:, tokens] = np.where(still, 0.0, moved).T
    if not np.isfinite(distance).all():
        raise ModelError(f"value zeroing of layer {l} of {model.name} is not finite (an output of length 0, moved)")
    if steps.masked is not None:
        distance[steps.masked[0]] = 0.0
    return normalize_rows(np.maximum(distance, 0.0))


def norm_of(s: LayerSteps) -> np.ndarray:  # -> [h, m, n]
    """Each head's ‖α^h_ij f_h(x_j)‖ of one attention as it ran (Kobayashi et al. 2020, §3): its weights, values
    and output projection."""
    return norm_heads(s.weights, head_vectors(s.v, s.w_o))


def heads_of(
    model: Model,
    text: str,
    measure: str,
    pair: str | None = None,
    part: str | None = None,
    generate: Generation | None = None,
) -> dict:
    """`attn heads --contrib MEASURE -f json`: every head's statistics, label and sinks computed on the measure's
    per-head maps instead of the weights, each row as shares of its sum (norm: ‖α^h_ij f_h(x_j)‖ / Σ_k
    ‖α^h_ik f_h(x_k)‖, what each token is of what the head moves to output i); the document says which measure
    (`contrib`, and `measure` in every row); `pair`, `part` and `generate` as `attn heads`'. An encoder–decoder's
    part (encoder, decoder, cross) gets the statistics `attn heads --part` computes on its weights (cross: its
    own), on the part's maps (contrib_parts.py's: cross's f_h reads the encoder's output, `contrib.note` says so).
    A measure of the whole layer (ALTI, value zeroing) has no heads to fill the grid with: refused in one line."""
    m = CONTRIBUTIONS[measure]
    if not computed(measure):  # the maps are the weights: `attn heads` itself
        return heads(model, text, pair, part, generate)
    if not m.per_head:
        takes = ", ".join(name for name, e in CONTRIBUTIONS.items() if e.per_head)
        raise ConfigError(
            f"--contrib {measure} measures the whole layer (no map per head), and attn heads describes each head: "
            f"it takes --contrib {takes}; attn show --contrib {measure} draws the layer's maps"
        )
    chosen = check_part(model, part, pair)  # an encoder's or a decoder's one part; an encoder–decoder's three

    def shares(run: Forward | Seq2Seq) -> np.ndarray:  # -> [L, h, m, n], rows sum to 1
        if isinstance(run, Seq2Seq):  # an encoder–decoder's decoder or cross part: the pass keeps every layer's steps
            steps = [part_steps(run, chosen, l) for l in range(len(run.hidden))]
        else:  # an encoder or a decoder (an encoder–decoder's encoder): each layer's attention again on its stream
            steps = [model.family.attention(model, l, x)[1] for l, x in enumerate(run.hidden)]
        return np.stack([normalize_rows(norm_of(s)) for s in steps])

    doc = heads(model, text, pair, part, generate, shares)
    for row in doc["rows"]:
        row["measure"] = measure  # a row of CSV or Parquet says what its numbers are computed on
    numbers = "statistic, label and sink number" if "sinks" in doc else "statistic and label"  # a part: no sinks
    noted = kind(model).reads_source and PARTS[chosen].needs_source  # a decoder's part: the note says what f_h reads
    return doc | {
        "contrib": {
            "measure": measure,
            "title": m.title,
            "formula": m.formula,
            "paper": m.paper,
            "shares": f"each head's {m.title} of a query row, divided by the row's sum: what every {numbers} here is "
            "computed on, in place of the attention weights",
            **({"note": part_note(chosen, measure)} if noted else {}),
        }
    }
