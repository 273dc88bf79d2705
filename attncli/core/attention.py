"""The attention core: score variants, masks, a stable softmax, heads.

Shapes: h heads, m queries, n keys, widths d_k (queries and keys), d_v (values).
Rows are queries, columns are keys, always.

A 2x2 example you can check on paper (scaled dot product, d_k = 1):

    >>> q = np.array([[[1.0], [0.0]]]); k = np.array([[[1.0], [0.0]]]); v = np.array([[[10.0], [20.0]]])
    >>> r = attend(q, k, v, VARIANTS["scaled"])
    >>> np.round(r.weights, 4).tolist()   # row 0: softmax([1, 0]); row 1: softmax([0, 0])
    [[[0.7311, 0.2689], [0.5, 0.5]]]
    >>> np.round(r.out, 4).tolist()       # 0.7311*10 + 0.2689*20; 0.5*10 + 0.5*20
    [[[12.6894], [15.0]]]

`VARIANTS` and `MASKS` are the registries that the CLI, `attn variants`, the
JSON and the tests all read: adding a variant is adding one entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from attncli.errors import ConfigError, DataError

Params = dict[str, np.ndarray]


# ---- score variants -------------------------------------------------------------------------------


def _qk(q, k):  # [h, m, d], [h, n, d] -> [h, m, n]
    return np.matmul(q, k.swapaxes(-1, -2))


def dot_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = qᵀk"""
    return _qk(q, k)


def scaled_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = qᵀk / √d"""
    qk = _qk(q, k)
    if trace is not None:
        trace["qk"] = qk
    return qk / math.sqrt(q.shape[-1])


def _norm_and_unit(x):  # [..., d] -> [...], [..., d]   (zero vectors stay zero)
    """‖x‖ and x/‖x‖ without overflow or underflow: each vector is first divided by its largest |entry|.

    (np.linalg.norm squares the entries: 1e-170 squares to 0 and 1e200 to inf.)
    """
    big = np.abs(x).max(axis=-1, keepdims=True)
    y = np.divide(x, big, out=np.zeros_like(x), where=big > 0)  # entries in [-1, 1], one of them ±1
    norm_y = np.linalg.norm(y, axis=-1, keepdims=True)  # in [1, √d], or 0 for a zero vector
    return (big * norm_y)[..., 0], np.divide(y, norm_y, out=np.zeros_like(y), where=norm_y > 0)


def cosine_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = qᵀk / (‖q‖‖k‖); a zero vector scores 0 against everything."""
    q_norm, q_unit = _norm_and_unit(q)
    k_norm, k_unit = _norm_and_unit(k)
    if trace is not None:
        trace["qk"] = _qk(q, k)
        trace["q_norm"] = q_norm
        trace["k_norm"] = k_norm
    return np.clip(_qk(q_unit, k_unit), -1.0, 1.0)


def multiplicative_score(q, k, params, trace=None):  # [h, m, d_q], [h, n, d_k] -> [h, m, n]
    """s = qᵀ W k (Luong "general")"""
    qw = np.matmul(q, params["W"])  # [h, m, d_k]
    if trace is not None:
        trace["qW"] = qw
    return _qk(qw, k)


