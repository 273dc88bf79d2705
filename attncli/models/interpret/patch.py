"""Activation patching (Meng et al. 2022, causal tracing; Heimersheim & Nanda 2024, "How to use and interpret
activation patching"): put one activation of a clean run into a corrupt run (denoising) or the reverse (noising),
and see how much of the metric m (attncli.models.interpret.causal) comes back:

    score = (m_patched − m_corrupt) / (m_clean − m_corrupt)

1 when the patch alone restores the clean metric, 0 when it changes nothing (noising: 1 when it changes nothing,
0 when it alone breaks the clean run). Both texts run once (`trace`); a patch of layer l reruns only layers l..L-1
(mlp-out: l+1..L-1), and the patches of one layer run as one batch of copies of the stream
(models/network/attention.py's `padding`, nothing padded; a head's or a position's output replaced through `editing`,
before W_O), or as a few when ATTN_MAX_MEMORY holds fewer copies (`batch_size`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attncli.errors import ConfigError, DataError
from attncli.models.files.folder import check_run
from attncli.models.files.hparams import ModelError
from attncli.models.interpret.causal import Trace, check_decoder, metric, metric_ids, metric_record, trace
from attncli.models.network.attention import editing, padding
from attncli.models.network.model import Model
from attncli.models.runs.run import _encode
from attncli.models.runs.source import describe
from attncli.pipeline.budget import max_bytes_from


@dataclass(frozen=True)
class What:
    """One kind of activation patched (the registry key is the --what value)."""

    means: str  # what is patched, in words
    axis: str  # "position" or "head": the second coordinate of a row
    copies: Callable[[Model, int], int]  # (model, n tokens) -> patches per layer
    patched: Callable  # (model, target Trace, source Trace, layer, which [B] positions or heads) -> [B, d_model]:
    # the last position's stream after the last layer, copy b patched at which[b]


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


def _resid(model: Model, tgt: Trace, src: Trace, l: int, which):  # which [B] positions -> [B, d_model]
    batch = _copies(tgt.hidden[l], len(which))
    batch[np.arange(len(which)), which] = src.hidden[l][which]  # copy b: position which[b] from the source
    return _rest(model, batch, l)


def _heads(model: Model, tgt: Trace, src: Trace, l: int, which):  # which [B] heads -> [B, d_model]
    d_k = tgt.merged[l].shape[1] // model.n_head

    def edit(merged) -> None:  # [B, n, n_head · d_k]: copy b's head which[b] from the source
        for b, h in enumerate(which):
            merged[b, :, h * d_k : (h + 1) * d_k] = src.merged[l][:, h * d_k : (h + 1) * d_k]

    return _rest(model, _copies(tgt.hidden[l], len(which)), l, edit)


def _attn_out(model: Model, tgt: Trace, src: Trace, l: int, which):  # which [B] positions -> [B, d_model]
    def edit(merged) -> None:  # [B, n, n_head · d_k]: copy b's row which[b] from the source, so its W_O output too
        merged[np.arange(len(which)), which] = src.merged[l][which]

    return _rest(model, _copies(tgt.hidden[l], len(which)), l, edit)


def _mlp_out(model: Model, tgt: Trace, src: Trace, l: int, which):  # which [B] positions -> [B, d_model]
    batch = _copies(tgt.hidden[l + 1], len(which))
    batch[np.arange(len(which)), which] += (src.mlp[l] - tgt.mlp[l])[which]  # the MLP's part: the source's
    return _rest(model, batch, l + 1)


WHAT = {
    "resid": What("the residual stream entering the layer, at one position", "position", lambda m, n: n, _resid),
    "heads": What(
        "one head's output (its slice of W_O's input), at every position", "head", lambda m, n: m.n_head, _heads
    ),
    "attn-out": What("the attention's output, at one position", "position", lambda m, n: n, _attn_out),
    "mlp-out": What("the MLP's output, at one position", "position", lambda m, n: n, _mlp_out),
}


def batch_size(model: Model, n: int, copies: int) -> int:
    """The most copies of an n-token text one batch may hold within ATTN_MAX_MEMORY (priced as `check_run` prices a
    pass: the copies as so many layers, and the two traced runs), at most `copies`; ModelError when not even one
    fits."""
    what = f"{model.name} patched"
    model.weights.fit(check_run(model.weights.least(), 1 + 2, model.n_head, model.d_model, n, what))
    budget = max_bytes_from(os.environ)
    if budget is None:
        return copies
    layer = (3 * model.n_head * n * n + 8 * n * model.d_model) * 4  # check_run's price of one layer
    return int(max(1, min(copies, (budget - model.weights.least()) // layer - 2)))  # the weights streamed at least


def patch(model: Model, clean, corrupt, ids: tuple[int, int | None], what: str = "resid", noising: bool = False):
    # [n] ids twice -> {"m_clean", "m_corrupt", "scores": [n_layer, copies] float64}
    """The normalized score of every patch of `what` (`WHAT`), denoising (clean into corrupt) or `noising`."""
    if what not in WHAT:
        raise ConfigError(f"--what must be one of {', '.join(WHAT)}, not {what!r}")
    kind, n = WHAT[what], len(clean)
    copies = kind.copies(model, n)
    chunk = batch_size(model, n, copies)
    runs = {"clean": trace(model, clean), "corrupt": trace(model, corrupt)}
    m = {k: float(metric(model, t.hidden[-1][-1], ids)) for k, t in runs.items()}
    if not np.isfinite(list(m.values())).all():
        raise ModelError(f"the logits of {model.name} are not finite")
    if m["clean"] == m["corrupt"]:
        raise DataError(f"m is {m['clean']:.6g} on both texts: there is no difference for a patch to restore")
    tgt, src = (runs["clean"], runs["corrupt"]) if noising else (runs["corrupt"], runs["clean"])
    scores = np.empty((model.n_layer, copies))
    for l in range(model.n_layer):
        every = np.arange(copies)
        streams = [kind.patched(model, tgt, src, l, every[i : i + chunk]) for i in range(0, copies, chunk)]
        patched = metric(model, np.concatenate(streams), ids)  # [copies]
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
    check_decoder(model, "patch")
    a, b = _encode(model, clean, None)[0], _encode(model, corrupt, None)[0]
    if len(a) != len(b):
        raise ConfigError(
            f"CLEAN is {len(a)} tokens and --corrupt {len(b)} for {model.name}: patching needs the same number "
            "(attn tokens --model shows them)"
        )
    if what not in WHAT:
        raise ConfigError(f"--what must be one of {', '.join(WHAT)}, not {what!r}")
    ids, notes = metric_ids(model, target, contrast)
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
        "texts": list(a.text_of()),
        "special": list(a.special),
        "corrupt_tokens": list(b.strings),
        "model": model.name,
        "summary": describe(model),
        "what": what,
        "means": WHAT[what].means,
        "axis": axis,
        "direction": "noising" if noising else "denoising",
        "n_layer": model.n_layer,
        "n_head": model.n_head,
        **metric_record(model, ids, (target, contrast), notes),
        "position": len(a) - 1,
        "m_clean": found["m_clean"],
        "m_corrupt": found["m_corrupt"],
        "rows": rows,
    }
