"""text -> tokens -> X -> Q, K, V -> scores -> mask -> softmax -> A V -> merged output.

One frozen `RunConfig` says how; `run()` returns one `AttentionResult` that every
renderer and format reads:

    >>> r = run("time flies like an arrow", RunConfig())
    >>> r.tokens.strings, r.weights.shape, r.output.shape
    (('time', 'flies', 'like', 'an', 'arrow'), (1, 5, 5), (5, 16))

Imports numpy and the core modules only: no rich, typer or click.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from attncli.core.attention import Projections, identity_projections, multi_head, random_projections
from attncli.core.masks import parse_masks
from attncli.core.variants import VARIANTS, variant_params
from attncli.errors import DataError
from attncli.pipeline.caption import caption_lines
from attncli.pipeline.config import RunConfig
from attncli.pipeline.embed import POSITIONAL, embed
from attncli.pipeline.limits import Limits, check, run_bytes, too_many_tokens
from attncli.pipeline.result import AttentionResult, Step, config_record
from attncli.pipeline.tokenize import Tokens, TooManyTokens, check_count, expected_tokens, tokenize


@dataclass(frozen=True)
class TextRun:
    """The source of `run()`: hashed embeddings and random (seeded) or identity projections, as `config` says.

    >>> r = run("time flies", RunConfig(heads=2))
    >>> r.source.caption(r)[1]
    '2 tokens (word) · d_model 16 · 2 heads · d_k 8 · d_v 8'
    """

    config: RunConfig  # resolved: the same object as the result's config

    output_formula = "concat(A_h V_h) W_O"
    matrix_name = None

    def caption(self, result: AttentionResult) -> list[str]:
        c = self.config
        what = [
            f"{len(result.tokens)} {'queries' if result.context else 'tokens'} ({c.tokenizer})"
            + (f", {len(result.key_tokens)} keys from --context" if result.context is not None else "")
            + f" · d_model {c.dim} · {c.heads} head{'s' if c.heads > 1 else ''} · d_k {c.d_k} · d_v {c.d_v}",
            (
                f"W_Q, W_K, W_V, W_O: random, seed {c.seed}, untrained"
                if c.projection == "random"
                else f"projection identity: Q = K = V = X (seed {c.seed})"
            )
            + (" · no positions: order-blind" if c.positional == "none" else f" · positions {c.positional}"),
        ]
        return caption_lines(result, what, "rows: queries, columns: keys")

    def config_record(self, result: AttentionResult) -> dict:
        c = self.config
        return config_record(c, c.tokenizer, c.positional, c.projection, c.seed)

    def steps(self, result: AttentionResult) -> list[Step]:
        from attncli.pipeline.steps import text_steps  # late: start-up (attn steps and the page)

        return text_steps(result)

    def head_index(self, h: int) -> int:
        return h

    def heads_shown(self, result: AttentionResult) -> str:
        return f" · head 0 of {self.config.heads}" if self.config.heads > 1 else ""

    def compare_note(self, label: str) -> str | None:
        return None  # the shared line of `attn compare` already says: random (seeded), not trained

    def stats_unasked(self, result: AttentionResult) -> bool:
        return True


def embed_tokens(tokens: Tokens, config: RunConfig) -> np.ndarray:  # -> [n, d_model]
    """Token vectors plus the positional encoding."""
    n = len(tokens)
    return embed(tokens.strings, config.dim, config.seed) + POSITIONAL[config.positional].encode(n, config.dim)


@functools.lru_cache(maxsize=4)  # the same for every line of `attn show --lines`
def seeded_projections(seed: int, d_model: int, n_head: int, d_k: int, d_v: int) -> Projections:
    """The random W_Q, W_K, W_V, W_O of a seed (read-only: one set is shared by the runs that use it)."""
    proj = random_projections(np.random.default_rng([seed, 1]), d_model, n_head, d_k, d_v)
    for w in (proj.w_q, proj.w_k, proj.w_v, proj.w_o):
        w.flags.writeable = False
    return proj


def _check_text(text: str, what: str) -> None:
    """An empty text is refused here; whitespace alone ("\\n\\n\\n") is a text like any other, which a tokenizer
    that gives it no tokens refuses (`tokenize`: the word tokenizer; a model's gives it tokens)."""
    if not text:
        raise DataError(f"empty {what}: nothing to tokenize")


check_text = _check_text


def limited_tokens(text: str, config: RunConfig, limits: Limits, what: str = "text") -> Tokens:
    """The tokens of a text (or context), refused past `limits.max_tokens` with what its matrices would cost."""
    try:
        return tokenize(text, config.tokenizer, limits.max_tokens)
    except TooManyTokens as e:
        raise too_many_tokens(e, what, config, limits) from None


def check_tokens(text: str, config: RunConfig, limits: Limits, what: str = "text") -> None:
    """The same refusal as `limited_tokens`, with no tokens made (the count stops past the limit)."""
    if limits.max_tokens is None:
        return
    try:
        check_count(text, config.tokenizer, limits.max_tokens)
    except TooManyTokens as e:
        raise too_many_tokens(e, what, config, limits) from None


def estimate(config: RunConfig, m: int, n: int, trace: bool = False, limits: Limits = Limits(), cross: bool = False):
    """What a run on m queries and n keys would allocate (`limits.run_bytes`), checked against `limits`."""
    e = run_bytes(config, m, n, trace, limits.output, cross)
    check(e, limits, "this run", config)
    return e


def run(
    text: str,
    config: RunConfig = RunConfig(),
    context: str | None = None,
    trace: bool = False,
    limits: Limits | None = None,
) -> AttentionResult:
    """Tokenize, embed, project, attend. Cross-attention when `context` is given.

    `limits` (default `Limits()`: 4096 tokens, 2 GiB) are checked before anything of size n² is
    allocated: the token counts, then the estimate of every array (`attncli.pipeline.limits`).
    """
    config = config.resolve()
    limits = Limits() if limits is None else limits
    _check_text(text, "text")
    if context is not None:
        _check_text(context, "context")
    if limits.max_bytes is not None:  # priced before a token is made: a long text with a raised --max-tokens
        _price_text(text, context, config, limits, trace)
    tokens = limited_tokens(text, config, limits, "text")
    context_tokens = None if context is None else limited_tokens(context, config, limits, "context")
    n = len(tokens) if context_tokens is None else len(context_tokens)
    estimate(config, len(tokens), n, trace, limits, cross=context is not None)
    x = embed_tokens(tokens, config)
    x_context = None if context_tokens is None else embed_tokens(context_tokens, config)
    proj, params = _parameters(config, n)
    terms: dict | None = {} if trace else None
    x, x_context, mh = _attend(x, x_context, proj, params, config, terms)
    a = mh.attended
    return AttentionResult(
        text=text,
        context=context,
        tokens=tokens,
        context_tokens=context_tokens,
        config=config,
        x=x,
        x_context=x_context,
        q=mh.q,
        k=mh.k,
        v=mh.v,
        scores=a.scores,
        masked=a.masked,
        weights=a.weights,
        head_outputs=a.out,
        output=mh.output,
        source=TextRun(config),
        params=params,
        projections=proj,
        trace=terms or {},
    )


def _price_text(text: str, context: str | None, config: RunConfig, limits: Limits, trace: bool) -> None:
    """The token counts of the text and the context, and the run's memory at about that many tokens, checked
    against `limits` from their characters alone, before a token is made."""
    for part, what in ((text, "text"), (context, "context")):
        if part is not None:
            check_tokens(part, config, limits, what)
    m_about = expected_tokens(text, config.tokenizer)
    n_about = m_about if context is None else expected_tokens(context, config.tokenizer)
    estimate(config, m_about, n_about, trace, limits, cross=context is not None)


def _parameters(config: RunConfig, n_keys: int):  # -> (Projections, {name: [h, ...] array})
    """The run's seeded projections (or Q = K = V = X) and its variant's parameters, for `n_keys` keys."""
    assert config.d_k is not None and config.d_v is not None and config.d_a is not None  # resolve() filled them in
    if config.projection == "identity":
        proj = identity_projections(config.dim)
    else:
        proj = seeded_projections(config.seed, config.dim, config.heads, config.d_k, config.d_v)
    params = variant_params(
        VARIANTS[config.variant],
        np.random.default_rng([config.seed, 2]),
        config.heads,
        config.d_k,
        config.d_k,
        config.d_a,
        n_keys,
        {"rank": config.rank, "features": config.features},
    )
    return proj, params


def _attend(x, x_context, proj, params, config: RunConfig, terms: dict | None):
    """(x, x_context as the run uses them, the heads' attention): the NumPy core in float64 with weights, else
    the long-input paths (attncli.core.efficient), whose embeddings are cast to the run's dtype first."""
    # [m, d_model], [n, d_model] or None -> ([m, d_model], [n, d_model] or None, MultiHead)
    variant, masks = VARIANTS[config.variant], parse_masks(",".join(config.mask))
    if config.dtype == "float64" and config.weights:
        keys = x if x_context is None else x_context
        mh = multi_head(x, keys, proj, config.heads, variant, params, masks, config.temperature, terms)
        return x, x_context, mh
    from attncli.core.efficient import cast, multi_head_long  # late: start-up (when asked: kernels, threads)

    x = cast("X", x, np.dtype(config.dtype))  # the embeddings as the run uses them
    x_context = None if x_context is None else cast("X", x_context, np.dtype(config.dtype))
    keys = x if x_context is None else x_context
    mh = multi_head_long(x, keys, proj, config.heads, variant, params, masks, config, [config.seed, 2], terms)
    return x, x_context, mh
