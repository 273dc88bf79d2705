"""The score variants: one `@register(...)` next to each score function, carrying all that is known of it.

A variant's entry holds its formula, summary, paper and notes (what `attn variants` prints), how it
makes its seeded parameters, its options (--rank, --features), which fast paths it has (--no-weights,
float32 through the blocked kernels), what it costs (memory per cell, multiply-adds), the terms it
writes into a trace (`attn steps`) and the numbers of the worked check `attn steps` prints for one score (a
`Worked`: `attncli.render.steps` words it; no sentence is written here).
Nothing outside this module tests a variant's name: adding a variant is adding one function here.

Shapes: h heads, m queries, n keys, widths d_q, d_k (queries, keys) and d_a (additive's hidden layer).
"""

# NumPy loads on first use: attn --help and attn variants read this registry without it.

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from attncli.errors import ConfigError

Params = dict  # name -> ndarray


@dataclass(frozen=True)
class Cell:
    """One score to redo by hand (head 0, query i, key 0): what a variant's worked check (`Variant.check`) reads.

    `q`, `k` the two vectors, `s` the score, `trace` and `params` the run's (the query's row is `i`).
    """

    q: Any  # [d_q]
    k: Any  # [d_k]
    s: float
    d_k: int
    trace: dict
    params: dict
    i: int

    @property
    def qk(self) -> float:
        """qᵀk of the two vectors."""
        return float(self.q @ self.k)


@dataclass(frozen=True)
class Worked:
    """The numbers of one score's worked check: `form` names the arithmetic (how `attn steps` writes it), `values`
    the numbers it shows by name, `a` and `b` the vectors whose products it sums term by term ([d] each; `a`
    alone: terms to sum). Computed here, so that a view only writes them down.
    """

    form: str
    values: dict[str, float]
    a: Any = None  # [d] or None
    b: Any = None  # [d] or None


def _no_params(rng, n_head, d_q, d_k, d_a) -> Params:
    return {}


@dataclass(frozen=True)
class FastPaths:
    """A variant's fast paths (attncli.core.efficient). `kernel_qk(q, k, params) -> (q', k', scale)` with
    scores = scale·q'k'ᵀ lets --no-weights run the blocked kernels; `linear(q, k, v, temperature, rng, options)
    -> out` is an approximation's own linear-time path. `masks` are the masks --no-weights takes."""

    kernel_qk: Callable | None = None
    kernel_weights: bool = False  # --dtype float32 with weights: kernels.attention_weights (scores are scale·qkᵀ)
    linear: Callable | None = None
    masks: tuple[str, ...] = ()
    temperature: bool = True  # --no-weights takes a --temperature other than 1


@dataclass(frozen=True)
class Cost:
    """What a variant's scoring costs: [h, m, n] arrays alive with the scores while scoring
    (`score_temporaries`) and kept by a trace (`trace_cells`, attn steps), a hidden term, multiply-adds."""

    score_temporaries: int = 0
    trace_cells: int = 0
    hidden: str | None = None  # a [h, m, n, d_a] hidden term (scored in slices; kept whole by a trace)
    madds: Callable | None = None  # (h, m, n, d_k, d_a) -> multiply-adds of the scores; None: h·m·n·d_k


