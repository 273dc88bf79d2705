"""The one result type: everything a run computed, which every renderer and format reads.

Its `source` says what was run — a text (`TextRun`, attncli.pipeline.run), matrices the
user gave (`GivenMatrices`, attncli.pipeline.given) or one layer of a real model
(`ModelLayer`, attncli.models.runs.source) — and supplies everything that differs between them:
the caption, the JSON "config" record, the stages of `attn steps` and the heads' names.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from attncli.core.attention import Projections
from attncli.errors import ConfigError
from attncli.pipeline.config import RunConfig
from attncli.pipeline.tokenize import Tokens

#: What each stage is, in words (the page's titles; a JSON record's "title"); a variant's trace term is "a term".
TITLES = {
    "x": "input",
    "e": "embeddings",
    "pe": "positions",
    "x_context": "context input",
    "q": "queries",
    "k": "keys",
    "v": "values",
    "scores": "scores",
    "masked_scores": "masked scores",
    "weights": "weights",
    "head_outputs": "head outputs",
    "concat": "heads side by side",
    "output": "output",
}
TRACE = "trace:"  # the name of a variant's trace term starts with it


@dataclass(frozen=True)
class Step:
    """One stage of a run as `attn steps` shows it: its numbers, the formula they follow, what each axis is."""

    name: str  # the JSON name: "x", "q", "scores", "trace:qk", ...
    formula: str  # what a reader checks the numbers against
    array: np.ndarray
    axes: tuple[str, ...]  # one of "head", "query", "key", "dim" per axis
    note: str = ""
    stage: str | None = None  # the rule above it in `attn steps` when not its name's (a model layer's input)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def title(self) -> str:
        """The stage in words, before its formula: `queries` (Q = X W_Q), or for a variant's own term
        `a term of the score: qk`.

        >>> Step("q", "Q = X W_Q", np.zeros((1, 2, 3)), ("head", "query", "dim")).title
        'queries'
        """
        if self.name.startswith(TRACE):
            return "a term of the score: " + self.name[len(TRACE) :]
        return TITLES.get(self.name, self.name)


class Source(Protocol):
    """What was run, and everything about the result that depends on it."""

    @property
    def output_formula(self) -> str:
        """O = ... in the title of the output table."""
        ...

    @property
    def matrix_name(self) -> str | None:
        """What the weight matrices are, over them, when a plain "attention weights" would not say it (which
        attention of an encoder–decoder); None for the others."""
        ...

    def caption(self, result: AttentionResult) -> list[str]:
        """The lines under the matrix: what a reader needs to reproduce and trust it."""
        ...

    def config_record(self, result: AttentionResult) -> dict:
        """The JSON "config" of `attn show -f json` and `attn steps -f json`."""
        ...

    def steps(self, result: AttentionResult) -> list[Step]:
        """Every stage as a named array with its formula: what `attn steps` shows."""
        ...

    def head_index(self, h: int) -> int:
        """The name of head h of the result's arrays."""
        ...

    def heads_shown(self, result: AttentionResult) -> str:
        """Which head `attn compare` draws (head 0), after its title: "" or " · head 0 of 2"."""
        ...

    def compare_note(self, label: str) -> str | None:
        """A line under `attn compare` when this run is not a seeded random one (label: its tokenizer)."""
        ...

    def stats_unasked(self, result: AttentionResult) -> bool:
        """Whether `attn show` adds head statistics to a short text by itself (its panels stay few)."""
        ...


