"""BART (Lewis et al. 2020), Marian (Junczys-Dowmunt et al. 2018) and mBART (Liu et al. 2020) as transformers'
modeling_bart.py, modeling_marian.py and modeling_mbart.py compute them: BART and Marian post-LayerNorm,
mBART pre-LayerNorm with a final LayerNorm after its encoder.

x = word · embed_scale + position (BART, mBART: learned, rows offset by 2, then layernorm_embedding; Marian:
sinusoidal, sin in the first half of each vector, cos in the second); per encoder layer
    x = LN(x + SelfAttn(x));  x = LN(x + fc2(act(fc1(x))))             (mBART: x = x + SelfAttn(LN(x)); ...)
per decoder layer
    y = LN(y + CausalSelfAttn(y));  y = LN(y + CrossAttn(y, encoder output));  y = LN(y + fc2(act(fc1(y))))
mBART's encoder output is LN(x) (encoder.layer_norm). mBART has no decoder start token: transformers feeds
its decoder the labels with the last (the target language's code) wrapped round to the front.
The next-token logits of the decoder's output y (mBART: LN(y), decoder.layer_norm) are y Wᵀ + final_logits_bias,
W the word table (tied, the default) or lm_head; while generating, a position is offset by the tokens cached.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from attncli.models.files.hparams import ModelError, positive_int, token_id
from attncli.models.network.attention import LayerSteps, attend, offset
from attncli.models.network.blocks import ACTIVATION_FNS, dense, linear, norm, projections
from attncli.models.network.cross import Decoder

from .registry import register

if TYPE_CHECKING:
    from attncli.models.network.model import Model

PROJECTIONS = (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj"), ("o", "out_proj"))


def sinusoids(n_pos: int, dim: int) -> np.ndarray:  # -> [n_pos, dim] float32
    """Marian's position table: sin(pos / 10000^(2i/dim)) in the first half, cos in the second (float64, then float32).

    >>> sinusoids(2, 4).tolist()
    [[0.0, 0.0, 1.0, 1.0], [0.8414709568023682, 0.009999833069741726, 0.5403022766113281, 0.9999499917030334]]
    """
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    angles = pos / np.power(10000.0, 2 * (np.arange(dim) // 2) / dim)[None, :]  # [n_pos, dim]
    half = dim // 2 + dim % 2
    out = np.empty((n_pos, dim), dtype=np.float32)
    out[:, :half] = np.sin(angles[:, 0::2])
    out[:, half:] = np.cos(angles[:, 1::2])
    return out


def _embed(model: Model, ids, side: str):  # [n] -> [n, d_model]
    """word · embed_scale + position (from `offset()`: the decoder's tokens already cached); BART then
    layernorm_embedding."""
    w, hp = model.weights, model.hp
    x = w.rows("shared.weight", ids)
    if hp["embed_scale"] != 1.0:
        x = x * np.float32(hp["embed_scale"])
    start, n = offset(), len(ids)
    if hp["learned_positions"]:
        x = x + w[f"{side}.embed_positions.weight"][2 + start : 2 + start + n]  # BartLearnedPositionalEmbedding's 2
        return norm(w, f"{side}.layernorm_embedding", x, model.eps)
    return x + sinusoids(start + n, model.d_model)[start:]


def _projections(model: Model, pre: str) -> dict:
    return projections(model.weights, ((key, pre + name) for key, name in PROJECTIONS))


def _norm(model: Model, name: str, x):  # [n, d_model] -> [n, d_model]
    return norm(model.weights, name, x, model.eps)


def embed(model: Model, ids):  # [n] -> [n, d_model]
    return _embed(model, ids, "encoder")


def _attention(model: Model, pre: str, l: int, x, causal: bool, memory=None) -> tuple:
    # [n, d_model] (, memory [n_k, d_model]) -> [n, d_model], LayerSteps
    """One attention sub-layer `pre` (self_attn, encoder_attn) with its residual and `pre`_layer_norm: after
    the residual (post-LN: BART, Marian) or on the sub-layer's input (pre-LN: mBART). The decoder's attentions
    have the decoder's heads (decoder_attention_heads, which may differ from the encoder's)."""
    p, ln = _projections(model, pre + "."), pre + "_layer_norm"
    heads, d_k = (
        (model.n_head, model.d_k) if pre.startswith("encoder.") else (model.hp["n_dec_head"], model.hp["d_dec_k"])
    )
    if model.hp["pre_ln"]:
        steps: LayerSteps = attend(l, _norm(model, ln, x), p, heads, d_k**-0.5, causal, memory=memory)
        return x + steps.output, steps
    steps = attend(l, x, p, heads, d_k**-0.5, causal, memory=memory)
    return _norm(model, ln, steps.output + x), steps


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    return _attention(model, f"encoder.layers.{l}.self_attn", l, x, False)


def attention_norm(model: Model, l: int) -> str:
    """The encoder's LayerNorm after the attention and its residual (post-LN: BART, Marian), for ALTI."""
    return f"encoder.layers.{l}.self_attn_layer_norm"


