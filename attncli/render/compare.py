"""`attn compare` as Rich renderables: one summary table, the tokens, and the heatmaps.

The summary has one column per (tokenizer, variant) so that "what does BPE
change here?" reads across one row. The heatmaps sit side by side when the
terminal is wide enough and stack otherwise (`Multiples` packs them at render time,
when the console's width is known).
"""

from __future__ import annotations

import os

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attncli.pipeline.result import AttentionResult
from attncli.render.fit import Fitted
from attncli.render.matrix import Matrix
from attncli.render.show import Multiples, escape_token
from attncli.render.units import Units

HEATMAP_ROWS = 16  # longer heatmaps elide their middle rows


def _count(x) -> str:
    return "—" if x is None else f"{x:,}"


def _bytes(x) -> str:
    if x is None:
        return "—"
    for unit in ("B", "KB", "MB", "GB"):
        if x < 1024 or unit == "GB":
            return f"{x:,.0f} {unit}" if unit == "B" else f"{x:,.1f} {unit}"
        x /= 1024
    return str(x)


def _f(x, precision: int) -> str:
    return "—" if x is None else f"{x:.{precision}f}"


def _vocab(row: dict) -> str:
    if row["vocab_size"] is not None:
        return f"{row['vocab_size']:,}"
    return "open (code points)" if row["tokenizer"] == "char" else "open"


METRICS = [  # (label, how to show one row's value)
    ("tokens n", lambda r, p: _count(r["n_tokens"])),
    ("distinct tokens", lambda r, p: _count(r["distinct"])),
    ("vocabulary size", lambda r, p: _vocab(r)),
    ("unknown / byte pieces", lambda r, p: f"{r['unknown']} / {r['byte_pieces']}"),
    ("matrix cells n²", lambda r, p: _count(r["cells"])),
    ("multiply-adds: scores", lambda r, p: _count(r["score_madds"])),
    ("multiply-adds: A V", lambda r, p: _count(r["mix_madds"])),
    ("weight matrices", lambda r, p: _bytes(r["weight_bytes"])),
    ("embedding table", lambda r, p: _bytes(r["embedding_bytes"])),
    ("mean row entropy (bits)", lambda r, p: f"{_f(r['mean_entropy_bits'], p)} of {r['max_entropy_bits']:.{p}f}"),
    ("entropy ÷ log₂ n", lambda r, p: _f(r["entropy_ratio"], p)),
    ("mean row maximum", lambda r, p: _f(r["mean_row_max"], p)),
]
ERROR_METRICS = [  # when an approximation is among the runs (rows then have "max_abs_error")
    ("max |A − A_{exact}|", lambda r, p: _g(r["max_abs_error"], p)),
    ("mean KL (nats)", lambda r, p: _g(r["mean_kl"], p)),
]


def _g(x, precision: int) -> str:
    """A small error: 3 significant digits (0.00 would hide it), — for an exact run."""
    return "—" if x is None else "0" if x == 0 else f"{x:.{max(1, precision + 1)}g}"


def short(tokenizer: str) -> str:
    """A tokenizer's label: its name, or the file name of a tokenizer.json path.

    >>> short("bpe"), short("models/bert/tokenizer.json")
    ('bpe', 'tokenizer.json')
    """
    return escape_token(os.path.basename(tokenizer) if os.sep in tokenizer else tokenizer)


def _name(row: dict, several_variants: bool, several_tokenizers: bool) -> str:
    parts = ([short(row["tokenizer"])] if several_tokenizers or not several_variants else []) + (
        [row["variant"]] if several_variants else []
    )
    return " · ".join(parts)


def summary_table(rows: list[dict], precision: int = 2) -> Table:
    """Metrics down, one column per run."""
    several_v = len({r["variant"] for r in rows}) > 1
    several_t = len({r["tokenizer"] for r in rows}) > 1
    title = (
        "Tokenizers × variants"
        if several_t and several_v
        else "Variants compared"
        if several_v
        else "Tokenizers compared"
    )
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", title_style="bold")
    table.add_column("", style="dim", overflow="fold")
    for r in rows:
        table.add_column(Text(_name(r, several_v, several_t), style="bold"), justify="right", overflow="fold")
    for label, show in METRICS:
        table.add_row(label, *(show(r, precision) for r in rows))
    exact = "/".join(sorted({r["error_vs"] for r in rows if r.get("error_vs")}))
    for label, show in ERROR_METRICS if exact else []:
        table.add_row(label.format(exact=exact), *(show(r, precision) for r in rows))
    return table