def additive_score(q, k, params, trace=None):  # [h, m, d_q], [h, n, d_k] -> [h, m, n]
    """s = vᵀ tanh(W₁q + W₂k + b) (Bahdanau)"""
    a = np.matmul(q, params["W1"].swapaxes(-1, -2)) + params["b"][:, None, :]  # [h, m, d_a]
    c = np.matmul(k, params["W2"].swapaxes(-1, -2))  # [h, n, d_a]
    h, m, d_a = a.shape
    n = c.shape[1]
    scores = np.empty((h, m, n))
    hidden = np.empty((h, m, n, d_a)) if trace is not None else None
    rows = max(1, 2**22 // max(1, h * n * d_a))  # bound the [h, rows, n, d_a] temporary to ~32 MB
    for i in range(0, m, rows):
        t = np.tanh(a[:, i : i + rows, None, :] + c[:, None, :, :])  # [h, rows, n, d_a]
        if hidden is not None:
            hidden[:, i : i + rows] = t
        scores[:, i : i + rows] = np.einsum("hrna,ha->hrn", t, params["v"])
    if trace is not None:
        trace["W1q + b"] = a
        trace["W2k"] = c
        trace["tanh(W1q + W2k + b)"] = hidden
    return scores


def _sigmoid(z):  # any -> same shape; stable for large |z|
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def gated_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = σ(W_g [q; k]) · qᵀk"""
    d_q = q.shape[-1]
    w_g = params["W_g"]  # [h, d_q + d_k]
    gate = _sigmoid(
        np.einsum("hmd,hd->hm", q, w_g[:, :d_q])[:, :, None] + np.einsum("hnd,hd->hn", k, w_g[:, d_q:])[:, None, :]
    )  # [h, m, n]
    qk = _qk(q, k)
    if trace is not None:
        trace["gate"] = gate
        trace["qk"] = qk
    return gate * qk


def linformer_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = qᵀk̄_g / √d: each key scored through the mean of its group (attncli.core.approx_variants)"""
    from attncli.core.approx_variants import linformer_score as score

    return score(q, k, params, trace)


def performer_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = ln φ(q)·φ(k): the log of the FAVOR+ estimate of e^(qᵀk/√d) (attncli.core.approx_variants)"""
    from attncli.core.approx_variants import performer_score as score

    return score(q, k, params, trace)


def _no_params(rng, n_head, d_q, d_k, d_a) -> Params:
    return {}


def _multiplicative_params(rng, n_head, d_q, d_k, d_a) -> Params:
    return {"W": rng.standard_normal((n_head, d_q, d_k)) / math.sqrt(d_q)}


def _additive_params(rng, n_head, d_q, d_k, d_a) -> Params:
    return {
        "W1": rng.standard_normal((n_head, d_a, d_q)) / math.sqrt(d_q),
        "W2": rng.standard_normal((n_head, d_a, d_k)) / math.sqrt(d_k),
        "b": 0.1 * rng.standard_normal((n_head, d_a)),
        "v": rng.standard_normal((n_head, d_a)),
    }


def _gated_params(rng, n_head, d_q, d_k, d_a) -> Params:
    return {"W_g": rng.standard_normal((n_head, d_q + d_k)) / math.sqrt(d_q + d_k)}


def _linformer_params(rng, n_head, d_q, d_k, d_a, *, n_keys, rank=8) -> Params:
    from attncli.core.approx_variants import linformer_params

    return linformer_params(rng, n_head, d_q, d_k, d_a, n_keys=n_keys, rank=rank)


def _performer_params(rng, n_head, d_q, d_k, d_a, *, n_keys=None, features=64) -> Params:
    from attncli.core.approx_variants import performer_params

    return performer_params(rng, n_head, d_q, d_k, d_a, features=features)


@dataclass(frozen=True)
class Variant:
    """One way to score a query against a key. `score(q, k, params, trace) -> [h, m, n]`.

    `param_shapes` names each learned parameter's axes (h heads, widths d_q, d_k, d_a);
    `notes` are what a user should know: which properties hold, how it differs from the seeds.
    """

    name: str
    formula: str
    summary: str
    paper: str
    score: Callable
    make_params: Callable = _no_params  # (rng, n_head, d_q, d_k, d_a) -> Params
    param_shapes: dict[str, str] = field(default_factory=dict)
    equal_width: bool = True  # queries and keys must have the same width
    notes: tuple[str, ...] = ()
    # Options with their defaults (--rank, --features): make_params then also takes them, and n_keys, as keywords.
    options: dict[str, int] = field(default_factory=dict)
    approximates: str | None = None  # the exact variant it estimates (attn compare reports the error against it)

    def record(self) -> dict:
        """The registry entry as plain data (what `attn variants -f json` prints)."""
        return {
            "name": self.name,
            "formula": self.formula,
            "parameters": dict(self.param_shapes),
            "equal_width": self.equal_width,
            "paper": self.paper,
            "summary": self.summary,
            "notes": list(self.notes),
            **({"options": dict(self.options)} if self.options else {}),
            **({"approximates": self.approximates} if self.approximates else {}),
        }


_SEEDED = "parameters are seeded random (--seed), not trained"
_OVERFLOW = "unbounded: once entries pass ~1e154 the scores overflow float64 and attn says so (never NaN)"

VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in [
        Variant(
            "dot",
            "s = qᵀk",
            "plain dot product",
            "Luong et al. 2015",
            dot_score,
            notes=(
                "scores grow with the width and the length of the vectors: long vectors push each row towards one-hot",
                _OVERFLOW,
            ),
        ),
        Variant(
            "scaled",
            "s = qᵀk / √d_k",
            "dot product scaled by 1/√d_k (the default)",
            "Vaswani et al. 2017",
            scaled_score,
            notes=(
                "for q, k with unit-variance entries the scores have variance ≈ 1 whatever d_k, so the "
                "softmax does not saturate as d_k grows",
                "same order as dot in every row: it is dot at temperature √d_k",
                _OVERFLOW,
            ),
        ),
        Variant(
            "cosine",
            "s = qᵀk / (‖q‖‖k‖)",
            "cosine similarity, in [-1, 1]",
            "Graves et al. 2014",
            cosine_score,
            notes=(
                "seed 000 writes q·k / √(‖q‖‖k‖), which is neither bounded nor scale-invariant; this is "
                "the usual cosine, q·k / (‖q‖‖k‖)",
                "scale-invariant: multiplying a q or a k by c > 0 changes nothing; a zero vector scores 0",
                "bounded: at temperature 1 two weights of a row differ by at most e² ≈ 7.4×; "
                "--temperature below 1 sharpens",
                "never overflows: each vector is rescaled before its norm is taken",
            ),
        ),
        Variant(
            "additive",
            "s = vᵀ tanh(W₁q + W₂k + b)",
            "a one-hidden-layer network scores each pair",
            "Bahdanau et al. 2015",
            additive_score,
            _additive_params,
            {"W1": "[h, d_a, d_q]", "W2": "[h, d_a, d_k]", "b": "[h, d_a]", "v": "[h, d_a]"},
            equal_width=False,
            notes=(
                "seed 002's vᵀ tanh(W[q; k]) is the same with W = [W₁ W₂] and b = 0",
                "bounded: |s| ≤ Σ|v|, since tanh is in [-1, 1]; d_a is --d-a (default d_k)",
                "costs m·n·d_a tanh evaluations, not one matrix product",
                _SEEDED,
            ),
        ),
        Variant(
            "multiplicative",
            "s = qᵀ W k",
            'a learned bilinear form (Luong "general")',
            "Luong et al. 2015",
            multiplicative_score,
            _multiplicative_params,
            {"W": "[h, d_q, d_k]"},
            equal_width=False,
            notes=("W = I gives dot; W [d_q, d_k] lets queries and keys differ in width", _OVERFLOW, _SEEDED),
        ),
        Variant(
            "gated",
            "s = σ(W_g [q; k]) · qᵀk",
            "a sigmoid gate scales each dot product before the softmax",
            "seed 001 (gating)",
            gated_score,
            _gated_params,
            {"W_g": "[h, d_q + d_k]"},
            notes=(
                "the gate σ(·) is in (0, 1) and shrinks each score towards 0, so a negative qᵀk is raised: "
                "the weights are not monotone in qᵀk",
                "W_g = 0 gives dot at half strength (σ(0) = 1/2)",
                _OVERFLOW,
                _SEEDED,
            ),
        ),
        Variant(
            "linformer",
            "s = qᵀk̄_g / √d_k",
            "low rank (Linformer): keys and values pooled into R groups (--rank R, default 8)",
            "Wang et al. 2020",
            linformer_score,
            _linformer_params,
            options={"rank": 8},
            approximates="scaled",
            notes=(
                "k̄_g is the mean of the keys in key k's group: a random partition of the sequence into R "
                "groups (drawn from --seed), Linformer's projection E = F as mean-pooling; R ≥ n is exact "
                "scaled attention",
                "the weights are those Linformer implies over the n keys: group g weighs |g|·e^(qᵀk̄_g/√d_k), "
                "shared evenly by its keys; with --no-weights the cost is O((m + n)·R·d) time and memory",
                "not Linformer's Gaussian E, F: untrained, they give negative weights (no distribution, no "
                "KL) and no exact attention at R = n",
                "a mask acts on these weights, but a key's group mean still mixes in keys the mask hides "
                "(causal does not stop later keys from shaping earlier ones); the partition is by position, "
                "so permuting the keys changes the groups",
                "attn compare reports its error against scaled: max |ΔA| and the mean KL per row",
                _OVERFLOW,
            ),
        ),
        Variant(
            "performer",
            "s = ln φ(q)ᵀφ(k)",
            "random features (Performer, FAVOR+): an unbiased estimate of e^(qᵀk/√d_k) (--features F, default 64)",
            "Choromanski et al. 2021",
            performer_score,
            _performer_params,
            options={"features": 64},
            approximates="scaled",
            notes=(
                "φ(x) = e^(Wx' − ‖x'‖²/2) / √F with x' = x / d_k^¼ and F orthogonal random directions W "
                "(drawn from --seed): positive features with E[φ(q)ᵀφ(k)] = e^(qᵀk/√d_k); s is the log of "
                "that estimate, so softmax(s) is Performer's own weights",
                "an estimate: the weights are not monotone in qᵀk, and approach scaled's as F grows (error "
                "~ 1/√F, larger for large |q||k|); with --no-weights the cost is O((m + n)·F·d)",
                "a causal mask on these weights is exactly causal FAVOR+ (its prefix sums); --no-weights "
                "takes no mask, and --temperature 1 only (T divides the estimated scores)",
                "attn compare reports its error against scaled: max |ΔA| and the mean KL per row",
                "overflows when ‖q‖² or ‖k‖² passes float64's largest number (entries near 1e154)",
            ),
        ),
    ]
}


def variant_params(
    variant: Variant, rng, n_head: int, d_q: int, d_k: int, d_a: int, n_keys: int, options: dict | None = None
) -> Params:
    """`variant.make_params`, given the number of keys and its options (None or missing: the default)."""
    if not variant.options:
        return variant.make_params(rng, n_head, d_q, d_k, d_a)
    return variant.make_params(rng, n_head, d_q, d_k, d_a, n_keys=n_keys, **option_values(variant, options))


def option_values(variant: Variant, options: dict | None = None) -> dict[str, int]:
    """The variant's options (rank, features) with the defaults filled in; options it does not take dropped."""
    given = options or {}
    return {name: given[name] if given.get(name) is not None else default for name, default in variant.options.items()}


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise ConfigError(f"unknown variant {name!r}: choose one of {', '.join(VARIANTS)}")
    return VARIANTS[name]


# ---- masks ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mask:
    """A parsed mask: `causal`, `window:W` or `topk:K`. `arg` is W or K."""

    name: str
    arg: int | None = None

    def __str__(self) -> str:
        return self.name if self.arg is None else f"{self.name}:{self.arg}"


def causal_mask(m: int, n: int, arg=None):  # -> [m, n] bool, True = masked
    """Query i may not see key j > i."""
    return np.arange(n)[None, :] > np.arange(m)[:, None]


def window_mask(m: int, n: int, arg: int):  # -> [m, n] bool
    """Query i sees only keys with |i - j| <= W."""
    return np.abs(np.arange(n)[None, :] - np.arange(m)[:, None]) > arg


def topk_mask(scores, masked, arg: int):  # [h, m, n], [h, m, n] -> [h, m, n] bool
    """Keep the K largest scores of each row among the unmasked; ties go to the lower key index."""
    s = np.where(masked, -np.inf, scores)
    order = np.argsort(-s, axis=-1, kind="stable")  # stable: equal scores keep key order
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(s.shape[-1]), s.shape), axis=-1)
    return masked | (ranks >= arg)


