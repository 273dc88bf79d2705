"""The long-input paths of `attn show` and `attn compute`: outputs without weights, and float32.

Wires the blocked kernels (attncli.core.kernels) and the approximations (attncli.core.approx) into the
pipeline. Imported only when a run asks for `--no-weights` or `--dtype float32`: the default,
float64 with weights, is `attention.attend` exactly as it always was (bit for bit).

--no-weights (outputs only; never an n x n matrix, so memory is O(block·n + n·d) per thread):

    variant          how                                               masks
    scaled, dot      kernels.attention_outputs(q, k, v, scale / T)     causal
    cosine           the same on q/‖q‖ and k/‖k‖, scale 1 / T          causal
    multiplicative   the same on (q W) and k, scale 1 / T              causal
    linformer        approx.linformer(..., return_weights=False)       none
    performer        approx.performer(..., return_weights=False)       none (and --temperature 1)

  additive and gated score each pair with its own nonlinearity (no matrix product to block), and
  window/top-k need whole rows of scores: those are a ConfigError naming what is supported. The
  outputs equal the weights path's to rounding (1e-12 in float64: the kernels skip the row
  maximum when it provably cannot overflow, so the last bits may differ).

--dtype float32 (the weights path): X and the projection weights are rounded to float32 (or, in
`attn compute`, the given Q, K, V), and everything from Q, K, V on is float32: scores, weights,
outputs. scaled and dot without a mask or with causal go through kernels.attention_weights (the
weights made once, in place); the scores are one more float32 matrix product (the JSON shows
them). Every other variant and mask runs `attention.attend` on the float32 arrays, and its
results are rounded to float32 where a variant computes in float64.
"""

from __future__ import annotations

import numpy as np

from attncli.core.attention import (
    Attended,
    MultiHead,
    Projections,
    attend,
    check_shapes,
    merge_heads,
    split_heads,
)
from attncli.core.masks import Mask, apply_masks
from attncli.core.variants import Variant
from attncli.errors import DataError


def _dtype(name: str) -> np.dtype:
    return np.dtype(np.float32 if name == "float32" else np.float64)


def cast(name: str, a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`a` in `dtype`; DataError when a finite value does not fit (float32 ends at 3.4e38)."""
    with np.errstate(over="ignore"):
        out = np.asarray(a).astype(dtype, copy=False)
    if out.dtype != a.dtype and not np.isfinite(out).all() and np.isfinite(a).all():
        raise DataError(
            f"{name} holds values beyond {dtype}'s range (up to {float(np.abs(a).max()):.3g}): use --dtype float64"
        )
    return out


def _overflow(variant: Variant, dtype, q, k) -> DataError:
    top = max(float(np.abs(q).max()), float(np.abs(k).max()))
    return DataError(
        f"the {variant.name} scores overflow {dtype} (inputs up to {top:.3g}); rescale the inputs"
        + (" or use --dtype float64" if dtype == np.float32 else "")
    )


def outputs_only(
    q, k, v, variant: Variant, params, masks: tuple[Mask, ...], temperature: float, rng_seed, options: dict
) -> np.ndarray:
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> [h, m, d_v]
    """softmax(S) V without the weights, in q's dtype. `rng_seed` re-creates the generator `params` were
    drawn from (np.random.default_rng(rng_seed)), for approx.linformer and approx.performer to draw the same."""
    variant.check_outputs_only(masks, temperature)
    if variant.fast.linear is not None:
        out = variant.fast.linear(q, k, v, temperature, np.random.default_rng(rng_seed), options)
    elif variant.fast.kernel_qk is not None:
        from attncli.core.kernels import attention_outputs  # late: start-up (kernels: long inputs only)

        q, k, scale = variant.fast.kernel_qk(q, k, params)
        with np.errstate(over="ignore", invalid="ignore"):
            out = attention_outputs(q, k, v, scale / temperature, causal=bool(masks))
    if not np.isfinite(out).all():
        raise _overflow(variant, out.dtype, q, k)
    return out


def attend_long(
    q,
    k,
    v,
    variant: Variant,
    params,
    masks: tuple[Mask, ...],
    temperature: float,
    *,
    dtype: str,
    weights: bool,
    rng_seed=None,
    options: dict | None = None,
    trace: dict | None = None,
) -> Attended:
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> Attended (scores, masked, weights None with weights=False)
    """`attention.attend` for --no-weights and --dtype: the same checks, the same result, other paths."""
    check_shapes(q, k, v, variant.equal_width, f"variant {variant.name}")
    dt = _dtype(dtype)
    q, k, v = cast("Q", q, dt), cast("K", k, dt), cast("V", v, dt)
    params = {name: p.astype(dt) if p.dtype.kind == "f" else p for name, p in (params or {}).items()}
    if not weights:
        out = outputs_only(q, k, v, variant, params, masks, temperature, rng_seed, options or {})
        return Attended(None, None, None, out)
    if variant.fast.kernel_weights and variant.fast.kernel_qk and all(m.name in variant.fast.masks for m in masks):
        from attncli.core.kernels import attention_weights  # late: start-up (kernels: long inputs only)

        _, _, scale = variant.fast.kernel_qk(q, k, params)
        scale /= temperature
        with np.errstate(over="ignore", invalid="ignore"):
            # The scores as the kernel makes them: q times the scaled, transposed keys.
            scores = np.matmul(q, k.swapaxes(-1, -2) * dt.type(scale))  # [h, m, n]
            if not np.isfinite(scores).all():
                raise _overflow(variant, dt, q, k)
            w, out = attention_weights(q, k, v, scale, causal=bool(masks))
        return Attended(scores, apply_masks(scores, masks), w, out)
    a = attend(q, k, v, variant, params, masks, temperature, trace)
    return Attended(
        np.asarray(a.scores, dtype=dt), a.masked, np.asarray(a.weights, dtype=dt), a.out.astype(dt, copy=False)
    )


def multi_head_long(
    x_q,
    x_kv,
    proj: Projections,
    n_head: int,
    variant: Variant,
    params,
    masks: tuple[Mask, ...],
    config,
    rng_seed,
    trace: dict | None = None,
) -> MultiHead:
    # [m, d_model], [n, d_model] -> MultiHead(q [h, m, d_k], k, v, attended, output [m, d_model])
    """`attention.multi_head` in config.dtype, with or without the weights (config.weights)."""
    dt = _dtype(config.dtype)
    x_q, x_kv = cast("X", x_q, dt), cast("X", x_kv, dt)
    w_q, w_k, w_v, w_o = (
        cast(name, w, dt) for name, w in zip(("W_Q", "W_K", "W_V", "W_O"), (proj.w_q, proj.w_k, proj.w_v, proj.w_o))
    )
    q = split_heads(x_q @ w_q, n_head)
    k = split_heads(x_kv @ w_k, n_head)
    v = split_heads(x_kv @ w_v, n_head)
    attended = attend_long(
        q,
        k,
        v,
        variant,
        params,
        masks,
        config.temperature,
        dtype=config.dtype,
        weights=config.weights,
        rng_seed=rng_seed,
        options={"rank": config.rank, "features": config.features},
        trace=trace,
    )
    return MultiHead(q, k, v, attended, merge_heads(attended.out) @ w_o)