TOKENS_SHOWN = 40  # tokens listed per tokenizer; the rest are counted


def tokens_line(rows: list[dict], width: int) -> Table:
    """Each tokenizer's tokens, joined by · and wrapped; beyond TOKENS_SHOWN, how many more."""
    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column(style="bold", overflow="fold")
    table.add_column(overflow="fold")
    seen = set()
    for r in rows:
        if r["tokenizer"] in seen:
            continue
        seen.add(r["tokenizer"])
        tokens = r["tokens"]
        line = Text(" · ".join(escape_token(t) for t in tokens[:TOKENS_SHOWN]))
        if len(tokens) > TOKENS_SHOWN:
            line.append(f" … {len(tokens) - TOKENS_SHOWN} more (-f json for all)", style="dim")
        table.add_row(Text(short(r["tokenizer"])), line)
    return table


TOKENIZER_METRICS = [  # (label, how to show one row's value): `attn compare --model A --model B`
    ("tokens n", lambda r, p: _count(r["n_tokens"])),
    ("of them special (<s>, [CLS])", lambda r, p: _count(r["special"])),
    ("vocabulary size", lambda r, p: _vocab(r)),
    ("characters per token", lambda r, p: _f(r["chars_per_token"], p)),
    ("UTF-8 bytes per token", lambda r, p: _f(r["bytes_per_token"], p)),
    ("unknown / byte pieces", lambda r, p: f"{r['unknown']} / {r['byte_pieces']}"),
]
TOKENIZERS_NOTE = (
    "characters and bytes per token: of the tokens cut from the text (a special token covers none of it); "
    "unknown: the tokenizer's unknown token ([UNK], <unk>); byte pieces: tokens holding part of a character "
    "(byte fallback <0xE2>, or a byte-level BPE splitting it)"
)


def tokenizers_view(rows: list[dict], precision: int = 2, width: int = 100) -> RenderableType:
    """Real tokenizers side by side (a row of the document each): metrics down, one column per tokenizer, then
    each one's tokens."""
    table = Table(
        title="Tokenizers compared", box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", title_style="bold"
    )
    table.add_column("", style="dim", overflow="fold")
    for r in rows:
        table.add_column(Text(short(r["tokenizer"]), style="bold"), justify="right", overflow="fold")
    for label, show in TOKENIZER_METRICS:
        table.add_row(label, *(show(r, precision) for r in rows))
    return Group(Fitted(table), Fitted(tokens_line(rows, width)), Units(TOKENIZERS_NOTE, style="dim"))


def heatmap(result: AttentionResult, label: str, precision: int) -> Matrix:
    """Head 0's weights, titled with its run; its middle rows elided beyond HEATMAP_ROWS."""
    weights = result.attention()[1]
    m, n = weights.shape[1:]
    title = f"{label}  A [{m}, {n}]" + result.source.heads_shown(result)
    masked = None if result.masked is None else result.masked[0]
    return Matrix(
        weights[0],
        result.tokens.drawn(),
        result.key_tokens.drawn(),
        title,
        precision,
        "weights",
        masked,
        max_rows=HEATMAP_ROWS,
    )


def compare_view(
    rows: list[dict], results: list[AttentionResult], precision: int = 2, width: int = 100
) -> RenderableType:
    several_v = len({r["variant"] for r in rows}) > 1
    several_t = len({r["tokenizer"] for r in rows}) > 1
    c = results[0].config
    note = (
        f"d_model {c.dim} · {c.heads} head{'s' if c.heads > 1 else ''} · positions {c.positional} · "
        f"seed {c.seed} · float64 weights, random (seeded), not trained"
        + (f" · mask {', '.join(c.mask)}" if c.mask else "")
    )
    for res in results:
        line = res.source.compare_note(short(res.config.tokenizer))  # --model: the real model's column
        if line is not None:
            note += "\n" + line
    exact = sorted({r["error_vs"] for r in rows if r.get("error_vs")})
    if exact:
        note += (
            f"\nerror of an approximation: the largest |A − A_{'/'.join(exact)}| over all cells (every head), and "
            f"the mean over rows of KL(A_{'/'.join(exact)} ‖ A), on the same Q, K, V; its multiply-adds are those "
            "of its linear path (--no-weights)"
        )
    maps = [heatmap(res, _name(r, several_v, several_t), precision) for res, r in zip(results, rows)]
    return Group(
        Fitted(summary_table(rows, precision)),
        Fitted(tokens_line(rows, width)),
        Units(note, style="dim"),
        Text(""),
        Multiples(maps),
    )