def _mlp(model: Model, pre: str, x):  # [n, d_model] -> [n, d_model]
    w, act, ln = model.weights, ACTIVATION_FNS[model.activation], pre + "final_layer_norm"
    h = _norm(model, ln, x) if model.hp["pre_ln"] else x
    h = linear(w, pre + "fc2", act(linear(w, pre + "fc1", h)))
    return h + x if model.hp["pre_ln"] else _norm(model, ln, h + x)


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    return _mlp(model, f"encoder.layers.{l}.", x)


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return _norm(model, "encoder.layer_norm", x) if model.hp["pre_ln"] else x


def input_note(layer: int) -> str:
    if layer == 0:
        return "X = word · embed_scale + position embeddings (BART: then LayerNorm): the encoder's layer 0 input"
    return f"X: the output of encoder layer {layer - 1}, the input of layer {layer}'s self-attention"


def decoder_embed(model: Model, ids):  # [m] -> [m, d_model]
    return _embed(model, ids, "decoder")


def decoder_attention(model: Model, l: int, y) -> tuple:  # [m, d_model] -> [m, d_model], LayerSteps
    return _attention(model, f"decoder.layers.{l}.self_attn", l, y, True)


def cross_attention(model: Model, l: int, y, memory) -> tuple:  # [m, d], [n, d] -> [m, d], LayerSteps
    return _attention(model, f"decoder.layers.{l}.encoder_attn", l, y, False, memory)


def decoder_mlp(model: Model, l: int, y):  # [m, d_model] -> [m, d_model]
    return _mlp(model, f"decoder.layers.{l}.", y)


def decoder_logits(model: Model, y):  # [m, d_model] the last decoder layer's output -> [m, vocab]
    """(mBART: LN(y), decoder.layer_norm) Wᵀ + final_logits_bias (zeros when the checkpoint lacks it, as transformers'
    buffer), W the word table or the untied lm_head (load.py's `unembed`)."""
    w = model.weights
    assert model.unembed is not None  # encdec.check_head refuses a model without one
    if model.hp["pre_ln"]:
        y = _norm(model, "decoder.layer_norm", y)
    out = dense(y, w[model.unembed].T)
    return out + w["final_logits_bias"][0] if "final_logits_bias" in w else out


def decoder_note(layer: int, part: str) -> str:
    if part == "cross":
        return (
            f"X: decoder layer {layer}'s stream after its self-attention (the queries); "
            "X_context: the encoder's output (the keys and values)"
        )
    if layer == 0:
        return "X = word · embed_scale + position embeddings of the decoder input: the decoder's layer 0 input"
    return f"X: the output of decoder layer {layer - 1}, the input of layer {layer}'s self-attention"


def mbart_input_note(layer: int) -> str:
    where = (
        "word · embed_scale + position embeddings, then LayerNorm"
        if layer == 0
        else f"encoder layer {layer - 1}'s output"
    )
    return f"X = LN(x), x = {where}: the input of encoder layer {layer}'s self-attention (pre-LayerNorm)"


def mbart_decoder_note(layer: int, part: str) -> str:
    if part == "cross":
        return (
            f"X = LN(y), y = decoder layer {layer}'s stream after its self-attention (the queries); "
            "X_context: the encoder's output, after its final LayerNorm (the keys and values)"
        )
    where = "the decoder input's embeddings" if layer == 0 else f"decoder layer {layer - 1}'s output"
    return f"X = LN(y), y = {where}: the input of decoder layer {layer}'s self-attention (pre-LayerNorm)"


def decoder_attention_norm(layer: int, part: str) -> str:
    """The decoder's LayerNorm after an attention and its residual (post-LN: BART, Marian), for ALTI."""
    return f"decoder.layers.{layer}.{DECODER_ATTENTIONS[part]}_layer_norm"


DECODER_ATTENTIONS = {"decoder": "self_attn", "cross": "encoder_attn"}  # a decoder part -> its modules' prefix


BIAS: dict[str, tuple[int | None, ...]] = {"final_logits_bias": (1, None)}  # transformers' buffer, else zeros
DECODER = Decoder(
    decoder_embed,
    decoder_attention,
    cross_attention,
    decoder_mlp,
    decoder_note,
    decoder_logits,
    BIAS,
    attention_norm=decoder_attention_norm,
)
BLOCKS = dict(
    word="shared.weight",
    embed=embed,
    attention=attention,
    attention_norm=attention_norm,
    mlp=mlp,
    final=final,
    input_note=input_note,
    decoder=DECODER,
    head=("lm_head.weight", True),
)


