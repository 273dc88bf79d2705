"""text -> tokens -> X -> Q, K, V -> scores -> mask -> softmax -> A V -> merged output.

One frozen `RunConfig` says how; `run()` returns one `AttentionResult` that every
renderer and format reads:

    >>> r = run("time flies like an arrow", RunConfig())
    >>> r.tokens.strings, r.weights.shape, r.output.shape
    (('time', 'flies', 'like', 'an', 'arrow'), (1, 5, 5), (5, 16))

Imports numpy and the core modules only: no rich, typer or click.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from attncli.attention import (
    VARIANTS, Projections, get_variant, identity_projections, multi_head, option_values, parse_masks,
    random_projections, variant_params,
)
from attncli.embed import POSITIONAL, embed
from attncli.errors import ConfigError, DataError
from attncli.limits import Limits, check, hints, run_bytes, too_many_tokens
from attncli.tokenize import Tokens, TooManyTokens, tokenize

PROJECTIONS = ("random", "identity")
DTYPES = ("float64", "float32")
MAX_OPTION = 65536  # --rank, --features
MAX_DIM = 4096
MAX_HEADS = 256
MAX_SEED = 2**63 - 1  # NumPy takes any size, but a seed should survive JSON and every other tool as an int64


@dataclass(frozen=True)
class RunConfig:
    """Every choice of a run. `d_k`/`d_v` None means dim // heads (filled in by `resolve`)."""

    tokenizer: str = "word"
    variant: str = "scaled"
    heads: int = 1
    dim: int = 16
    d_k: int | None = None
    d_v: int | None = None
    d_a: int | None = None  # hidden width of the additive variant (None: d_k)
    mask: tuple[str, ...] = ()
    positional: str = "none"
    projection: str = "random"
    seed: int = 0
    temperature: float = 1.0
    model: str | None = None  # --model: the model's name; then layer (and head, if one was chosen) too
    layer: int | None = None
    head: int | None = None  # with --head H the result holds that one head (index 0 of its arrays)
    dtype: str = "float64"  # float32: Q, K, V, scores, weights and outputs in float32 (attncli.efficient)
    weights: bool = True  # False (--no-weights): the outputs only, never an n x n matrix (attncli.efficient)
    rank: int | None = None  # linformer's R (None: its default; resolve fills it in, and drops it for others)
    features: int | None = None  # performer's F (likewise)

    def resolve(self) -> RunConfig:
        """Check every value and fill in d_k, d_v, d_a; raises ConfigError naming the bad one."""
        get_variant(self.variant)
        if self.positional not in POSITIONAL:
            raise ConfigError(f"unknown positional encoding {self.positional!r}: choose {', '.join(POSITIONAL)}")
        if self.projection not in PROJECTIONS:
            raise ConfigError(f"unknown projection {self.projection!r}: choose {', '.join(PROJECTIONS)}")
        for name, value, top in (("dim", self.dim, MAX_DIM), ("heads", self.heads, MAX_HEADS),
                                 ("dk", self.d_k, MAX_DIM), ("dv", self.d_v, MAX_DIM), ("d-a", self.d_a, MAX_DIM)):
            if value is not None and not 1 <= value <= top:
                raise ConfigError(f"--{name} must be between 1 and {top}, got {value}")
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"--seed must be between 0 and 2**63 - 1, got {self.seed}")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ConfigError(f"--temperature must be a positive finite number, got {self.temperature}")
        if self.projection == "identity":
            if self.d_k is not None or self.d_v is not None:
                raise ConfigError("--projection identity uses Q = K = V = X: drop --dk/--dv")
        if (self.d_k is None or self.d_v is None) and self.dim % self.heads:
            raise ConfigError(f"--dim {self.dim} is not divisible by --heads {self.heads}: "
                              f"choose a multiple of {self.heads}, or give --dk and --dv")
        masks = tuple(str(m) for m in parse_masks(",".join(self.mask)))
        d_k = self.d_k or self.dim // self.heads
        options = check_options(self.variant, self.dtype, self.weights, masks, self.temperature,
                                {"rank": self.rank, "features": self.features})
        return replace(self, mask=masks, d_k=d_k, d_v=self.d_v or self.dim // self.heads, d_a=self.d_a or d_k,
                       rank=options.get("rank"), features=options.get("features"))

    def to_dict(self) -> dict:
        return asdict(self)


def check_options(variant: str, dtype: str, weights: bool, masks, temperature: float, options: dict) -> dict:
    """--dtype, --no-weights, --rank and --features: ConfigError if they do not fit; the variant's options filled in."""
    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r}: choose {', '.join(DTYPES)}")
    for name, value in options.items():
        if value is not None and not 1 <= value <= MAX_OPTION:
            raise ConfigError(f"--{name} must be between 1 and {MAX_OPTION}, got {value}")
    if not weights:
        from attncli.efficient import check_outputs_only

        check_outputs_only(variant, masks, temperature)
    return option_values(VARIANTS[variant], options)


