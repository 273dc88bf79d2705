"""Direct logit attribution (Elhage et al. 2021, "A mathematical framework for transformer circuits"): the final
stream at the last position is a sum of parts, the embeddings, each head's output through W_O, the attention's
bias b_O and each MLP's output, so with the final norm's scale frozen at its value in the full run the norm is
linear and the metric splits exactly:

    N(x) = g ⊙ P x / σ(x) + b           (P: centring for LayerNorm, identity for RMSNorm; σ(x) frozen)
    m    = Σ_parts (g ⊙ P c / σ(x)) · (W_U[A] − W_U[B])  +  b · (W_U[A] − W_U[B])

(the final norm's bias b its own part). A layer whose attention output is RMSNormed before the residual (Gemma 2,
OLMo 2) has that norm's scale frozen the same way, at the attention's output of the full run. m is before Gemma 2's
final soft-cap, which is not linear: `capped` says so.
"""

from __future__ import annotations

import numpy as np

from attncli.models.files.hparams import ModelError
from attncli.models.interpret.causal import Trace, check_decoder, metric_ids, metric_record, trace
from attncli.models.network.forward import forward
from attncli.models.network.model import Model
from attncli.models.network.unembed import logits, unembedding
from attncli.models.runs.run import _encode
from attncli.models.runs.source import describe
from attncli.pipeline.tokenize import Tokens

EPS32 = float(np.finfo(np.float32).eps) / 2  # the unit roundoff of float32


def frozen_final(model: Model, x):  # x [d_model] the last stream -> (L: [..., d] -> [..., d] float64, b [d])
    """The final norm's linear part with its scale frozen at x, and its bias b: N(x) = L(x) + b.

    Read from the family's own `final` (no weight named): b = N(0); centring when N of a constant row is b;
    g from N of y = (1, −1, 1, ...), whose mean is 0 and mean square 1, so N(y) − b = g ⊙ y / √(1 + eps).
    """
    final, d = model.family.final, model.d_model
    b = final(model, np.zeros((1, d), np.float32))[0].astype(np.float64)
    centres = np.array_equal(final(model, np.ones((1, d), np.float32))[0].astype(np.float64), b)
    y = np.where(np.arange(d) % 2 == 0, 1.0, -1.0).astype(np.float32)
    g = (final(model, y[None])[0].astype(np.float64) - b) * y * np.sqrt(1.0 + model.eps)

    def centre(c):  # [..., d] -> [..., d] float64
        c = np.asarray(c, dtype=np.float64)
        return c - c.mean(axis=-1, keepdims=True) if centres else c

    scale = 1.0 / np.sqrt(np.mean(np.square(centre(x))) + model.eps)  # 1 / σ(x), frozen
    return (lambda c: g * centre(c) * scale), b


def parts(
    model: Model, run: Trace
) -> list[tuple[dict[str, object], np.ndarray]]:  # -> [(row fields, [d_model] float64)]
    """The parts the last position's final stream sums to: the embeddings, then per layer each head (its slice of
    W_O's input times its rows of W_O), the attention's bias b_O (where it has one) and the MLP."""
    out: list[tuple[dict[str, object], np.ndarray]] = [
        ({"layer": None, "component": "embeddings", "head": None}, run.hidden[0][-1].astype(np.float64))
    ]
    for l in range(model.n_layer):
        merged, w_o = run.merged[l][-1].astype(np.float64), run.w_o[l].astype(np.float64)  # [H d_k], [H d_k, d]
        d_k = len(merged) // model.n_head
        frozen = np.ones(model.d_model)  # [d]: how the attention's output enters the stream
        if model.family.attention_out is not None:  # RMSNorm(o) = o ⊙ g / rms(o): its scale frozen at the run's o
            o, a = run.output[l][-1].astype(np.float64), run.attn[l][-1].astype(np.float64)
            frozen = np.divide(a, o, out=np.zeros_like(a), where=o != 0)
        for h in range(model.n_head):
            cut = slice(h * d_k, (h + 1) * d_k)
            out.append(({"layer": l, "component": "head", "head": h}, (merged[cut] @ w_o[cut]) * frozen))
        if np.any(run.b_o[l]):
            out.append(({"layer": l, "component": "attn bias", "head": None}, run.b_o[l] * frozen))
        out.append(({"layer": l, "component": "mlp", "head": None}, run.mlp[l][-1].astype(np.float64)))
    return out


