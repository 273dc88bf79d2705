"""The one result type: everything a run computed, which every renderer and format reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attncli.core.attention import Projections
from attncli.pipeline.config import RunConfig
from attncli.pipeline.tokenize import Tokens


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