LANGUAGE_CODE = r"[a-z]{2}_[A-Z]{2}"  # mBART's language codes: en_XX, fr_XX, zh_CN


def _read(c: dict, learned: bool, pre_ln: bool = False) -> tuple[dict, dict]:
    """Hyper-parameters (transformers' BartConfig / MarianConfig / MBartConfig defaults) and wanted tensor shapes."""
    if not pre_ln and (c.get("normalize_before") or c.get("add_final_layer_norm")):
        raise ModelError("config.json: pre-LayerNorm (normalize_before, add_final_layer_norm) is not supported")
    d = positive_int(c, "d_model", 1024)
    heads, dec_heads = positive_int(c, "encoder_attention_heads", 16), positive_int(c, "decoder_attention_heads", 16)
    if d % dec_heads:
        raise ModelError(f"d_model {d} is not divisible by {dec_heads} decoder heads")
    ffn, dec_ffn = positive_int(c, "encoder_ffn_dim", 4096), positive_int(c, "decoder_ffn_dim", 4096)
    pos = positive_int(c, "max_position_embeddings", 1024)
    hp = {
        "d_model": d,
        "n_head": heads,
        "n_dec_head": dec_heads,  # the decoder's self- and cross-attention heads
        "d_dec_k": d // dec_heads,
        "n_layer": positive_int(c, "encoder_layers", 12),
        "n_dec_layer": positive_int(c, "decoder_layers", 12),
        "max_positions": pos,
        "eps": 1e-5,
        "activation": c.get("activation_function", "gelu"),
        "causal": False,
        "positions_key": "max_position_embeddings",
        "embed_scale": math.sqrt(d) if c.get("scale_embedding") else 1.0,
        "learned_positions": learned,
        "pre_ln": pre_ln,
        # mBART: none, its decoder starts from the last label, the language code the target must give
        "decoder_start": None if pre_ln else token_id(c, "decoder_start_token_id", 2),
        **({"language_code": LANGUAGE_CODE} if pre_ln else {}),
    }
    wanted: dict = {"shared.weight": (None, d)}
    if pre_ln:
        wanted |= {f"{side}.layer_norm.{t}": (d,) for t in ("weight", "bias") for side in ("encoder", "decoder")}
    for side, layers, ff, parts in (
        ("encoder", hp["n_layer"], ffn, ("self_attn",)),
        ("decoder", hp["n_dec_layer"], dec_ffn, ("self_attn", "encoder_attn")),
    ):
        if learned:
            wanted |= {f"{side}.embed_positions.weight": (pos + 2, d)}
            wanted |= {f"{side}.layernorm_embedding.{t}": (d,) for t in ("weight", "bias")}
        for l in range(layers):
            pre = f"{side}.layers.{l}."
            for part in parts:
                for _, name in PROJECTIONS:
                    wanted |= {f"{pre}{part}.{name}.weight": (d, d), f"{pre}{part}.{name}.bias": (d,)}
                wanted |= {f"{pre}{part}_layer_norm.{t}": (d,) for t in ("weight", "bias")}
            wanted |= {pre + "fc1.weight": (ff, d), pre + "fc1.bias": (ff,), pre + "fc2.weight": (d, ff)}
            wanted |= {pre + "fc2.bias": (d,), **{f"{pre}final_layer_norm.{t}": (d,) for t in ("weight", "bias")}}
    return hp, wanted


@register("bart", model_types=("bart",), architectures={"Bart": "bart"}, **BLOCKS)
def read_bart(c: dict) -> tuple[dict, dict]:
    """BART: learned positions (offset 2) and layernorm_embedding."""
    return _read(c, learned=True)


@register("marian", model_types=("marian",), architectures={"Marian": "marian"}, **BLOCKS)
def read_marian(c: dict) -> tuple[dict, dict]:
    """Marian: sinusoidal positions, no embedding LayerNorm."""
    return _read(c, learned=False)


MBART_DECODER = Decoder(
    decoder_embed, decoder_attention, cross_attention, decoder_mlp, mbart_decoder_note, decoder_logits, BIAS
)


@register(
    "mbart",
    model_types=("mbart",),
    architectures={"MBart": "mbart"},
    **(BLOCKS | {"input_note": mbart_input_note, "decoder": MBART_DECODER}),
)
def read_mbart(c: dict) -> tuple[dict, dict]:
    """mBART: BART pre-LayerNorm, a LayerNorm after the encoder, a language code that starts the decoder."""
    return _read(c, learned=True, pre_ln=True)