# name -> (does it need an argument, what it does); topk is applied after the others.
MASKS: dict[str, tuple[bool, str]] = {
    "causal": (False, "query i sees keys j <= i"),
    "window": (True, "window:W — query i sees keys with |i - j| <= W"),
    "topk": (True, "topk:K — each row keeps its K largest scores (ties: lower key index)"),
}


MAX_MASK_ARG = 10**9  # a window or a K at least as long as the text already masks nothing


def parse_masks(spec: str | None) -> tuple[Mask, ...]:
    """'causal,window:2' -> (Mask('causal'), Mask('window', 2)); '' or 'none' -> ().

    W and K are whole numbers in ASCII digits (not '²' or '٣', which str.isdigit accepts), W >= 0,
    1 <= K, both at most MAX_MASK_ARG.
    """
    if not spec or spec.strip() in ("", "none"):
        return ()
    out = []
    for part in spec.split(","):
        name, _, arg = part.strip().partition(":")
        if name not in MASKS:
            raise ConfigError(f"unknown mask {part.strip()!r}: choose causal, window:W or topk:K")
        needs_arg, _ = MASKS[name]
        if needs_arg:
            digits = arg.strip()
            if not (digits.isascii() and digits.isdigit()):
                raise ConfigError(f"mask {part.strip()!r} needs a whole number, e.g. {name}:2")
            if len(digits.lstrip("0")) > len(str(MAX_MASK_ARG)) or int(digits) > MAX_MASK_ARG:
                raise ConfigError(
                    f"mask {part.strip()[:40]!r}: {'W' if name == 'window' else 'K'} must be at most "
                    f"{MAX_MASK_ARG:,} (one as long as the text already masks nothing)"
                )
            value = int(digits)
            if name == "topk" and value < 1:
                raise ConfigError(f"mask {part.strip()!r}: K must be at least 1")
            out.append(Mask(name, value))
        elif arg:
            raise ConfigError(f"mask {name!r} takes no argument, got {part.strip()!r}")
        else:
            out.append(Mask(name))
    return tuple(out)