@dataclass(frozen=True)
class Variant:
    """One way to score a query against a key. `score(q, k, params, trace) -> [h, m, n]`.

    `param_shapes` names each learned parameter's axes (h heads, widths d_q, d_k, d_a);
    `notes` are what a user should know: which properties hold, how it relates to other forms.
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
    fast: FastPaths = FastPaths()  # what --no-weights and --dtype float32 may run instead of the n × n matrix
    cost: Cost = Cost()  # what scoring costs beyond the scores and weights (the memory guard, the multiply-adds)
    # `attn steps`: the trace terms (name -> (formula, axes)), and the worked check of one score (its numbers).
    trace_terms: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    check: Callable[[Cell], Worked] | None = None

    @property
    def outputs_only(self) -> bool:
        """Whether --no-weights can run it (without an n × n matrix)."""
        return self.fast.kernel_qk is not None or self.fast.linear is not None

    def check_outputs_only(self, masks, temperature: float = 1.0) -> None:
        """ConfigError when --no-weights cannot run this variant, mask or temperature (before any input is read)."""
        if not self.outputs_only:
            fast = sorted(
                (v.name for v in VARIANTS.values() if v.outputs_only), key=lambda name: name != DEFAULT_VARIANT
            )
            raise ConfigError(
                f"--no-weights works with -v {', '.join(fast)}: {self.name} scores each "
                "query-key pair on its own, so drop --no-weights"
            )
        bad = [str(m) for m in masks if str(m).partition(":")[0] not in self.fast.masks]
        if bad:
            raise ConfigError(
                f"--no-weights with -v {self.name} takes "
                + (f"--mask {', '.join(self.fast.masks)} only" if self.fast.masks else "no --mask")
                + f", not {', '.join(bad)}"
                + (": window and top-k need whole rows of scores" if self.fast.masks else "")
                + "; drop --no-weights"
            )
        if not self.fast.temperature and temperature != 1.0:
            raise ConfigError(
                f"--no-weights with -v {self.name} needs --temperature 1: the temperature divides the "
                "estimated scores, which only the weights path has; drop --no-weights"
            )

    def score_madds(self, h: int, m: int, n: int, d_k: int, d_a: int) -> int:
        """Multiply-adds of the score step S, for every head."""
        return self.cost.madds(h, m, n, d_k, d_a) if self.cost.madds else h * m * n * d_k

    def param_count(self, h: int, d_q: int, d_k: int, d_a: int) -> int:
        """Numbers in the learned parameters, from `param_shapes`.

        >>> VARIANTS["additive"].param_count(2, 4, 4, 3)   # W1, W2 [2, 3, 4], b, v [2, 3]
        60
        """
        sizes = {"h": h, "d_q": d_q, "d_k": d_k, "d_a": d_a}
        return sum(
            math.prod(sum(sizes[t] for t in axis.split(" + ")) for axis in shape.strip("[]").split(", "))
            for shape in self.param_shapes.values()
        )

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


VARIANTS: dict[str, Variant] = {}  # in the order `attn variants` lists them
DEFAULT_VARIANT = "scaled"  # -v when none is given (listed first where the CLI names its choices)


def register(name: str, formula: str, summary: str, paper: str, **entry) -> Callable:
    """Decorator: the score function below becomes the variant `name` (entry: the other Variant fields)."""

    def add(score: Callable) -> Callable:
        VARIANTS[name] = Variant(name, formula, summary, paper, score, **entry)
        return score

    return add


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise ConfigError(f"unknown variant {name!r}: choose one of {', '.join(VARIANTS)}")
    return VARIANTS[name]


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


_SEEDED = "parameters are seeded random (--seed), not trained"
_OVERFLOW = "unbounded: once entries pass ~1e154 the scores overflow float64 and attn says so (never NaN)"
_QK_TERM = {"qk": ("QKᵀ: raw dot products qᵀk", ("head", "query", "key"))}


def _qk(q, k):  # [h, m, d], [h, n, d] -> [h, m, n]
    return q @ k.swapaxes(-1, -2)


def _per_token_madds(h, m, n, d_k, d_a):  # the norms or the gate's halves, once per token, then qᵀk per pair
    return h * m * n * d_k + h * (m + n) * d_k


# ---- dot and scaled ---------------------------------------------------------------------------------


def check_qk(c: Cell) -> Worked:
    """QKᵀ of the cell as a sum (dot's score; any variant's trace term qk)."""
    return Worked("qᵀk", {"qk": c.qk, "s": c.s}, c.q, c.k)


@register(
    "dot",
    "s = qᵀk",
    "plain dot product",
    "Luong et al. 2015",
    notes=(
        "scores grow with the width and the length of the vectors: long vectors push each row towards one-hot",
        _OVERFLOW,
    ),
    fast=FastPaths(
        kernel_qk=lambda q, k, params: (q, k, 1.0),
        kernel_weights=True,
        masks=("causal",),
    ),
    check=check_qk,
)
def dot_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = qᵀk"""
    return _qk(q, k)


