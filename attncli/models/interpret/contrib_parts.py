"""Contribution maps of an encoder–decoder's decoder self-attention and cross-attention (`--part decoder|cross
--contrib norm|alti|value-zeroing`); attncli.models.interpret.contrib wraps them (the encoder's part is an
encoder's layer there).

Each measure on a decoder layer l of one teacher-forced pass (attncli.models.runs.encdec's `Seq2Seq`):

- norm (Kobayashi et al. 2020, §3): decoder: f_h(y_j) of the decoder's self-attention (a pre-norm block's norm
  inside it); cross: f_h(s_j) = (s_j W_V^h + b_V^h) W_O^h of the cross-attention, s_j the ENCODER's output at
  source token j; per head ‖α^h_ij f_h(·_j)‖ [h, m, n], the layer ‖Σ_h α^h_ij f_h(·_j)‖.
- ALTI (Ferrando et al. 2022, §3): decoder: the self-attention block as an encoder's, by its form (BART's and
  Marian's post-LN: LN(y + Attn(y)), the decoder's `attention_norm`; mBART's and T5's pre-norm: y + Attn(Norm(y)))
  and rolled out across the decoder's self-attention blocks 0..l (like `--rollout --part decoder`, the paths
  through the self-attentions only). cross: ALTI+ (Ferrando et al. 2022b, "Towards Opening the Black Box of Neural
  Machine Translation: Source and Target Contributions to the Model", §3): the cross block's output at decoder
  token i from each source token through the heads and from the residual (its own stream; `residual` [m], the
  rest of each row); the rollout composes every decoder layer 0..l, self-attention then cross-attention, with the
  encoder's ALTI rollout E: R = [0 | I] (source | target), then per layer S = C_self R and
  R = [X E | 0] + diag(r) S (X the cross block's source shares [m, n], r its residual share); the rollout drawn is
  R's source columns [m, n] (each target position's share from each source token; the target prefix has the rest).
- value zeroing (Mohebbi et al. 2023, §2): the decoder layer's output (self-attention, cross-attention, MLP and
  their norms) with one token's value vectors zeroed in every head, decoder: of the decoder token j in the
  self-attention (j > i masked, 0); cross: of the source token j in the cross-attention.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.core.contrib import (
    alti_cross,
    alti_layer,
    cosine_distance,
    head_vectors,
    norm_heads,
    norm_layer,
    normalize_rows,
    rollouts,
)
from attncli.core.parts import PARTS
from attncli.errors import ConfigError
from attncli.models.files.hparams import ModelError
from attncli.models.network.attention import LayerSteps, editing_values
from attncli.models.network.cross import Decoder
from attncli.models.network.model import Model
from attncli.models.runs.encdec import Seq2Seq


@dataclass(frozen=True)
class PartMaps:
    """One decoder layer's maps of one measure on one part (the arrays of contrib.py's `Contributions`)."""

    heads: np.ndarray | None  # [h, m, n] (norm), or None
    layer: np.ndarray  # [m, n]: n = m (decoder) or the source's tokens (cross)
    rollout: np.ndarray | None  # [m, n] (ALTI), or None
    residual: np.ndarray | None  # [m]: cross ALTI's share of each row carried by the residual, or None
    note: str  # what the maps are on this part


NOTES = {  # (cross-attention?, measure) -> what the maps are on that part
    (False, "norm"): "decoder self-attention: f_h(y_j) of the decoder token j (causal: j ≤ i)",
    (True, "norm"): "cross-attention: f_h(s_j) = (s_j W_V^h + b_V^h) W_O^h of the encoder's output s_j at source "
    "token j; rows: target tokens, columns: source tokens",
    (False, "alti"): "decoder self-attention block (post-LN BART, Marian: LN(y + Attn(y)); pre-norm mBART, T5: "
    "y + Attn(Norm(y))); rolled out through the decoder's self-attention blocks only",
    (True, "alti"): "ALTI+ (Ferrando et al. 2022b, 'Towards Opening the Black Box of Neural Machine Translation', "
    "§3): target token i's cross block output from each source token, T_i(s_j) = L_i(Σ_h α^h_ij f_h(s_j)), and from "
    "the residual, T_i(y_i) = L_i(y_i) (its own stream: the residual column; the source's shares and it sum to 1); "
    "rollout: every decoder layer, self- then cross-attention, the encoder's ALTI rollout composed, the source "
    "tokens' columns (the target prefix has the rest of each row)",
    (False, "value-zeroing"): "decoder layer output (self-attention, cross-attention, MLP) with decoder token j's "
    "values zeroed in the self-attention (causal: j ≤ i)",
    (True, "value-zeroing"): "decoder layer output (cross-attention, MLP) with source token j's values zeroed in the "
    "cross-attention",
}


@dataclass(frozen=True)
class Block:
    """What decoder layer l's attentions read and made: the stream entering it, after its self-attention, after
    its cross-attention, and both attentions' steps."""

    y: np.ndarray  # [m, d_model]
    after_self: np.ndarray  # [m, d_model]
    after_cross: np.ndarray  # [m, d_model]
    self_steps: LayerSteps
    cross_steps: LayerSteps


