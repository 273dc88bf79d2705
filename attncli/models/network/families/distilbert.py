"""DistilBERT (Sanh et al. 2019) as transformers' modeling_distilbert.py computes it: BERT's post-LayerNorm
layers under other names, no token type embeddings, no pooler.

x = LN(word + position); per layer
    x = LN_sa(x + Attn(x) W_O + b_O);   x = LN_out(x + act(x W_1 + b_1) W_2 + b_2)
With sinusoidal_pos_embds the position table holds sin/cos rows (Vaswani et al. 2017), stored in the
checkpoint like a learned one, so both are read the same way. LayerNorm epsilon is fixed at 1e-12.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attncli.models.files.hparams import positive_int
from attncli.models.network.attention import LayerSteps, attend
from attncli.models.network.blocks import ACTIVATION_FNS, linear, norm, projections

from .registry import register

if TYPE_CHECKING:
    from attncli.models.network.model import Model


def embed(model: Model, ids, types=None):  # [n], [n] (ignored: no token types) -> [n, d_model]
    """LayerNorm(word + position 0..n-1); a sentence pair differs only by its [SEP] (no token types)."""
    w = model.weights
    x = w.rows("embeddings.word_embeddings.weight", ids) + w["embeddings.position_embeddings.weight"][: len(ids)]
    return norm(w, "embeddings.LayerNorm", x, model.eps)


def attention(model: Model, l: int, x) -> tuple:  # [n, d_model] -> [n, d_model], LayerSteps
    """Self-attention (q_lin, k_lin, v_lin, out_lin), residual, sa_layer_norm (TransformerBlock, first half)."""
    w, pre = model.weights, f"transformer.layer.{l}."
    names = (("q", "q_lin"), ("k", "k_lin"), ("v", "v_lin"), ("o", "out_lin"))
    p = projections(w, ((key, f"{pre}attention.{name}") for key, name in names))
    steps: LayerSteps = attend(l, x, p, model.n_head, model.d_k**-0.5, causal=False)
    return norm(w, pre + "sa_layer_norm", steps.output + x, model.eps), steps


def attention_norm(model: Model, l: int) -> str:
    """The LayerNorm after the attention and its residual (sa_layer_norm), for ALTI."""
    return f"transformer.layer.{l}.sa_layer_norm"


def mlp(model: Model, l: int, x):  # [n, d_model] -> [n, d_model]
    """lin2(act(lin1(x))), residual, output_layer_norm (TransformerBlock, second half)."""
    w, pre, act = model.weights, f"transformer.layer.{l}.", ACTIVATION_FNS[model.activation]
    h = linear(w, pre + "ffn.lin2", act(linear(w, pre + "ffn.lin1", x)))  # [n, d_ff] -> [n, d_model]
    return norm(w, pre + "output_layer_norm", h + x, model.eps)


def final(model: Model, x):  # [n, d_model] -> [n, d_model]
    return x


def input_note(layer: int) -> str:
    if layer == 0:
        return "X = LayerNorm(word + position embeddings): the input of layer 0 (DistilBERT has no token types)"
    return f"X: the output of layer {layer - 1}, the input of layer {layer}'s attention"


@register(
    "distilbert",
    model_types=("distilbert",),
    word="embeddings.word_embeddings.weight",
    positions="embeddings.position_embeddings.weight",
    vocab_files="vocab.txt",
    architectures={"DistilBert": "distilbert"},
    embed=embed,
    attention=attention,
    attention_norm=attention_norm,
    mlp=mlp,
    final=final,
    input_note=input_note,
)
def read_config(c: dict) -> tuple[dict, dict]:
    """DistilBERT hyper-parameters (transformers' DistilBertConfig defaults) and wanted tensor shapes."""
    d, ff = positive_int(c, "dim", 768), positive_int(c, "hidden_dim", 3072)
    hp = {
        "d_model": d,
        "n_head": positive_int(c, "n_heads", 12),
        "n_layer": positive_int(c, "n_layers", 6),
        "max_positions": positive_int(c, "max_position_embeddings", 512),
        "eps": 1e-12,  # nn.LayerNorm(config.dim, eps=1e-12) in every DistilBERT module
        "activation": c.get("activation", "gelu"),
        "causal": False,
        "positions_key": "max_position_embeddings",
    }
    wanted = {
        "embeddings.word_embeddings.weight": (None, d),
        "embeddings.position_embeddings.weight": (None, d),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
    }
    for l in range(hp["n_layer"]):
        p = f"transformer.layer.{l}."
        for name in ("q_lin", "k_lin", "v_lin", "out_lin"):
            wanted |= {f"{p}attention.{name}.weight": (d, d), f"{p}attention.{name}.bias": (d,)}
        wanted |= {
            p + "ffn.lin1.weight": (ff, d),
            p + "ffn.lin1.bias": (ff,),
            p + "ffn.lin2.weight": (d, ff),
            p + "ffn.lin2.bias": (d,),
        }
        for name in ("sa_layer_norm", "output_layer_norm"):
            wanted |= {p + name + ".weight": (d,), p + name + ".bias": (d,)}
    return hp, wanted