@dataclass(frozen=True)
class AttentionResult:
    """Everything one run computed. Shapes: m queries, n keys, h heads."""

    text: str | None  # None in attn compute: there is no text
    context: str | None
    tokens: Tokens  # the queries' tokens
    context_tokens: Tokens | None  # the keys' tokens in cross-attention, else None
    config: RunConfig  # resolved: d_k, d_v, d_a filled in
    x: np.ndarray  # [m, d_model] embeddings (+ positions) of the text
    x_context: np.ndarray | None  # [n, d_model] of the context, or None
    q: np.ndarray  # [h, m, d_k]
    k: np.ndarray  # [h, n, d_k]
    v: np.ndarray  # [h, n, d_v]
    scores: np.ndarray | None  # [h, m, n] before any mask, finite; None with --no-weights
    masked: np.ndarray | None  # [h, m, n] bool, True = masked; None without a mask (or with --no-weights)
    weights: np.ndarray | None  # [h, m, n] rows sum to 1; None with --no-weights
    head_outputs: np.ndarray  # [h, m, d_v] = A_h V_h
    output: np.ndarray  # [m, d_model] = concat(O_h) W_O
    params: dict = field(default_factory=dict)  # the variant's parameters
    projections: Projections | None = None
    trace: dict = field(default_factory=dict)  # the variant's intermediate terms, if asked
    given: str | None = None  # attn compute: what was given (Q, K, V shapes, source); None for a text run
    model: Any = None  # --model: the loaded attncli.models.Model (its name, type, layers), else None

    @property
    def key_tokens(self) -> Tokens:
        return self.context_tokens if self.context_tokens is not None else self.tokens

    def head_index(self, h: int) -> int:
        """The name of head h of this result: h, or the model's own head H when `--head H` chose one."""
        return h if self.config.head is None else self.config.head


def embed_tokens(tokens: Tokens, config: RunConfig) -> np.ndarray:  # -> [n, d_model]
    """Token vectors plus the positional encoding."""
    n = len(tokens)
    return embed(tokens.strings, config.dim, config.seed) + POSITIONAL[config.positional].encode(n, config.dim)


def _check_text(text: str, what: str) -> None:
    if not text:
        raise DataError(f"empty {what}: nothing to tokenize")
    if not text.strip():
        raise DataError(f"the {what} is only whitespace: nothing to tokenize")


check_text = _check_text


def limited_tokens(text: str, config: RunConfig, limits: Limits, what: str = "text") -> Tokens:
    """The tokens of a text (or context), refused past `limits.max_tokens` with what its matrices would cost."""
    try:
        return tokenize(text, config.tokenizer, limits.max_tokens)
    except TooManyTokens as e:
        raise too_many_tokens(e, what, config, hints(config, limits.command, limits.render)) from None


def estimate(config: RunConfig, m: int, n: int, trace: bool = False, limits: Limits = Limits(),
             cross: bool = False):
    """What a run on m queries and n keys would allocate (`limits.run_bytes`), checked against `limits`."""
    e = run_bytes(config, m, n, trace, limits.render, cross)
    check(e, limits, "this run", hints(config, limits.command, limits.render, e))
    return e


def run(text: str, config: RunConfig = RunConfig(), context: str | None = None, trace: bool = False,
        limits: Limits | None = None) -> AttentionResult:
    """Tokenize, embed, project, attend. Cross-attention when `context` is given.

    `limits` (default `Limits()`: 4096 tokens, 2 GiB) are checked before anything of size n² is
    allocated: the token counts, then the estimate of every array (`attncli.limits`).
    """
    config = config.resolve()
    limits = Limits() if limits is None else limits
    _check_text(text, "text")
    if context is not None:
        _check_text(context, "context")
    tokens = limited_tokens(text, config, limits, "text")
    context_tokens = None if context is None else limited_tokens(context, config, limits, "context")
    n = len(tokens) if context_tokens is None else len(context_tokens)
    estimate(config, len(tokens), n, trace, limits, cross=context is not None)
    x = embed_tokens(tokens, config)
    x_context = None
    if context_tokens is not None:
        x_context = embed_tokens(context_tokens, config)
    variant = VARIANTS[config.variant]
    if config.projection == "identity":
        proj = identity_projections(config.dim)
    else:
        proj = random_projections(np.random.default_rng([config.seed, 1]), config.dim, config.heads,
                                  config.d_k, config.d_v)
    n_keys = len(tokens) if context_tokens is None else len(context_tokens)
    params = variant_params(variant, np.random.default_rng([config.seed, 2]), config.heads, config.d_k, config.d_k,
                            config.d_a, n_keys, {"rank": config.rank, "features": config.features})
    terms: dict | None = {} if trace else None
    masks = parse_masks(",".join(config.mask))
    if config.dtype != "float64" or not config.weights:  # the long-input paths: attncli.efficient
        from attncli.efficient import cast, multi_head_long

        x = cast("X", x, np.dtype(config.dtype))  # the embeddings as the run uses them
        x_context = None if x_context is None else cast("X", x_context, np.dtype(config.dtype))
        mh = multi_head_long(x, x if x_context is None else x_context, proj, config.heads, variant, params, masks,
                             config, [config.seed, 2], terms)
    else:
        mh = multi_head(x, x if x_context is None else x_context, proj, config.heads, variant, params, masks,
                        config.temperature, terms)
    a = mh.attended
    return AttentionResult(text, context, tokens, context_tokens, config, x, x_context, mh.q, mh.k, mh.v,
                           a.scores, a.masked, a.weights, a.out, mh.output, params, proj, terms or {})