@dataclass(frozen=True, kw_only=True)
class AttentionResult:
    """Everything one run computed. Shapes: m queries, n keys, h heads. Built by keyword only: nineteen fields,
    several of the same type, are too many to pass by position."""

    text: str | None  # None in attn compute: there is no text
    context: str | None
    tokens: Tokens  # the queries' tokens
    context_tokens: Tokens | None  # the keys' tokens in cross-attention, else None
    config: RunConfig  # resolved; a text run's every choice, else the attention's own (variant, widths, masks, T)
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
    source: Source  # what was run: TextRun, GivenMatrices or ModelLayer
    params: dict = field(default_factory=dict)  # the variant's parameters
    projections: Projections | None = None
    trace: dict = field(default_factory=dict)  # the variant's intermediate terms, if asked

    @property
    def key_tokens(self) -> Tokens:
        return self.context_tokens if self.context_tokens is not None else self.tokens

    def raw_tokens(self) -> AttentionResult:
        """This result with its tokens labelled as the vocabulary writes them (--raw-tokens: `ĠParis`, not
        `␣Paris`); every number the same."""
        ctx = self.context_tokens
        return replace(
            self,
            tokens=replace(self.tokens, raw=True),
            context_tokens=None if ctx is None else replace(ctx, raw=True),
        )

    def head_index(self, h: int) -> int:
        """The name of head h of this result: h, or the model's own head H when `--head H` chose one."""
        return self.source.head_index(h)

    def attention(self, why: str = "the weights were not computed (--no-weights)") -> tuple[np.ndarray, np.ndarray]:
        # -> scores [h, m, n], weights [h, m, n]
        """The scores and weights, or ConfigError(`why`) for a run that computed none (--no-weights)."""
        if self.scores is None or self.weights is None:
            raise ConfigError(why)
        return self.scores, self.weights


def config_record(c: RunConfig, tokenizer, positional, projection, seed, chosen: dict | None = None) -> dict:
    """The JSON "config": the attention's settings from `c`, what was run as the source says it.

    `chosen` (a model's layer and head) comes after the seed, then the long-input options
    when they are not their defaults:

        >>> config_record(RunConfig().resolve(), "word", "none", "random", 0)["d_k"]
        16
    """
    return {
        "tokenizer": tokenizer,
        "variant": c.variant,
        "heads": c.heads,
        "dim": c.dim,
        "d_k": c.d_k,
        "d_v": c.d_v,
        "d_a": c.d_a,
        "mask": list(c.mask),
        "positional": positional,
        "projection": projection,
        "temperature": c.temperature,
        "seed": seed,
        **(chosen or {}),
        **({} if c.rank is None else {"rank": c.rank}),
        **({} if c.features is None else {"features": c.features}),
        **({} if c.dtype == "float64" else {"dtype": c.dtype}),
        **({} if c.weights else {"weights": False}),
    }


@dataclass(frozen=True)
class OneHead:
    """The source of a result narrowed to one of its heads (`attn show --head H` on a text run)."""

    inner: Source
    head: int
    n_head: int

    @property
    def output_formula(self) -> str:
        return self.inner.output_formula

    @property
    def matrix_name(self) -> str | None:
        return self.inner.matrix_name

    def caption(self, result: AttentionResult) -> list[str]:
        return [*self.inner.caption(result), f"head {self.head} of 0..{self.n_head - 1} shown (--head)"]

    def config_record(self, result: AttentionResult) -> dict:
        return {**self.inner.config_record(result), "head": self.head}

    def steps(self, result: AttentionResult) -> list[Step]:
        return self.inner.steps(result)

    def head_index(self, h: int) -> int:
        return self.head

    def heads_shown(self, result: AttentionResult) -> str:
        return f" · head {self.head} of {self.n_head}"

    def compare_note(self, label: str) -> str | None:
        return self.inner.compare_note(label)

    def stats_unasked(self, result: AttentionResult) -> bool:
        return True


def one_head(result: AttentionResult, head: int) -> AttentionResult:
    """`result` with only head `head` in its per-head arrays (the output O keeps every head's part); a negative
    `head` counts from the end, as it does with --model (`models/network/model.py`'s `check_head`).

    >>> from attncli.pipeline.run import run
    >>> r = one_head(run("time flies", RunConfig(heads=2)), 1)
    >>> r.weights.shape, r.head_index(0), r.source.config_record(r)["head"]
    ((1, 2, 2), 1, 1)
    """
    n_head = result.q.shape[0]
    if not -n_head <= head < n_head:
        raise ConfigError(
            f"--head {head} is out of range: the run has {n_head} head{'s' * (n_head > 1)}, 0..{n_head - 1} "
            "(negative counts from the end)"
        )
    head %= n_head
    pick = slice(head, head + 1)

    def narrow(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[pick]

    return replace(
        result,
        q=result.q[pick],
        k=result.k[pick],
        v=result.v[pick],
        scores=narrow(result.scores),
        masked=narrow(result.masked),
        weights=narrow(result.weights),
        head_outputs=result.head_outputs[pick],
        source=OneHead(result.source, head, n_head),
    )
