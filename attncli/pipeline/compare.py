"""Numbers that summarise a run: token facts, what it costs, the `attn compare` rows.

NumPy and the core only (no rich, typer or click); the statistics of the weights themselves (row
entropy, the per-head summaries) are in attncli.core.stats.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from attncli.core.attention import attend
from attncli.core.masks import parse_masks
from attncli.core.stats import entropy_scale, head_summaries
from attncli.core.variants import VARIANTS
from attncli.errors import ConfigError
from attncli.pipeline.config import RunConfig
from attncli.pipeline.limits import Limits, check, combine, run_bytes
from attncli.pipeline.result import AttentionResult
from attncli.pipeline.run import check_text, limited_tokens, run
from attncli.pipeline.tokenize import Tokens

# ---- tokens ---------------------------------------------------------------------------------------

_BYTE_TOKEN = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")  # SentencePiece byte fallback


def byte_pieces(tokens: Tokens) -> list[bool]:
    """Which tokens hold only part of a character: a byte-level BPE splits a rare character into
    several tokens that all point at that one character (same non-empty span), and SentencePiece's
    byte fallback writes <0xE2>.

    >>> from attncli.pipeline.tokenize import char
    >>> byte_pieces(char("ab"))
    [False, False]
    """
    spans = tokens.offsets
    out = []
    for i, (start, end) in enumerate(spans):
        shared = start < end and (
            (i > 0 and spans[i - 1] == (start, end)) or (i + 1 < len(spans) and spans[i + 1] == (start, end))
        )
        out.append(shared or bool(_BYTE_TOKEN.match(tokens.strings[i])))
    return out


def unknown(tokens: Tokens) -> list[bool]:
    """Which tokens are the tokenizer's unknown token ([UNK], <unk>); char and word have none."""
    return [tokens.unk_token is not None and s == tokens.unk_token for s in tokens.strings]


def coverage(text: str, tokens: Tokens) -> tuple[bool, str]:
    """Do the offsets reconstruct the input? True when, in order, every non-space character lies in
    a token's span and the spans never run backwards (tokens of one split character share a span).

    >>> from attncli.pipeline.tokenize import word
    >>> coverage("a, b", word("a, b"))
    (True, 'every non-space character is in a token span, in order')
    """
    pos, previous = 0, None
    for i, (start, end) in enumerate(tokens.offsets):
        if start == end:  # a special token ([CLS]) or a trimmed space: no text of its own
            continue
        if not 0 <= start < end <= len(text):
            return False, f"token {i} has offsets {start}–{end} outside the text (length {len(text)})"
        if start < pos and (start, end) != previous:
            return False, f"token {i} ({start}–{end}) overlaps the text before it (up to {pos})"
        gap = text[pos:start]
        if gap.strip():
            return False, f"characters {pos}–{start} ({gap.strip()[:20]!r}) are in no token"
        pos, previous = max(pos, end), (start, end)
    if text[pos:].strip():
        return False, f"characters {pos}–{len(text)} ({text[pos:].strip()[:20]!r}) are in no token"
    return True, "every non-space character is in a token span, in order"


def token_rows(text: str, tokens: Tokens) -> list[dict]:
    """One flat record per token: index, token, id, start, end, the text span, and what kind it is
    (`special` when the tokenizer added it, as a model's does [CLS] and <s>); with --chat, its `segment` of the
    chat (system, user, assistant, or template: what the chat template wrote).

    >>> [r["kind"] for r in token_rows("a b", Tokens(("[CLS]", "a", "b"), (0, 5, 6), ((0, 0), (0, 1), (2, 3)), "x",
    ...                                                 special=(True, False, False)))]
    ['special', '', '']
    """
    pieces, unk = byte_pieces(tokens), unknown(tokens)
    special = tokens.special or (False,) * len(tokens)
    rows = []
    for i, (s, token_id, (start, end)) in enumerate(zip(tokens.strings, tokens.ids, tokens.offsets)):
        is_kind = (("special", special[i]), ("unknown", unk[i]), ("byte piece", pieces[i]), ("no span", start == end))
        kind = next((k for k, yes in is_kind if yes), "")
        rows.append(
            {
                "index": i,
                "token": s,
                "id": int(token_id),
                "start": int(start),
                "end": int(end),
                "span": text[start:end],
                "kind": kind,
                **({"segment": tokens.segments[i]} if tokens.segments else {}),
            }
        )
    return rows


