"""What the causal tools (attncli.models.interpret.patch, .dla, .knockout) share: one pass that keeps every layer's
parts, and the metric they watch.

The metric is the logit difference at the last position (Wang et al. 2022, "Interpretability in the wild"):

    m = logit(A) − logit(B)        (logit(A) alone without a contrast B)

A decoder layer l turns the residual stream h_l into h_{l+1} = h_l + a_l + f_l: a_l its attention's part (the
heads' outputs merged, times W_O, plus b_O; Gemma 2's and OLMo 2's then RMSNormed), f_l its MLP's (GPT-NeoX's
parallel residual: both read h_l).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.errors import ConfigError
from attncli.models.network.model import Model
from attncli.models.network.unembed import next_logits, unembedding
from attncli.models.runs.vocab import token_record, vocab_token


@dataclass(frozen=True)
class Trace:
    """One pass over a text, every layer's parts kept (lists indexed by layer)."""

    hidden: list[np.ndarray]  # [n, d_model] the stream entering layer l (hidden[n_layer]: after the last layer)
    mid: list[np.ndarray]  # [n, d_model] the stream after layer l's attention block (the parallel MLP added too)
    merged: list[np.ndarray]  # [n, n_head · d_k] the heads' outputs A_h V_h side by side, as W_O reads them
    output: list[np.ndarray]  # [n, d_model] concat_h(A_h V_h) W_O + b_O, before any post-norm and the residual
    attn: list[np.ndarray]  # [n, d_model] a_l, the attention's part of the stream
    mlp: list[np.ndarray]  # [n, d_model] f_l, the MLP's part of the stream
    w_o: list[np.ndarray]  # [n_head · d_k, d_model]
    b_o: list[np.ndarray]  # [d_model]


def trace(model: Model, ids) -> Trace:  # [n] ids -> Trace
    """Run the family's blocks over `ids` (attncli.models.network.forward's loop), keeping each layer's parts."""
    f, parallel = model.family, bool(model.hp.get("parallel"))
    x = f.embed(model, np.asarray(ids, dtype=np.int64))  # [n, d_model]
    keep: dict[str, list] = {k: [] for k in ("hidden", "mid", "merged", "output", "attn", "mlp", "w_o", "b_o")}
    for l in range(model.n_layer):
        keep["hidden"].append(x)
        mid, steps = f.attention(model, l, x)
        after = f.mlp(model, l, mid)
        h, n, d_k = steps.out.shape
        keep["merged"].append(np.ascontiguousarray(steps.out.swapaxes(0, 1)).reshape(n, h * d_k))
        keep["output"].append(steps.output)
        attn = steps.output if f.attention_out is None else f.attention_out(model, l, steps.output)
        keep["attn"].append(attn)
        keep["mlp"].append(after - mid + (mid - x - attn if parallel else 0))  # NeoX's parallel MLP: in `attention`
        keep["mid"].append(mid)
        keep["w_o"].append(steps.w_o)
        keep["b_o"].append(steps.b_o)
        x = after
    keep["hidden"].append(x)
    return Trace(**keep)


def check_decoder(model: Model, command: str) -> None:
    """Before any pass: ConfigError for an encoder–decoder (its head reads its decoder's stream, not the text's)
    and for an encoder, ModelError for a decoder without its next-token head (attncli.models.network.unembed's
    `unembedding` says which)."""
    unembedding(model, f"attn {command} runs on a decoder-only model")


def metric_ids(model: Model, target: str, contrast: str | None) -> tuple[tuple[int, int | None], list[str]]:
    """--target A and --contrast B as token ids (each a token's text, ' Paris', or as the vocabulary writes it,
    'ĠParis': attncli.models.runs.vocab's `vocab_token`), and the notes a user must read (words that could name
    another token: `Mary` is the token 'Mary', not ' Mary'); the one place the causal commands read them."""
    named = [vocab_token(model, target, "--target")]
    named += [] if contrast is None else [vocab_token(model, contrast, "--contrast")]
    a, b = named[0].id, None if contrast is None else named[1].id
    if a == b:
        raise ConfigError(f"--target and --contrast are the same token ({target!r}): m would be 0 on every text")
    return (a, b), [t.note for t in named if t.note is not None]


def metric(model: Model, last, ids: tuple[int, int | None]) -> np.ndarray:  # [..., d_model] -> [...] float64
    """m = logit(A) − logit(B) (logit(A) without B) of the stream at the last position, the model's own logits."""
    out = next_logits(model, last).astype(np.float64)  # [..., vocab]
    a, b = ids
    return out[..., a] - (0.0 if b is None else out[..., b])


def metric_record(model: Model, ids: tuple[int, int | None], given: tuple[str, str | None], notes: list[str]) -> dict:
    """The JSON fields that say what m is: the target's and contrast's records (`token_record`: id, vocabulary
    form, text, the words given), and the notes on how the words were read (`metric_ids`)."""
    a, b = ids
    return {
        "target": token_record(model, a, given[0]),
        "contrast": None if b is None else token_record(model, b, given[1]),
        "notes": notes,
    }
