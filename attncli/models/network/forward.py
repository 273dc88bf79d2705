"""The forward pass every family shares: embed, then per layer attention and MLP, then the final norm.

The blocks come from the model's family (attncli/models/network/families/); `forward` is the one loop
that runs them, stops after the attention of the last layer asked for, and keeps what
`attn show`, `attn steps`, `attn heads` and `--rollout` read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attncli.core.threads import blas_threads, threads_for
from attncli.models.files.hparams import ModelError
from attncli.models.network import parallel
from attncli.models.network.attention import LayerSteps
from attncli.models.network.model import Model, check_layer
from attncli.models.network.readahead import ReadAhead

# ---- the whole pass -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Forward:
    """What one pass computed. Lists are indexed by layer, 0..last computed layer."""

    weights: list[np.ndarray]  # per layer [n_head, n, n], the model's attention (output_attentions)
    hidden: list[np.ndarray]  # per layer [n, d_model], the residual stream entering it (hidden_states)
    steps: LayerSteps | None  # every stage of `steps_layer`, if one was asked for
    final: np.ndarray | None  # [n, d_model] after the last layer (GPT-2: after ln_f); None if stopped early


def forward(
    model: Model,
    ids,
    upto_layer: int | None = None,
    steps_layer: int | None = None,
    types=None,
    threads: int = 1,
    on_layer: Callable[[LayerSteps], None] | None = None,
) -> Forward:
    # [n] token ids, [n] token types (a pair's) -> Forward (weights: layers x [n_head, n, n])
    """Run the model on `ids` (from `encode`), through the attention of `upto_layer` (default: all layers).

    `types` are a sentence pair's token type ids (encoders only; None: every token type 0).

    With `upto_layer`, later layers and that layer's own MLP are never computed (nor their weights
    read). `steps_layer` keeps every stage of that layer's attention (it extends the pass if needed);
    `on_layer(steps)` is given every layer's stages as the pass makes them (the page keeps a short text's).
    Layers may be negative (counted from the end). BLAS runs on as many threads as the size of the
    products pays for (`attncli.core.threads`), at most `threads` (one unless asked: see there why), and
    the GELU and softmax passes between the products on as many (`attncli.models.network.parallel`).
    """
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    work = ids.size * model.d_model * 4 * model.d_model  # about a layer's largest product (MLP, d_ff ≈ 4 d_model)
    n = threads_for(work, ceiling=threads)
    with blas_threads(n), parallel.threads(n):  # BLAS for the products, `parallel` for the passes between
        ahead = n == 1 and model.weights.overlaps and model.weights.reads_ahead
        return _forward(model, ids, upto_layer, steps_layer, types, ahead=ahead, on_layer=on_layer)


def _forward(
    model: Model, ids, upto_layer: int | None, steps_layer: int | None, types, ahead: bool, on_layer=None
) -> Forward:
    # ahead: whether a second thread reads the tensors of the next layer while this one computes (readahead.py):
    # not when BLAS has both cores already, nor for files whose reading holds the GIL (`Weights.overlaps`), nor when
    # the memory budget has no room for a layer read ahead of a streamed one (`Weights.reads_ahead`)
    if ids.size == 0:
        raise ModelError("no token ids to run")
    if ids.size > model.max_positions:
        raise ModelError(f"{ids.size} tokens, but {model.name} takes at most {model.max_positions}")
    if ids.min() < 0 or ids.max() >= model.vocab_size:
        bad = ids[(ids < 0) | (ids >= model.vocab_size)][0]
        raise ModelError(f"token id {bad} is outside the embedding table of {model.name} ({model.vocab_size} rows)")
    last = model.n_layer - 1 if upto_layer is None else check_layer(model, upto_layer)
    if steps_layer is not None:
        steps_layer = check_layer(model, steps_layer)
        last = max(last, steps_layer)
    f = model.family
    embed, attention, mlp, final = f.embed, f.attention, f.mlp, f.final
    x = embed(model, ids) if types is None else embed(model, ids, types)  # [n, d_model]
    weights, hidden, steps = [], [], None
    with ReadAhead(model.weights, last if ahead else 0, last_mlp=upto_layer is None) as reader:
        for l in range(last + 1):
            hidden.append(x)
            with reader.block(l, "attention"):
                x, layer_steps = attention(model, l, x)
            weights.append(layer_steps.weights)
            if on_layer is not None:
                on_layer(layer_steps)
            if l == steps_layer:
                steps = layer_steps
            if l == last and upto_layer is not None:
                break  # the MLP of the last wanted layer does not change its attention
            with reader.block(l, "mlp"):
                x = mlp(model, l, x)
    return Forward(weights=weights, hidden=hidden, steps=steps, final=final(model, x) if upto_layer is None else None)