def apply_masks(scores, masks: tuple[Mask, ...]):  # [h, m, n] -> [h, m, n] bool or None
    """The boolean matrix of masked cells (True = masked), or None when no mask is on."""
    if not masks:
        return None
    h, m, n = scores.shape
    masked = np.zeros((h, m, n), dtype=bool)
    for mask in masks:
        if mask.name == "causal":
            masked |= causal_mask(m, n)
        elif mask.name == "window":
            masked |= window_mask(m, n, mask.arg)
    for mask in masks:
        if mask.name == "topk":
            masked = topk_mask(scores, masked, mask.arg)
    return masked


# ---- softmax and attend ---------------------------------------------------------------------------


def softmax(scores, masked=None):  # [..., n], [..., n] bool or None -> [..., n]
    """Row softmax that subtracts the row maximum; masked cells are exactly 0, a fully masked row all 0.

    >>> softmax(np.array([[1e4, -1e4], [0.0, 0.0]])).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """
    s = scores if masked is None else np.where(masked, -np.inf, scores)
    row_max = s.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # fully masked row: max is -inf
    # In place from here on: one array of the size of `scores` (a 4000-token row set is 128 MB).
    e = np.subtract(s, row_max, out=None if s is scores else s)
    np.exp(e, out=e)
    total = e.sum(axis=-1, keepdims=True)  # >= 1 unless the row is fully masked (then e is all 0)
    return np.divide(e, total, out=e, where=total > 0)