def _check_scaled(c: Cell) -> Worked:
    return Worked("qᵀk / √d_k", {"qk": c.qk, "d_k": c.d_k, "root": math.sqrt(c.d_k), "s": c.s})


@register(
    "scaled",
    "s = qᵀk / √d_k",
    "dot product scaled by 1/√d_k (the default)",
    "Vaswani et al. 2017",
    notes=(
        "for q, k with unit-variance entries the scores have variance ≈ 1 whatever d_k, so the "
        "softmax does not saturate as d_k grows",
        "same order as dot in every row: it is dot at temperature √d_k",
        _OVERFLOW,
    ),
    fast=FastPaths(
        kernel_qk=lambda q, k, params: (q, k, 1 / math.sqrt(q.shape[-1])),
        kernel_weights=True,
        masks=("causal",),
    ),
    cost=Cost(trace_cells=1),
    trace_terms=_QK_TERM,
    check=_check_scaled,
)
def scaled_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = qᵀk / √d"""
    qk = _qk(q, k)
    if trace is not None:
        trace["qk"] = qk
    return qk / math.sqrt(q.shape[-1])


# ---- cosine -----------------------------------------------------------------------------------------


def norm_and_unit(x):  # [..., d] -> [...], [..., d]   (zero vectors stay zero)
    """‖x‖ and x/‖x‖ without overflow or underflow: each vector is first divided by its largest |entry|.

    (np.linalg.norm squares the entries: 1e-170 squares to 0 and 1e200 to inf.)
    """
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    big = np.abs(x).max(axis=-1, keepdims=True)
    y = np.divide(x, big, out=np.zeros_like(x), where=big > 0)  # entries in [-1, 1], one of them ±1
    norm_y = np.linalg.norm(y, axis=-1, keepdims=True)  # in [1, √d], or 0 for a zero vector
    return (big * norm_y)[..., 0], np.divide(y, norm_y, out=np.zeros_like(y), where=norm_y > 0)


def _check_cosine(c: Cell) -> Worked:
    norms = {"q_norm": math.sqrt(float(c.q @ c.q)), "k_norm": math.sqrt(float(c.k @ c.k))}
    return Worked("qᵀk / (‖q‖ ‖k‖)", {"qk": c.qk, **norms, "s": c.s})


@register(
    "cosine",
    "s = qᵀk / (‖q‖‖k‖)",
    "cosine similarity, in [-1, 1]",
    "Graves et al. 2014",
    notes=(
        "cosine similarity; some lecture notes write q·k / √(‖q‖‖k‖), which is neither bounded nor scale-invariant",
        "scale-invariant: multiplying a q or a k by c > 0 changes nothing; a zero vector scores 0",
        "bounded: at temperature 1 two weights of a row differ by at most e² ≈ 7.4×; --temperature below 1 sharpens",
        "never overflows: each vector is rescaled before its norm is taken",
    ),
    fast=FastPaths(
        kernel_qk=lambda q, k, params: (norm_and_unit(q)[1], norm_and_unit(k)[1], 1.0),
        masks=("causal",),
    ),
    cost=Cost(
        trace_cells=1,
        madds=_per_token_madds,
    ),
    trace_terms={
        **_QK_TERM,
        "q_norm": ("‖q‖ of each query", ("head", "query")),
        "k_norm": ("‖k‖ of each key", ("head", "key")),
    },
    check=_check_cosine,
)
def cosine_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = qᵀk / (‖q‖‖k‖); a zero vector scores 0 against everything."""
    q_norm, q_unit = norm_and_unit(q)
    k_norm, k_unit = norm_and_unit(k)
    if trace is not None:
        trace["qk"] = _qk(q, k)
        trace["q_norm"] = q_norm
        trace["k_norm"] = k_norm
    return _qk(q_unit, k_unit).clip(-1.0, 1.0)