def block(model: Model, run: Seq2Seq, l: int) -> Block:
    dec = _decoder(model)
    y = run.hidden[l]
    after_self, s = dec.self_attention(model, l, y)
    after_cross, c = dec.cross_attention(model, l, after_self, run.encoder.final)
    return Block(y, after_self, after_cross, s, c)


def part_maps(
    model: Model, run: Seq2Seq, part: str, layer: int, measure: str, budget: int, encoder_rollout=None
) -> PartMaps:
    # encoder_rollout: [n, n] the encoder's ALTI rollout (cross ALTI's rollout composes it) -> PartMaps
    """`measure` (norm, alti, value-zeroing) on decoder layer `layer`'s `part` (decoder, cross) of `run`."""
    return part_layers(model, run, part, [layer], measure, budget, encoder_rollout)[0]


def part_layers(
    model: Model, run: Seq2Seq, part: str, layers: list[int], measure: str, budget: int, encoder_rollout=None
) -> list[PartMaps]:
    # layers ascending; encoder_rollout: [n, n] the encoder's ALTI rollout (cross ALTI's composes it)
    """`measure` on each of decoder layers `layers`' `part` of `run`, each block once: ALTI's rollouts are
    accumulated once through layers 0..L (the same numbers as `part_maps` of each layer alone)."""
    return PART_MAPS[measure](model, run, part, layers, budget, encoder_rollout)


def _norm_maps(model: Model, run: Seq2Seq, part: str, layers: list[int], budget: int, encoder_rollout=None) -> list:
    """Kobayashi et al. 2020 on the part: cross's f_h reads the encoder's output."""
    out = []
    for layer in layers:
        s = part_steps(run, part, layer)
        f = head_vectors(s.v, s.w_o)  # [h, n, d_model]: cross: the encoder's output through W_V, W_O
        heads, whole = norm_heads(s.weights, f), norm_layer(s.weights, f, budget)
        out.append(PartMaps(heads, whole, None, None, NOTES[crosses(part), "norm"]))
    return out


def _zeroing_maps(model: Model, run: Seq2Seq, part: str, layers: list[int], budget: int, encoder_rollout=None) -> list:
    """Mohebbi et al. 2023 on the part: a decoder token's values zeroed (decoder) or a source token's (cross)."""
    cross = crosses(part)
    note = NOTES[cross, "value-zeroing"]
    return [PartMaps(None, value_zeroing(model, run, l, cross, budget), None, None, note) for l in layers]


def _alti_maps(model: Model, run: Seq2Seq, part: str, layers: list[int], budget: int, encoder_rollout=None) -> list:
    # encoder_rollout: [n, n] the encoder's ALTI rollout, which cross's rollout composes
    """Ferrando et al. 2022 on the decoder's self-attention; ALTI+ (Ferrando et al. 2022b) on the cross-attention;
    each block once, the rollout accumulated once through the last of `layers`."""
    cross = crosses(part)
    note = NOTES[cross, "alti"]
    if not cross:
        each = [alti_self(model, block(model, run, l), l, budget) for l in range(layers[-1] + 1)]
        rolled = rollouts(each)
        return [PartMaps(None, each[l], rolled[l], None, note) for l in layers]
    assert encoder_rollout is not None  # contrib.of_result passes it for cross ALTI
    n, m = len(encoder_rollout), len(run.hidden[0])
    r = np.hstack([np.zeros((m, n)), np.eye(m)])  # [m, n + m]: each decoder input is its own token
    out = []
    for l in range(layers[-1] + 1):
        b = block(model, run, l)
        through_self = alti_self(model, b, l, budget) @ r  # [m, n + m]
        shares = alti_of_cross(model, b, l, budget)  # [m, n + 1]
        r = shares[:, n:] * through_self
        r[:, :n] += shares[:, :n] @ encoder_rollout
        if l in layers:
            out.append(PartMaps(None, shares[:, :n], r[:, :n], shares[:, n], note))
    return out


def crosses(part: str) -> bool:
    """Whether `part` reads its keys and values from the other side (the source): cross-attention."""
    return PARTS[part].keys != PARTS[part].queries


def part_steps(run: Seq2Seq, part: str, layer: int) -> LayerSteps:
    """Decoder layer `layer`'s attention of `part` in the pass `run`: its cross-attention or its self-attention."""
    return (run.cross if crosses(part) else run.decoder)[layer]


