"""The caption lines a text run and given matrices share: the score formula, the mask, the long-input settings.

    >>> from attncli.pipeline.run import run
    >>> caption_lines(run("time flies"), ["a text run"], "rows are queries")
    ['scaled: s = qᵀk / √d_k', 'a text run', 'rows are queries; each row sums to 1; ▸ = row maximum']

Plain strings: the renderer escapes and styles them.
"""

from __future__ import annotations

from attncli.core.variants import VARIANTS
from attncli.pipeline.result import AttentionResult
from attncli.pipeline.tokentext import legend


def caption_lines(result: AttentionResult, what: list[str], rows: str) -> list[str]:
    """The variant's formula, `what` was run, the mask, the long-input settings, then how to read the rows."""
    c = result.config
    variant = VARIANTS[c.variant]
    lines = [
        f"{c.variant}: {variant.formula}"
        + (f", divided by temperature {c.temperature:g}" if c.temperature != 1 else ""),
        *what,
    ]
    if c.mask:
        lines.append(f"mask: {', '.join(c.mask)}" + (" (· = masked, weight 0)" if result.weights is not None else ""))
    lines += long_caption(result)
    drawn = [*result.tokens.drawn(), *(result.key_tokens.drawn() if result.context is not None else ())]
    said = legend(drawn)
    if said is not None:
        lines.append(said)
    if result.weights is not None:
        lines.append(rows + "; each row sums to 1; ▸ = row maximum")
    return lines


def long_caption(result: AttentionResult) -> list[str]:
    """An approximation's settings (linformer's rank, performer's features), --dtype float32, --no-weights."""
    c, lines = result.config, []
    variant = VARIANTS[c.variant]
    if c.rank is not None:
        lines.append(
            f"rank {c.rank}: the keys pooled into {min(c.rank, len(result.key_tokens))} random groups "
            f"(--seed {c.seed}); an approximation of {variant.approximates}: attn compare shows its error"
        )
    if c.features is not None:
        lines.append(
            f"{c.features} random features (--seed {c.seed}); an approximation of {variant.approximates}: "
            "attn compare shows its error"
        )
    if c.dtype != "float64":
        lines.append(f"{c.dtype}: Q, K, V, scores, weights and outputs")
    if result.weights is None:
        lines.append("--no-weights: the outputs only, computed without the n × n matrix (no scores, no weights)")
    return lines
