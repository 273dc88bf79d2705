"""Activation patching (Meng et al. 2022, causal tracing; Heimersheim & Nanda 2024, "How to use and interpret
activation patching"): put one activation of a clean run into a corrupt run (denoising) or the reverse (noising),
and see how much of the metric m (attncli.models.causal) comes back:

    score = (m_patched − m_corrupt) / (m_clean − m_corrupt)

1 when the patch alone restores the clean metric, 0 when it changes nothing (noising: 1 when it changes nothing,
0 when it alone breaks the clean run). Both texts run once (`trace`); a patch of layer l reruns only layers l..L-1
(mlp-out: l+1..L-1), and every patch of one layer runs as one batch of copies of the stream (models/attention.py's
`padding`, nothing padded; a head's or a position's output replaced through `editing`, before W_O).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attncli.errors import ConfigError, DataError

from .attention import editing, padding
from .causal import Trace, metric, metric_ids, metric_record, trace
from .folder import check_run
from .head import unembedding
from .hparams import ModelError
from .model import Model
from .run import _encode
from .source import describe


@dataclass(frozen=True)
class What:
    """One kind of activation patched (the registry key is the --what value)."""

    means: str  # what is patched, in words
    axis: str  # "position" or "head": the second coordinate of a row
    copies: Callable[[Model, int], int]  # (model, n tokens) -> patches per layer
    patched: Callable  # (model, target Trace, source Trace, layer) -> the stream after the patch's last layer's edits,
    # [copies, d_model] at the last position


def _rest(model: Model, batch, start: int, edit: Callable | None = None):  # [B, n, d] entering `start` -> [B, d]
    """The copies in `batch` through layers start..L-1 (the `edit` of layer `start` before its W_O); the last row."""
    f = model.family
    with padding(np.zeros(batch.shape[:2], dtype=bool)), editing(start, edit) if edit else contextlib.nullcontext():
        for l in range(start, model.n_layer):
            batch, _ = f.attention(model, l, batch)
            batch = f.mlp(model, l, batch)
    return batch[:, -1]


def _copies(x, count: int):  # [n, d] -> [count, n, d]
    return np.repeat(x[None], count, axis=0)


def _resid(model: Model, tgt: Trace, src: Trace, l: int):  # -> [n, d_model]
    n = len(tgt.hidden[l])
    batch = _copies(tgt.hidden[l], n)
    at = np.arange(n)
    batch[at, at] = src.hidden[l]  # copy i: position i's stream entering layer l from the source
    return _rest(model, batch, l)


def _heads(model: Model, tgt: Trace, src: Trace, l: int):  # -> [n_head, d_model]
    d_k = tgt.merged[l].shape[1] // model.n_head

    def edit(merged) -> None:  # [n_head, n, n_head · d_k]: copy h's head h from the source
        for h in range(model.n_head):
            merged[h, :, h * d_k : (h + 1) * d_k] = src.merged[l][:, h * d_k : (h + 1) * d_k]

    return _rest(model, _copies(tgt.hidden[l], model.n_head), l, edit)


def _attn_out(model: Model, tgt: Trace, src: Trace, l: int):  # -> [n, d_model]
    n = len(tgt.hidden[l])

    def edit(merged) -> None:  # [n, n, n_head · d_k]: copy i's row i from the source, so its W_O output is too
        at = np.arange(n)
        merged[at, at] = src.merged[l]

    return _rest(model, _copies(tgt.hidden[l], n), l, edit)


def _mlp_out(model: Model, tgt: Trace, src: Trace, l: int):  # -> [n, d_model]
    n = len(tgt.hidden[l])
    batch = _copies(tgt.hidden[l + 1], n)
    at = np.arange(n)
    batch[at, at] += src.mlp[l] - tgt.mlp[l]  # copy i: the MLP's part at position i the source's
    return _rest(model, batch, l + 1)


WHAT = {
    "resid": What("the residual stream entering the layer, at one position", "position", lambda m, n: n, _resid),
    "heads": What(
        "one head's output (its slice of W_O's input), at every position", "head", lambda m, n: m.n_head, _heads
    ),
    "attn-out": What("the attention's output, at one position", "position", lambda m, n: n, _attn_out),
    "mlp-out": What("the MLP's output, at one position", "position", lambda m, n: n, _mlp_out),
}


def patch(model: Model, clean, corrupt, ids: tuple[int, int | None], what: str = "resid", noising: bool = False):
    # [n] ids twice -> {"m_clean", "m_corrupt", "scores": [n_layer, copies] float64}
    """The normalized score of every patch of `what` (`WHAT`), denoising (clean into corrupt) or `noising`."""
    if what not in WHAT:
        raise ConfigError(f"--what must be one of {', '.join(WHAT)}, not {what!r}")
    kind, n = WHAT[what], len(clean)
    copies = kind.copies(model, n)
    check_run(model.weights.nbytes, copies + 2, model.n_head, model.d_model, n, f"{model.name} patched")
    runs = {"clean": trace(model, clean), "corrupt": trace(model, corrupt)}
    m = {k: float(metric(model, t.hidden[-1][-1], ids)) for k, t in runs.items()}
    if not np.isfinite(list(m.values())).all():
        raise ModelError(f"the logits of {model.name} are not finite")
    if m["clean"] == m["corrupt"]:
        raise DataError(f"m is {m['clean']:.6g} on both texts: there is no difference for a patch to restore")
    tgt, src = (runs["clean"], runs["corrupt"]) if noising else (runs["corrupt"], runs["clean"])
    scores = np.empty((model.n_layer, copies))
    for l in range(model.n_layer):
        patched = metric(model, kind.patched(model, tgt, src, l), ids)  # [copies]
        if not np.isfinite(patched).all():
            raise ModelError(f"the logits of {model.name} patched at layer {l} are not finite")
        scores[l] = (patched - m["corrupt"]) / (m["clean"] - m["corrupt"])
    return {"m_clean": m["clean"], "m_corrupt": m["corrupt"], "scores": scores}


PATCH_SCHEMA = "attncli.patch/1"


def patch_document(
    model: Model,
    clean: str,
    corrupt: str,
    target: str,
    contrast: str | None = None,
    what: str = "resid",
    noising: bool = False,
) -> dict:
    """`attn patch -f json`: every patch's normalized score, a row {layer, position|head, score} each."""
    unembedding(model)  # an encoder, or no head: said before any pass
    a, b = _encode(model, clean, None)[0], _encode(model, corrupt, None)[0]
    if len(a) != len(b):
        raise ConfigError(
            f"CLEAN is {len(a)} tokens and --corrupt {len(b)} for {model.name}: patching needs the same number "
            "(attn tokens --model shows them)"
        )
    if what not in WHAT:
        raise ConfigError(f"--what must be one of {', '.join(WHAT)}, not {what!r}")
    ids = metric_ids(model, target, contrast)
    found = patch(model, a.ids, b.ids, ids, what, noising)
    axis = WHAT[what].axis
    rows = [
        {"layer": l, axis: i, "score": float(s)} for l, row in enumerate(found["scores"]) for i, s in enumerate(row)
    ]
    return {
        "schema": PATCH_SCHEMA,
        "text": clean,
        "corrupt": corrupt,
        "tokens": list(a.strings),
        "corrupt_tokens": list(b.strings),
        "model": model.name,
        "summary": describe(model),
        "what": what,
        "means": WHAT[what].means,
        "axis": axis,
        "direction": "noising" if noising else "denoising",
        "n_layer": model.n_layer,
        "n_head": model.n_head,
        **metric_record(model, ids, (target, contrast)),
        "position": len(a) - 1,
        "m_clean": found["m_clean"],
        "m_corrupt": found["m_corrupt"],
        "rows": rows,
    }