def part_note(part: str, measure: str) -> str:
    """What `measure`'s maps are on a decoder `part` (decoder, cross): NOTES' line."""
    return NOTES[crosses(part), measure]


def _decoder(model: Model) -> Decoder:
    dec = model.family.decoder
    if dec is None:
        raise ModelError(f"{model.name} is not an encoder–decoder ({model.model_type})")
    return dec


def _norm(model: Model, l: int, part: str, x, out, s: LayerSteps):
    # [m, d_model] the block's input and output -> (γ [d], centred) or None
    """The norm ALTI linearizes after attention + residual (post-LN), or None when the block's output is exactly
    x + Attn(·) (pre-norm); a block of another form is refused in one line."""
    if np.array_equal(out, s.output + x):
        return None
    name = _decoder(model).attention_norm
    if name is None:
        raise ConfigError(
            f"--contrib alti: the {part} attention block of {model.name} ({model.model_type}) is neither "
            "LN(y + Attn(y)) nor y + Attn(Norm(y)), which ALTI's decomposition here does not cover; "
            "norm and value-zeroing take it"
        )
    return model.weights[name(l, part) + ".weight"], True


def alti_self(model: Model, b: Block, l: int, budget: int) -> np.ndarray:  # -> [m, m]
    """ALTI of decoder layer l's self-attention block (Ferrando et al. 2022, §3)."""
    s = b.self_steps
    norm = _norm(model, l, "decoder", b.y, b.after_self, s)
    return alti_layer(s.weights, head_vectors(s.v, s.w_o), b.y, norm, budget)


def alti_of_cross(model: Model, b: Block, l: int, budget: int) -> np.ndarray:  # -> [m, n + 1]
    """ALTI+ of decoder layer l's cross-attention block: the source tokens' shares, then the residual's."""
    c = b.cross_steps
    norm = _norm(model, l, "cross", b.after_self, b.after_cross, c)
    return alti_cross(c.weights, head_vectors(c.v, c.w_o), b.after_self, norm, budget)


def value_zeroing(model: Model, run: Seq2Seq, l: int, cross: bool, budget: int) -> np.ndarray:
    # -> [m, n]: n = m (decoder) or the source's tokens (cross)
    """c_ij = 1 - cos(ỹ_i, ỹ_i^(¬j)), rows normalized (Mohebbi et al. 2023, §2): ỹ the output of decoder layer l,
    ỹ^(¬j) the same with token j's value vectors zeroed in every head of the self-attention (decoder token j) or
    of the cross-attention (source token j). The layer runs on copies, a batch of tokens at a time; only the zeroed
    attention runs inside `editing_values`, which both of a decoder layer's attentions answer to."""
    dec, b = _decoder(model), block(model, run, l)
    memory = run.encoder.final
    assert memory is not None  # a whole pass ends with the encoder's final block
    original = dec.mlp(model, l, b.after_cross)  # [m, d_model]
    m, d = original.shape
    n = len(memory) if cross else m
    per_copy = 8 * max(m, n) * max(4 * d, max(m, n) * int(model.hp["n_dec_head"]))  # a copy's widest arrays
    batch = max(1, min(n, budget // per_copy))
    distance = np.empty((m, n))  # [i, j]: output i, token j zeroed
    for start in range(0, n, batch):
        tokens = np.arange(start, min(n, start + batch))

        def zero(v, tokens=tokens):  # [B, h, n, d_v]: copy b loses token tokens[b]'s values
            v[np.arange(len(tokens)), :, tokens, :] = 0

        if cross:
            y = np.repeat(b.after_self[None], len(tokens), axis=0)  # [B, m, d_model]
            with editing_values(l, zero):
                y = dec.cross_attention(model, l, y, np.repeat(memory[None], len(tokens), axis=0))[0]
        else:
            with editing_values(l, zero):
                y = dec.self_attention(model, l, np.repeat(b.y[None], len(tokens), axis=0))[0]
            y = dec.cross_attention(model, l, y, memory)[0]
        zeroed = dec.mlp(model, l, y)  # [B, m, d_model]
        distance[:, tokens] = cosine_distance(original[None], zeroed).T
    if not np.isfinite(distance).all():
        raise ModelError(f"value zeroing of decoder layer {l} of {model.name} is not finite (an output of length 0)")
    if not cross and b.self_steps.masked is not None:
        distance[b.self_steps.masked[0]] = 0.0
    return normalize_rows(np.maximum(distance, 0.0))


#: How each computed measure of CONTRIBUTIONS is, on an encoder–decoder's decoder or cross part: measure ->
#: f(model, run, part, layers, bytes a block may take, the encoder's rollout where it composes one) -> a PartMaps
#: for each of the layers.
PART_MAPS = {"norm": _norm_maps, "alti": _alti_maps, "value-zeroing": _zeroing_maps}