@dataclass(frozen=True)
class Attended:
    scores: np.ndarray  # [h, m, n] before any mask, finite
    masked: np.ndarray | None  # [h, m, n] bool, True = masked; None without a mask
    weights: np.ndarray  # [h, m, n] after mask and softmax; rows sum to 1 (0 if fully masked)
    out: np.ndarray  # [h, m, d_v]


def check_shapes(q, k, v, variant: Variant) -> None:  # [h, m, d_q], [h, n, d_k], [h, n, d_v]
    """Widths the variant needs equal, and one value per key; DataError naming the shapes otherwise."""
    if variant.equal_width and q.shape[-1] != k.shape[-1]:
        raise DataError(
            f"variant {variant.name} needs queries and keys of equal width: "
            f"q is {list(q.shape[1:])}, k is {list(k.shape[1:])}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise DataError(
            f"keys and values must have the same length: k is {list(k.shape[1:])}, v is {list(v.shape[1:])}"
        )


def attend(
    q,
    k,
    v,
    variant: Variant,
    params: Params | None = None,
    masks: tuple[Mask, ...] = (),
    temperature: float = 1.0,
    trace: dict | None = None,
) -> Attended:
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> Attended(scores/weights [h, m, n], out [h, m, d_v])
    """Score, mask, softmax, mix: the whole of single- or multi-head attention on given q, k, v."""
    check_shapes(q, k, v, variant)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below, as one line
        scores = variant.score(q, k, params or {}, trace)
        scores = scores / temperature if temperature != 1.0 else scores
    if not np.isfinite(scores).all():
        raise DataError(
            f"the {variant.name} scores overflow {scores.dtype} (inputs up to "
            f"{max(np.abs(q).max(), np.abs(k).max()):.3g}"
            + (
                f", temperature {temperature:g}); rescale the inputs or raise --temperature"
                if temperature < 1
                else "); rescale the inputs"
            )
        )
    masked = apply_masks(scores, masks)
    weights = softmax(scores, masked)
    return Attended(scores, masked, weights, np.matmul(weights, v))