# ---- additive ---------------------------------------------------------------------------------------


def _additive_params(rng, n_head, d_q, d_k, d_a) -> Params:
    return {
        "W1": rng.standard_normal((n_head, d_a, d_q)) / math.sqrt(d_q),
        "W2": rng.standard_normal((n_head, d_a, d_k)) / math.sqrt(d_k),
        "b": 0.1 * rng.standard_normal((n_head, d_a)),
        "v": rng.standard_normal((n_head, d_a)),
    }


def _check_additive(c: Cell) -> Worked:
    return Worked("Σ_a v[a] · tanh(…)[a]", {"s": c.s}, c.params["v"][0], c.trace["tanh(W1q + W2k + b)"][0, c.i, 0])


@register(
    "additive",
    "s = vᵀ tanh(W₁q + W₂k + b)",
    "a one-hidden-layer network scores each pair",
    "Bahdanau et al. 2015",
    make_params=_additive_params,
    param_shapes={"W1": "[h, d_a, d_q]", "W2": "[h, d_a, d_k]", "b": "[h, d_a]", "v": "[h, d_a]"},
    equal_width=False,
    notes=(
        "vᵀ tanh(W[q; k]) is the same with W = [W₁ W₂] and b = 0",
        "bounded: |s| ≤ Σ|v|, since tanh is in [-1, 1]; d_a is --d-a (default d_k)",
        "costs m·n·d_a tanh evaluations, not one matrix product",
        _SEEDED,
    ),
    cost=Cost(
        hidden="tanh(W₁q + W₂k + b)",
        madds=lambda h, m, n, d_k, d_a: h * (m + n) * d_a * d_k + h * m * n * d_a,  # W1 q, W2 k once, vᵀ tanh per pair
    ),
    trace_terms={
        "W1q + b": ("W₁q + b (once per query)", ("head", "query", "dim")),
        "W2k": ("W₂k (once per key)", ("head", "key", "dim")),
        "tanh(W1q + W2k + b)": ("tanh(W₁q + W₂k + b) of each pair", ("head", "query", "key", "dim")),
    },
    check=_check_additive,
)
def additive_score(q, k, params, trace=None):  # [h, m, d_q], [h, n, d_k] -> [h, m, n]
    """s = vᵀ tanh(W₁q + W₂k + b) (Bahdanau)"""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    a = q @ params["W1"].swapaxes(-1, -2) + params["b"][:, None, :]  # [h, m, d_a]
    c = k @ params["W2"].swapaxes(-1, -2)  # [h, n, d_a]
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


# ---- multiplicative ---------------------------------------------------------------------------------


def _multiplicative_params(rng, n_head, d_q, d_k, d_a) -> Params:
    return {"W": rng.standard_normal((n_head, d_q, d_k)) / math.sqrt(d_q)}


def _multiplicative_kernel(q, k, params):  # [h, m, d_q], [h, n, d_k] -> qW [h, m, d_k], k, scale
    return q @ params["W"].astype(q.dtype, copy=False), k, 1.0


def _check_multiplicative(c: Cell) -> Worked:
    return Worked("Σ_d (qW)[d] · k[d]", {"s": c.s}, c.trace["qW"][0, c.i], c.k)


