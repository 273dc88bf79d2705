"""`attn compute`: attention on matrices the user brings, as JSON or .npy.

    >>> from attncli.pipeline.matrices import parse_json
    >>> g = parse_json('{"q": [[1, 0], [0, 1]], "k": [[1, 0], [1, 1]], "v": [[10, 0], [0, 10]]}', "stdin")
    >>> r = compute(g, "dot")
    >>> r.weights[0].round(4).tolist()   # row 0: softmax([1, 1]); row 1: softmax([0, 1])
    [[0.5, 0.5], [0.2689, 0.7311]]
    >>> r.output.round(3).tolist()
    [[5.0, 5.0], [2.689, 7.311]]

One head and no embedding or projection: the given q, k, v are the head's Q, K, V,
and the result is an `AttentionResult` (tokens are the row indices) that every
renderer and format reads as it reads `attn show`'s. k defaults to q and v to k,
so `{"q": ...}` alone is self-attention on q. The learned variants' parameters
are seeded (`seed`), or given under "params" without the head axis, in the shapes
of `VARIANTS[name].param_shapes`.

Every error is a DataError (exit 1) or ConfigError (exit 2) naming the field and
its shape. Imports numpy and the core only; reads the files it is given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.core.attention import attend
from attncli.core.masks import parse_masks
from attncli.core.variants import VARIANTS, get_variant, variant_params
from attncli.errors import DataError
from attncli.pipeline.caption import caption_lines
from attncli.pipeline.config import RunConfig, check_options, check_ranges, check_temperature
from attncli.pipeline.limits import Limits, check, compute_bytes
from attncli.pipeline.matrices import SMALLER, Given, axes_of, json_array, shape_of
from attncli.pipeline.result import AttentionResult, Step, config_record
from attncli.pipeline.steps import mask_softmax_mix, score_step
from attncli.pipeline.tokenize import Tokens


@dataclass(frozen=True)
class GivenMatrices:
    """The source of `compute()`: what was given, in which shapes, from where; one head, no projection.

    >>> from attncli.pipeline.matrices import parse_json
    >>> r = compute(parse_json('{"q": [[1, 0], [0, 1]]}', "stdin"), "scaled")
    >>> r.source.caption(r)[1]
    'given Q [2, 2], K [2, 2], V [2, 2] (stdin); one head, no embedding, no projection'
    """

    q: tuple[int, ...]  # the shapes as attention used them
    k: tuple[int, ...]
    v: tuple[int, ...]
    file: str  # Given.source: "stdin", a file name, or the .npy names
    learned: tuple[str, ...]  # the variant's parameters (none for dot, scaled, cosine)
    params_given: bool  # True: the learned parameters came from the JSON, else seeded

    output_formula = "A V"
    matrix_name = None

    def caption(self, result: AttentionResult) -> list[str]:
        shapes = f"given Q {list(self.q)}, K {list(self.k)}, V {list(self.v)} ({self.file})"
        origin = "from the JSON" if self.params_given else f"seeded (--seed {result.config.seed}), not trained"
        learned = f"; {', '.join(self.learned)} {origin}" if self.learned else ""
        what = [f"{shapes}; one head, no embedding, no projection{learned}"]
        return caption_lines(result, what, "rows are queries, columns are keys (numbered from 0)")

    def config_record(self, result: AttentionResult) -> dict:
        return config_record(result.config, "none", "none", "none", result.config.seed)

    def steps(self, result: AttentionResult) -> list[Step]:
        """The given Q, K, V, the variant's scores, then mask, softmax and A V: the output is O = A V."""
        out = [
            Step("q", f"Q: the given q ({self.file})", result.q, ("head", "query", "dim")),
            Step("k", "K: the given k (q when absent)", result.k, ("head", "key", "dim")),
            Step("v", "V: the given v (k when absent)", result.v, ("head", "key", "dim")),
            score_step(result),
        ]
        return out + mask_softmax_mix(result, ", ".join(result.config.mask))

    def head_index(self, h: int) -> int:
        return h

    def heads_shown(self, result: AttentionResult) -> str:
        return ""  # one head

    def compare_note(self, label: str) -> str | None:
        return None

    def stats_unasked(self, result: AttentionResult) -> bool:
        return True


def check_params(raw: dict, variant_name: str, d_q: int, d_k: int, d_a: int | None) -> tuple[dict, dict]:
    """The JSON's "params" against the registry's shapes, without the head axis (d_a is read from them
    when --d-a is not given). Returns them with the head axis, as `attend` takes them, and the widths."""
    variant = VARIANTS[variant_name]
    names = list(variant.param_shapes)
    if not names and raw:
        raise DataError(f"variant {variant_name} has no parameters, but params gives {', '.join(raw)}")
    unknown = [p for p in raw if p not in names]
    missing = [p for p in names if p not in raw]
    if unknown:
        raise DataError(f"params.{unknown[0]} is not a parameter of {variant_name}: it takes {', '.join(names)}")
    if missing:
        raise DataError(f"params for {variant_name} must give {', '.join(names)}; missing {', '.join(missing)}")
    given = {p: json_array(raw[p], f"params.{p}", len(axes_of(variant.param_shapes[p]))) for p in names}
    dims = {"d_q": d_q, "d_k": d_k}
    if d_a is not None:
        dims["d_a"] = d_a
    for p in names:  # bind any width not known yet (d_a) from the first parameter that has it
        for axis, size in zip(axes_of(variant.param_shapes[p]), given[p].shape):
            if "+" not in axis and axis not in dims:
                dims[axis] = size
    out = {}
    for p in names:
        axes = axes_of(variant.param_shapes[p])
        want = [sum(dims[a.strip()] for a in axis.split("+")) for axis in axes]
        if list(given[p].shape) != want:
            widths = ", ".join(f"{a} = {n}" for a, n in dims.items())
            raise DataError(f"params.{p} must be [{', '.join(axes)}] = {want} ({widths}), got {shape_of(given[p])}")
        out[p] = given[p][None]  # add the head axis
    return out, dims