# ---- heads ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Projections:
    w_q: np.ndarray  # [d_model, h * d_k]
    w_k: np.ndarray  # [d_model, h * d_k]
    w_v: np.ndarray  # [d_model, h * d_v]
    w_o: np.ndarray  # [h * d_v, d_model]


def random_projections(rng: np.random.Generator, d_model: int, n_head: int, d_k: int, d_v: int) -> Projections:
    """Seeded N(0, 1/fan_in) weights: random, not trained."""

    def w(fan_in, fan_out):
        return rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)

    return Projections(
        w(d_model, n_head * d_k), w(d_model, n_head * d_k), w(d_model, n_head * d_v), w(n_head * d_v, d_model)
    )


def identity_projections(d_model: int) -> Projections:
    """Q = K = V = X (seed 000); with h heads each head sees its own d_model/h columns."""
    eye = np.eye(d_model)
    return Projections(eye, eye, eye, eye)


def split_heads(x, n_head: int):  # [n, h * d] -> [h, n, d]
    n, hd = x.shape
    return x.reshape(n, n_head, hd // n_head).transpose(1, 0, 2)


def merge_heads(x):  # [h, m, d] -> [m, h * d]
    h, m, d = x.shape
    return x.transpose(1, 0, 2).reshape(m, h * d)


@dataclass(frozen=True)
class MultiHead:
    q: np.ndarray  # [h, m, d_k]
    k: np.ndarray  # [h, n, d_k]
    v: np.ndarray  # [h, n, d_v]
    attended: Attended
    output: np.ndarray  # [m, d_model] = concat(O_h) W_O


def multi_head(
    x_q,
    x_kv,
    proj: Projections,
    n_head: int,
    variant: Variant,
    params: Params | None = None,
    masks: tuple[Mask, ...] = (),
    temperature: float = 1.0,
    trace: dict | None = None,
) -> MultiHead:
    # [m, d_model], [n, d_model] -> MultiHead(q [h, m, d_k], k, v, attended, output [m, d_model])
    """Project, split into heads, attend with any variant, merge. Self-attention: x_kv is x_q."""
    q = split_heads(x_q @ proj.w_q, n_head)
    k = split_heads(x_kv @ proj.w_k, n_head)
    v = split_heads(x_kv @ proj.w_v, n_head)
    attended = attend(q, k, v, variant, params, masks, temperature, trace)
    return MultiHead(q, k, v, attended, merge_heads(attended.out) @ proj.w_o)