@register(
    "multiplicative",
    "s = qᵀ W k",
    'a learned bilinear form (Luong "general")',
    "Luong et al. 2015",
    make_params=_multiplicative_params,
    param_shapes={"W": "[h, d_q, d_k]"},
    equal_width=False,
    notes=("W = I gives dot; W [d_q, d_k] lets queries and keys differ in width", _OVERFLOW, _SEEDED),
    fast=FastPaths(
        kernel_qk=_multiplicative_kernel,
        masks=("causal",),
    ),
    cost=Cost(
        madds=lambda h, m, n, d_k, d_a: h * m * d_k * d_k + h * m * n * d_k,  # q W once per query, then (qW)ᵀ k
    ),
    trace_terms={"qW": ("Q W (Luong general)", ("head", "query", "dim"))},
    check=_check_multiplicative,
)
def multiplicative_score(q, k, params, trace=None):  # [h, m, d_q], [h, n, d_k] -> [h, m, n]
    """s = qᵀ W k (Luong "general")"""
    qw = q @ params["W"]  # [h, m, d_k]
    if trace is not None:
        trace["qW"] = qw
    return _qk(qw, k)


# ---- gated ------------------------------------------------------------------------------------------


def _gated_params(rng, n_head, d_q, d_k, d_a) -> Params:
    return {"W_g": rng.standard_normal((n_head, d_q + d_k)) / math.sqrt(d_q + d_k)}


def _check_gated(c: Cell) -> Worked:
    return Worked("gate · qᵀk", {"gate": float(c.trace["gate"][0, c.i, 0]), "qk": c.qk, "s": c.s})


@register(
    "gated",
    "s = σ(W_g [q; k]) · qᵀk",
    "a sigmoid gate scales each dot product before the softmax",
    "a sigmoid gate on each score",
    make_params=_gated_params,
    param_shapes={"W_g": "[h, d_q + d_k]"},
    notes=(
        "the gate σ(·) is in (0, 1) and shrinks each score towards 0, so a negative qᵀk is raised: "
        "the weights are not monotone in qᵀk",
        "W_g = 0 gives dot at half strength (σ(0) = 1/2)",
        _OVERFLOW,
        _SEEDED,
    ),
    cost=Cost(
        score_temporaries=1,  # σ(...) · qᵀk: the gate, qᵀk and their product
        trace_cells=2,
        madds=_per_token_madds,
    ),
    trace_terms={**_QK_TERM, "gate": ("σ(W_g [q; k]): the gate of each pair", ("head", "query", "key"))},
    check=_check_gated,
)
def gated_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s = σ(W_g [q; k]) · qᵀk"""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    d_q = q.shape[-1]
    w_g = params["W_g"]  # [h, d_q + d_k]
    z = np.einsum("hmd,hd->hm", q, w_g[:, :d_q])[:, :, None] + np.einsum("hnd,hd->hn", k, w_g[:, d_q:])[:, None, :]
    gate = 0.5 * (1.0 + np.tanh(0.5 * z))  # [h, m, n]: σ(z), stable for large |z|
    qk = _qk(q, k)
    if trace is not None:
        trace["gate"] = gate
        trace["qk"] = qk
    return gate * qk


# ---- linformer --------------------------------------------------------------------------------------


def _linformer_params(rng, n_head, d_q, d_k, d_a, *, n_keys, rank=8) -> Params:  # -> {"group": [h, n]}
    """The partition of the n keys into min(R, n) groups, the same for every head."""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    from attncli.core.approx import linformer_projection

    group, _ = linformer_projection(n_keys, rank, rng)  # [n] in 0..R-1
    return {"group": np.tile(group, (n_head, 1))}


def _linformer_linear(q, k, v, temperature, rng, options):  # [h, m, d], [h, n, d], [h, n, d_v] -> [h, m, d_v]
    from attncli.core.approx import linformer  # late: start-up (the approximations load with their variant)

    scale = 1 / (math.sqrt(q.shape[-1]) * temperature)
    return linformer(q, k, v, scale, options["rank"], rng, return_weights=False)[1]


def _check_linformer(c: Cell) -> Worked:
    return Worked("qᵀk̄ / √d_k", {"d_k": c.d_k, "root": math.sqrt(c.d_k), "s": c.s}, c.q, c.trace["k_bar"][0, 0])


@register(
    "linformer",
    "s = qᵀk̄_g / √d_k",
    "low rank (Linformer): keys and values pooled into R groups (--rank R, default 8)",
    "Wang et al. 2020",
    make_params=_linformer_params,
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
    fast=FastPaths(linear=_linformer_linear),
    trace_terms={
        "group": ("g(k): the group of each key, a random partition into R groups (--rank, --seed)", ("head", "key")),
        "k_bar": ("K̄: each key replaced by the mean of the keys in its group", ("head", "key", "dim")),
    },
    check=_check_linformer,
)
def linformer_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s_ij = q_i · k̄_g(j) / √d: each key scored through the mean of its group (attncli.core.approx)."""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    from attncli.core.approx import group_means

    group = np.asarray(params["group"])
    k_bar = group_means(k, group)  # [h, R, d]
    s = (q @ k_bar.swapaxes(-1, -2)) / math.sqrt(q.shape[-1])  # [h, m, R]: R scores per query
    scores = np.stack([s[hh][:, group[hh]] for hh in range(s.shape[0])])  # [h, m, n]
    if trace is not None:
        trace["group"] = group
        trace["k_bar"] = np.stack([k_bar[hh][group[hh]] for hh in range(k_bar.shape[0])])  # [h, n, d]
    return scores