def compute(
    given: Given,
    variant: str = "scaled",
    mask: str | None = None,
    temperature: float = 1.0,
    seed: int = 0,
    d_a: int | None = None,
    limits: Limits | None = None,
    *,
    dtype: str = "float64",
    weights: bool = True,
    rank: int | None = None,
    features: int | None = None,
) -> AttentionResult:
    """Single-head attention on the given q, k, v: score, mask, softmax, A V. No embedding, no projection.

    The m × n attention is estimated first and refused past `limits` (default `Limits()`, 2 GiB).
    `dtype`, `weights` (False: outputs only), `rank` and `features` as in RunConfig (attncli.core.efficient)."""
    spec = get_variant(variant)
    masks = parse_masks(mask)
    check_temperature(temperature)
    check_ranges(seed=seed, d_a=d_a)
    options = check_options(variant, dtype, weights, masks, temperature, {"rank": rank, "features": features})
    q, k, v = given.q, given.k, given.v
    _check_widths(q, k, v, variant)
    (m, d_q), (n, d_k), d_v = q.shape, k.shape, v.shape[1]
    if given.params is not None:
        params, dims = check_params(given.params, variant, d_q, d_k, d_a)
        d_a = dims.get("d_a", d_a)  # the hidden width the parameters have
    else:
        params = variant_params(spec, np.random.default_rng([seed, 2]), 1, d_q, d_k, d_a or d_k, n, options)
    config = RunConfig(
        variant=variant,
        heads=1,
        dim=d_v,
        d_k=d_k,
        d_v=d_v,
        d_a=d_a or d_k,
        mask=tuple(str(x) for x in masks),
        seed=seed,
        temperature=temperature,
        dtype=dtype,
        weights=weights,
        rank=options.get("rank"),
        features=options.get("features"),
    )
    _check_memory(config, masks, m, n, d_q, Limits() if limits is None else limits)
    a, (q, k, v) = _attend(q, k, v, spec, params, masks, config, options)
    source = GivenMatrices(
        q.shape, k.shape, v.shape, given.source, tuple(spec.param_shapes), params_given=given.params is not None
    )
    return AttentionResult(
        text=None,
        context=None,
        tokens=_rows(m),
        context_tokens=_rows(n) if given.keys_given else None,
        config=config,
        x=q,
        x_context=k if given.keys_given else None,
        q=q[None],
        k=k[None],
        v=v[None],
        scores=a.scores,
        masked=a.masked,
        weights=a.weights,
        head_outputs=a.out,
        output=a.out[0],
        source=source,
        params=params,
    )


def _check_widths(q: np.ndarray, k: np.ndarray, v: np.ndarray, variant: str) -> None:  # [m, d_q] [n, d_k] [n, d_v]
    """DataError unless the variant can score q against k (equal widths where it needs them) and every key has
    one value."""
    if VARIANTS[variant].equal_width and q.shape[1] != k.shape[1]:
        others = ", ".join(name for name, other in VARIANTS.items() if not other.equal_width)
        raise DataError(
            f"variant {variant} needs q and k of equal width: q is {shape_of(q)}, k is {shape_of(k)}"
            + (f" ({others} allow different widths)" if others else "")
        )
    if k.shape[0] != v.shape[0]:
        raise DataError(
            f"k and v must have the same number of rows (one value per key): k is {shape_of(k)}, v is {shape_of(v)}"
        )


def _check_memory(config: RunConfig, masks: tuple, m: int, n: int, d_q: int, limits: Limits) -> None:
    """The m × n attention's memory, estimated and refused past `limits` before anything of that size exists."""
    assert config.d_k is not None and config.d_v is not None and config.d_a is not None  # filled in by compute
    estimate = compute_bytes(
        config.variant,
        masks,
        m,
        n,
        d_q,
        config.d_k,
        config.d_v,
        config.d_a,
        config.temperature,
        limits.output,
        weights=config.weights,
        dtype=config.dtype,
        rank=config.rank,
        features=config.features,
    )
    hint = RunConfig(variant=config.variant, mask=config.mask, dtype=config.dtype, weights=config.weights)
    check(estimate, limits, "attention on these matrices", hint, (SMALLER,))


def _attend(q, k, v, spec, params, masks, config: RunConfig, options: dict):
    """(the attention of one head, q, k and v in its dtype): the NumPy core in float64 with weights, else the
    long-input paths (float32, or the outputs only)."""
    # [m, d_q], [n, d_k], [n, d_v] -> (Attended, ([m, d_q], [n, d_k], [n, d_v]))
    if config.dtype == "float64" and config.weights:
        return attend(q[None], k[None], v[None], spec, params, masks, config.temperature), (q, k, v)
    from attncli.core.efficient import attend_long  # late: start-up (kernels: long inputs only, as in run)

    a = attend_long(
        q[None],
        k[None],
        v[None],
        spec,
        params,
        masks,
        config.temperature,
        dtype=config.dtype,
        weights=config.weights,
        rng_seed=[config.seed, 2],
        options=options,
    )
    return a, tuple(x.astype(a.out.dtype, copy=False) for x in (q, k, v))


def _rows(n: int) -> Tokens:
    """Row indices as tokens ("0", "1", ...): there is no text, so no offsets into one."""
    return Tokens(tuple(str(i) for i in range(n)), tuple(range(n)), ((0, 0),) * n, "none")