def tokenizer_row(text: str, tokens: Tokens, name: str) -> dict:
    """One row of `attn compare --model A --model B`: how one tokenizer cuts `text`. Characters and UTF-8 bytes
    per token are over the tokens cut from the text (a special token such as <s> or [CLS] covers none of it).

    >>> from attncli.pipeline.tokenize import word
    >>> row = tokenizer_row("time flies", word("time flies"), "word")
    >>> row["n_tokens"], row["chars_per_token"], row["bytes_per_token"]
    (2, 5.0, 5.0)
    """
    special = sum(tokens.special) if tokens.special else 0
    cut = len(tokens) - special
    size = len(text.encode("utf-8", "surrogatepass"))
    return {
        "tokenizer": name,
        "vocab_size": tokens.vocab_size,
        "n_tokens": len(tokens),
        "special": special,
        "chars_per_token": len(text) / cut if cut else None,
        "bytes_per_token": size / cut if cut else None,
        "unknown": sum(unknown(tokens)),
        "byte_pieces": sum(byte_pieces(tokens)),
        "tokens": list(tokens.strings),
        "ids": [int(i) for i in tokens.ids],
    }


def tokenizers_document(text: str, rows: list[dict]) -> dict:
    """`attn compare --model A --model B -f json`: schema attncli.compare-tokenizers/1, a row per tokenizer."""
    return {"schema": "attncli.compare-tokenizers/1", "text": text, "rows": rows}


# ---- what a run costs -----------------------------------------------------------------------------


def score_madds(variant: str, h: int, m: int, n: int, d_k: int, d_a: int) -> int:
    """Multiply-adds of the score step S, for every head (what n² costs).

    >>> score_madds("scaled", 1, 5, 5, 16, 16)   # h m n d_k
    400
    """
    return VARIANTS[variant].score_madds(h, m, n, d_k, d_a)


def mix_madds(h: int, m: int, n: int, d_v: int) -> int:
    """Multiply-adds of O = A V for every head."""
    return h * m * n * d_v


def approx_madds(config, h: int, m: int, n: int) -> tuple[int, int] | None:
    """(scores, A V) multiply-adds of linformer and performer on their linear path (--no-weights), else None.

    linformer: K̄ and V̄ pool the n keys and values (n·d each), then m·R scores and A' V̄ (R = min(rank, n));
    performer: the F features of the m queries and n keys, then φ(K)ᵀV and φ(Q)(φ(K)ᵀV).

    >>> from attncli.pipeline.config import RunConfig
    >>> approx_madds(RunConfig(variant="linformer", rank=2, d_k=4, d_v=4), 1, 8, 8)
    (96, 96)
    """
    c = config
    if c.rank is not None:
        r = min(c.rank, n)
        return h * (n * c.d_k + m * r * c.d_k), h * (n * c.d_v + m * r * c.d_v)
    if c.features is not None:
        f = c.features
        return h * (m + n) * f * c.d_k, h * (m + n) * f * c.d_v
    return None


def approximation_error(result: AttentionResult) -> dict | None:
    """An approximation's weights against the exact variant's on the same Q, K, V, mask and temperature:
    {"error_vs", "max_abs_error", "mean_kl"} (attncli.core.approx.approx_error; KL(exact ‖ approx) in nats,
    averaged over the rows that are not fully masked); None for an exact variant or without weights."""
    c = result.config
    exact = VARIANTS[c.variant].approximates
    if exact is None or result.weights is None:
        return None
    from attncli.core.approx import approx_error  # late: start-up (loaded only when an approximation is compared)

    a = attend(result.q, result.k, result.v, VARIANTS[exact], None, parse_masks(",".join(c.mask)), c.temperature)
    return {"error_vs": exact, **approx_error(a.weights, result.weights)}


def weight_bytes(result: AttentionResult) -> int:
    """Bytes of the weight matrices (W_Q, W_K, W_V, W_O unless identity, and the variant's own), float64."""
    arrays = list(result.params.values())
    if result.config.projection == "random" and result.projections is not None:
        p = result.projections
        arrays += [p.w_q, p.w_k, p.w_v, p.w_o]
    return int(sum(a.nbytes for a in arrays))