# ---- performer --------------------------------------------------------------------------------------


def _performer_params(rng, n_head, d_q, d_k, d_a, *, n_keys=None, features=64) -> Params:  # -> {"W": [h, F, d_k]}
    """F orthogonal random feature directions (rows marginally N(0, I)), the same for every head."""
    import numpy as np  # late: start-up (NumPy: the registry is read without it)

    from attncli.core.approx import performer_features

    w = performer_features(d_k, features, rng)  # [F, d_k]
    return {"W": np.tile(w, (n_head, 1, 1))}


def _performer_linear(q, k, v, temperature, rng, options):  # [h, m, d], [h, n, d], [h, n, d_v] -> [h, m, d_v]
    from attncli.core.approx import performer  # late: start-up (the approximations load with their variant)

    return performer(q, k, v, 1 / math.sqrt(q.shape[-1]), options["features"], rng, return_weights=False)[1]


Q_EXPONENTS, K_EXPONENTS = "Wq' - |q'|^2/2", "Wk' - |k'|^2/2"  # performer's trace terms


def _check_performer(c: Cell) -> Worked:
    ab = c.trace[Q_EXPONENTS][0, c.i] + c.trace[K_EXPONENTS][0, 0]  # [F]: a_f + b_f
    return Worked("ln mean_f e^(a_f + b_f)", {"features": ab.size, "s": c.s}, ab)


@register(
    "performer",
    "s = ln φ(q)ᵀφ(k)",
    "random features (Performer, FAVOR+): an unbiased estimate of e^(qᵀk/√d_k) (--features F, default 64)",
    "Choromanski et al. 2021",
    make_params=_performer_params,
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
    fast=FastPaths(
        linear=_performer_linear,
        temperature=False,
    ),
    trace_terms={
        Q_EXPONENTS: (
            "a = W q' − ‖q'‖²/2, q' = q / d_k^¼: φ(q) = e^a / √F, one column per random feature",
            ("head", "query", "dim"),
        ),
        K_EXPONENTS: (
            "b = W k' − ‖k'‖²/2, k' = k / d_k^¼: φ(k) = e^b / √F, one column per random feature",
            ("head", "key", "dim"),
        ),
    },
    check=_check_performer,
)
def performer_score(q, k, params, trace=None):  # [h, m, d], [h, n, d] -> [h, m, n]
    """s_ij = ln((1/F) Σ_f e^{a_if + b_jf}): the log of the FAVOR+ estimate of e^{q·k/√d} (attncli.core.approx)."""
    from attncli.core.approx import performer_log_scores  # late: start-up (the approximations load with their variant)

    a, b, scores = performer_log_scores(q, k, params["W"])
    if trace is not None:
        trace[Q_EXPONENTS] = a
        trace[K_EXPONENTS] = b
    return scores