def dla(model: Model, ids, metric: tuple[int, int | None]) -> dict:
    # [n] ids -> {"m", "sum", "difference", "tolerance", "rows": [{layer, component, head, dla}]}
    """Each part's direct contribution to m at the last position, and the check that they sum to m."""
    run = trace(model, ids)
    last = run.hidden[-1][-1]  # [d_model] the final stream
    a, b = metric
    w = model.weights.rows(unembedding(model), np.array([a] if b is None else [a, b]))  # [1 or 2, d_model]
    u = w[0].astype(np.float64) - (0.0 if b is None else w[1].astype(np.float64))  # [d_model]
    frozen, bias = frozen_final(model, last)
    m = float(model.family.final(model, last[None])[0].astype(np.float64) @ u)  # the model's m, before any cap
    found = parts(model, run)
    through = frozen(np.stack([c for _, c in found]))  # [parts, d_model]
    values = through @ u  # [parts]
    rows = [{**fields, "dla": float(v)} for (fields, _), v in zip(found, values)]
    if np.any(bias):
        rows.append({"layer": None, "component": "final norm bias", "head": None, "dla": float(bias @ u)})
    total = float(values.sum() + bias @ u)
    # float32 rounding: the stream added up over the parts (2 per layer) and each part through the norm and W_U, a
    # dot product of d_model terms, each error at most γ_k of the terms' magnitudes (Higham, ch. 3)
    k = 2 * model.n_layer + 2 + model.d_model + 8
    tolerance = k * EPS32 / (1 - k * EPS32) * float((np.abs(through) @ np.abs(u)).sum())
    if not np.isfinite(total) or abs(total - m) > tolerance:
        raise ModelError(
            f"the parts of {model.name}'s m sum to {total:.6g}, not {m:.6g} (more than float32 rounding, "
            f"{tolerance:.2g}): a family whose stream attn does not split"
        )
    return {"m": m, "sum": total, "difference": total - m, "tolerance": tolerance, "rows": rows}


DLA_SCHEMA = "attncli.dla/1"


def dla_document(
    model: Model, text: str, target: str, contrast: str | None = None, tokens: Tokens | None = None
) -> dict:
    """`attn dla -f json`: each part's direct contribution to m, a row {layer, component, head, dla} each."""
    check_decoder(model, "dla")
    tokens = _encode(model, text, None)[0] if tokens is None else tokens.prompt()
    ids, notes = metric_ids(model, target, contrast)
    found = dla(model, tokens.ids, ids)
    cap = model.hp.get("logit_softcap")
    return {
        "schema": DLA_SCHEMA,
        "text": text,
        "tokens": list(tokens.strings),
        "texts": list(tokens.text_of()),
        "special": list(tokens.special),
        "model": model.name,
        "summary": describe(model),
        "n_layer": model.n_layer,
        "n_head": model.n_head,
        **metric_record(model, ids, (target, contrast), notes),
        "position": len(tokens) - 1,
        "capped": None if cap is None else f"m is before the model's final soft-cap ({cap} · tanh(logit / {cap}))",
        **found,
    }


def own_next(model: Model, tokens: Tokens) -> str:
    """The model's most probable next token after `tokens` (its prompt: before any tokens it wrote), as the
    vocabulary writes it: the target `attn explore` attributes (its d key), one pass of the model."""
    check_decoder(model, "dla")
    run = forward(model, tokens.prompt().ids)
    assert run.final is not None  # a full pass
    return model.tokenizer.id_to_token(int(np.argmax(logits(model, run.final[-1]))))