def summary_row(result: AttentionResult) -> dict:
    """One row of `attn compare`: sizes, costs and the shape of the attention of one run."""
    c = result.config
    tokens = result.tokens
    weights = result.attention()[1]
    m, n = weights.shape[1:]
    stats = head_summaries(weights, result.context is None)
    entropies = [s["mean_entropy_bits"] for s in stats if s["mean_entropy_bits"] is not None]
    row_maxes = [s["mean_row_max"] for s in stats if s["mean_row_max"] is not None]
    mean_entropy = float(np.mean(entropies)) if entropies else None
    max_entropy, ratio = entropy_scale(mean_entropy, n)
    assert c.d_k is not None and c.d_v is not None and c.d_a is not None  # a resolved config has its widths
    costs = approx_madds(c, c.heads, m, n) or (
        score_madds(c.variant, c.heads, m, n, c.d_k, c.d_a),
        mix_madds(c.heads, m, n, c.d_v),
    )
    return {
        "tokenizer": c.tokenizer,
        "variant": c.variant,
        "n_tokens": m,
        "distinct": len(set(tokens.strings)),
        "vocab_size": tokens.vocab_size,
        "unknown": sum(unknown(tokens)),
        "byte_pieces": sum(byte_pieces(tokens)),
        "cells": m * n,
        "score_madds": costs[0],
        "mix_madds": costs[1],
        "weight_bytes": weight_bytes(result),
        "embedding_bytes": None if tokens.vocab_size is None else tokens.vocab_size * c.dim * 8,
        "mean_entropy_bits": mean_entropy,
        "max_entropy_bits": max_entropy,
        "entropy_ratio": ratio,
        "mean_row_max": float(np.mean(row_maxes)) if row_maxes else None,
        "tokens": list(tokens.strings),
    }


def split_names(spec: str, what: str) -> list[str]:
    """'char, word,bpe' -> ['char', 'word', 'bpe'] (duplicates dropped); at least one name."""
    names = list(dict.fromkeys(part.strip() for part in spec.split(",") if part.strip()))
    if not names:
        raise ConfigError(f"--{what} needs at least one name, comma-separated")
    return names


def compare_runs(
    text: str, tokenizers: list[str], variants: list[str], config: RunConfig, limits: Limits | None = None
) -> list[AttentionResult]:
    """One run per (tokenizer, variant), tokenizers outermost, every other choice from `config`.

    Every result is held at once, so before the first run the text is tokenized by each tokenizer
    (each within `limits.max_tokens`) and the estimates of all the runs together are checked.
    """
    limits = Limits() if limits is None else limits
    check_text(text, "text")
    pairs = [replace(config, tokenizer=t, variant=v) for t in tokenizers for v in variants]
    resolved = [c.resolve() for c in pairs]
    counts = {t: len(limited_tokens(text, replace(resolved[0], tokenizer=t), limits)) for t in tokenizers}
    total = combine([run_bytes(c, counts[c.tokenizer], counts[c.tokenizer], output=limits.output) for c in resolved])
    check(total, limits, f"comparing {len(pairs)} runs", resolved[0])
    return [run(text, c, limits=limits) for c in pairs]


def tokens_document(text: str, tokens: Tokens) -> dict:
    """`attn tokens -f json`: schema attncli.tokens/1, one row per token under "rows"; with --chat, `text` is the
    chat as the template wrote it and "segments" each token's part of it (system, user, assistant, template)."""
    ok, why = coverage(text, tokens)
    return {
        "schema": "attncli.tokens/1",
        "text": text,
        "tokenizer": tokens.tokenizer,
        "vocab_size": tokens.vocab_size,
        "n_tokens": len(tokens),
        "reconstructs": ok,
        "reconstructs_why": why,
        "rows": token_rows(text, tokens),
        **({"segments": list(tokens.segments)} if tokens.segments else {}),
    }


def compare_document(text: str, results: list[AttentionResult]) -> dict:
    """`attn compare -f json`: schema attncli.compare/1, the shared choices and one row per run."""
    c = results[0].config
    shared = {
        "heads": c.heads,
        "dim": c.dim,
        "d_k": c.d_k,
        "d_v": c.d_v,
        "mask": list(c.mask),
        "positional": c.positional,
        "projection": c.projection,
        "temperature": c.temperature,
        "seed": c.seed,
    }
    rows = [summary_row(r) for r in results]
    errors = [approximation_error(r) for r in results]
    if any(errors):  # an approximation among the runs: every row says how far it is from exact attention
        for row, error in zip(rows, errors):
            row.update(error or {"error_vs": None, "max_abs_error": None, "mean_kl": None})
    return {"schema": "attncli.compare/1", "text": text, "config": shared, "rows": rows}
