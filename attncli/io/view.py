"""`attn view`: the interactive page's data, one JSON document (schema attncli.view/1).

The page (`-f html`, `attn view -o FILE.html`, `--save-html`) embeds exactly the document `-f json` writes,
once. Its weights are for drawing: integers, each weight × SCALE rounded, so that a 12-layer × 12-head model on
40 tokens stays well under a megabyte. The exact numbers stay one step away: a text run carries every stage of
`attn steps` whole ("steps", the same records as `attn steps -f json`); a model run carries the command and the
jq path that print any weight exactly ("exact").

    >>> from attncli.pipeline.run import run
    >>> doc = result_view(run("a b a"), "attn view")
    >>> row = doc["layers"][0]["heads"][0]["weights"][0]  # query 0's weights, × 1000
    >>> doc["schema"], doc["tokens"], row, sum(row)
    ('attncli.view/1', ['a', 'b', 'a'], [193, 614, 193], 1000)
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from attncli.core.parts import PARTS
from attncli.core.stats import head_stats, label_heads
from attncli.io.documents import View
from attncli.io.encode import dumps
from attncli.io.steps import step_record
from attncli.pipeline.result import AttentionResult
from attncli.pipeline.steps import steps

if TYPE_CHECKING:  # a text run's view loads no model code
    from attncli.models import Model

SCHEMA = "attncli.view/1"
SCALE = 1000  # a drawn weight is round(weight × SCALE): 0.001 steps, finer than a line's opacity shows
MEAN_PATH = "[.heads[].weights[{query}][{key}]] | add / length"  # jq: one weight of the mean over the heads


def _causal(masked: np.ndarray | None) -> bool:  # [h, m, n] bool
    """Whether every head's mask is exactly "no key after the query" (row 0 then sees only itself)."""
    if masked is None or masked.shape[-1] != masked.shape[-2]:
        return False
    return bool((masked == np.triu(np.ones(masked.shape[-2:], dtype=bool), 1)).all())


def _labels(weights: np.ndarray, causal: bool, cross: bool = False) -> list[list[str]]:  # [L, h, m, n] -> [L][h]
    """The pattern `attn heads` finds in each head; none for cross-attention (queries and keys differ, even when
    there are as many of each)."""
    if cross:
        return [[""] * weights.shape[1] for _ in range(weights.shape[0])]
    return label_heads(head_stats(weights, causal=causal))


def _mask_rows(masked: np.ndarray) -> list[str]:  # [m, n] bool -> m strings of n "0"/"1"
    return ["".join("1" if x else "0" for x in row) for row in masked.tolist()]


def _layers(
    weights: np.ndarray, masked: np.ndarray | None, layers: list[int], heads: list[int], labels: list[list[str]]
) -> tuple[list[dict], list[list[str]]]:  # [L, h, m, n], [L, h, m, n] bool or None
    """The "layers" of the document and its distinct masks (each head names its own by index, or null)."""
    masks: list[list[str]] = []
    out = []
    for l, layer in enumerate(layers):
        entries = []
        for h, head in enumerate(heads):
            mask = None
            if masked is not None and masked[l, h].any():
                rows = _mask_rows(masked[l, h])
                if rows not in masks:
                    masks.append(rows)
                mask = masks.index(rows)
            drawn = np.rint(weights[l, h] * SCALE).astype(np.int64)
            entries.append({"head": head, "label": labels[l][h], "mask": mask, "weights": drawn.tolist()})
        out.append({"layer": layer, "heads": entries})
    return out, masks


def _strings(tokens) -> list[str] | None:  # Tokens or None -> its strings
    return None if tokens is None else list(tokens.strings)


def _document(result: AttentionResult, command: str, **more) -> dict:
    generation = result.tokens.generation()  # --generate: what the model wrote, from token "from" on
    wrote = {} if generation is None else {"generated": {**generation, "from": result.tokens.generated}}
    return {
        "schema": SCHEMA,
        "command": command,
        "text": result.text,
        "context": result.context,
        "tokens": list(result.tokens.strings),
        "context_tokens": _strings(result.context_tokens),
        "config": result.source.config_record(result),
        "caption": result.source.caption(result),
        "scale": SCALE,
        **wrote,
        **more,
    }


def _weights(result: AttentionResult) -> tuple[np.ndarray, np.ndarray | None]:  # -> [h, m, n], [h, m, n] or None
    return result.attention("the page draws the weights, and --no-weights computed none: drop --no-weights")[
        1
    ], result.masked


def result_view(result: AttentionResult, command: str, precision: int | None = None, head: int | None = None) -> dict:
    """A text run: its one layer of heads, opened at `head` (default the first), and every stage of
    `attn steps` exactly (or to `precision` digits)."""
    weights, masked = _weights(result)
    heads = [result.head_index(h) for h in range(weights.shape[0])]
    labels = _labels(weights[None], _causal(masked), result.context_tokens is not None)
    layers, masks = _layers(weights[None], None if masked is None else masked[None], [0], heads, labels)
    return _document(
        result,
        command,
        masks=masks,
        layers=layers,
        layer=0,
        head=heads[0] if head is None else head,
        exact=None,
        steps=[step_record(s, precision) for s in steps(result)],
    )


def model_view(
    model: Model, result: AttentionResult, model_dir: str, command: str, pair: tuple[str, str | None] | None = None
) -> dict:
    """Every layer and head of a model on the result's text, opened at the result's layer (and head, if one).

    The weights of every layer come from one more forward pass; "exact" is the `attn show` command and the
    jq path that print one weight exactly, with {layer}, {head}, {query} and {key} to fill in (and the same
    for the mean over the heads, "mean_command" and "mean_path"). An encoder–decoder's page has its every
    part: `parts_view` of `pair`, the (target, source) the command was given (by default the result's).
    """
    from attncli.models import forward  # the model's own forward pass: only a --model run gets here
    from attncli.models.encdec import is_seq2seq

    if is_seq2seq(model):
        return parts_view(model, result, model_dir, command, *(pair or _pair(result)))

    record = result.source.config_record(result)  # the layer shown, and the head if one was chosen
    weights = np.stack(forward(model, np.asarray(result.tokens.ids)).weights)  # [L, h, n, n]
    n_layer, n_head, n = weights.shape[:3]
    masked = np.broadcast_to(np.triu(np.ones((n, n), dtype=bool), 1), weights.shape) if model.causal else None
    labels = _labels(weights, model.causal)
    layers, masks = _layers(weights, masked, list(range(n_layer)), list(range(n_head)), labels)
    wrote = "" if result.tokens.generated is None else f" --generate {len(result.tokens) - result.tokens.generated}"
    exact = _exact(
        f"attn show {shlex.quote(result.text or '')} --model {shlex.quote(model_dir)}{wrote} --layer {{layer}}"
    )
    config = {k: v for k, v in record.items() if k not in ("layer", "head")} | {"heads": n_head}
    doc = _document(
        result,
        command,
        masks=masks,
        layers=layers,
        layer=record["layer"],
        head=record.get("head", 0),
        exact=exact,
        steps=None,
    )
    return {**doc, "config": config, "model": {"name": model.name, "n_layer": n_layer, "n_head": n_head}}


def _exact(shown: str) -> dict:
    """The `attn show` commands (from `shown`, which chooses the layer) and the jq paths that print one weight
    exactly: of a head, and of the mean over the heads (the page's mean)."""
    return {
        "command": f"{shown} --head {{head}} -f json",
        "path": ".heads[0].weights[{query}][{key}]",
        "mean_command": f"{shown} -f json",
        "mean_path": MEAN_PATH,
    }


def part_entry(name: str, tokens, key_tokens, weights: np.ndarray, masked: np.ndarray | None) -> dict:
    # [m] strings, [n] strings or None, [L, h, m, n], [m, n] bool or None (the same mask in every head)
    """One part of an encoder–decoder's document: what it is, its tokens, every layer and head of its weights."""
    shape = weights.shape
    labels = _labels(weights, masked is not None, key_tokens is not None)
    every = None if masked is None else np.broadcast_to(masked, shape)
    layers, masks = _layers(weights, every, list(range(shape[0])), list(range(shape[1])), labels)
    part = PARTS[name]
    return {
        "help": part.help,
        "queries": part.queries,
        "keys": part.keys,
        "tokens": list(tokens),
        "context_tokens": None if key_tokens is None else list(key_tokens),
        "masks": masks,
        "layers": layers,
    }


def _pair(result: AttentionResult) -> tuple[str, str | None]:
    """The (target, source) of an encoder–decoder's result: the source is its context (cross) or the one its
    decoder read; an encoder's result without a target is (source, None)."""
    return result.text or "", result.context or getattr(result.source, "source_text", None)


def parts_view(
    model: Model, result: AttentionResult, model_dir: str, command: str, text: str, context: str | None
) -> dict:
    """An encoder–decoder: every layer and head of each of its parts (PARTS: cross, decoder, encoder), from one
    teacher-forced pass of `text` (the target) over `context` (the source; without it, `text` is the source and
    only the encoder is there), opened at the result's part, layer and head.

    "parts" maps each part's name to what a one-part document has at its top: its rows' "tokens", its columns'
    "context_tokens" (null: the same), "masks" and "layers"; with "help", and whose tokens the rows ("queries")
    and the columns ("keys") are. "exact" has {part} to fill in as well.
    """
    from attncli.models.seq2seq import every_part  # only an encoder–decoder's page gets here

    record = result.source.config_record(result)  # the part and layer shown, and the head if one was chosen
    parts = {
        name: part_entry(name, found.tokens.strings, _strings(found.key_tokens), np.stack(found.weights), found.masked)
        for name, found in every_part(model, text, context).items()
    }
    pair = shlex.quote(text) + ("" if context is None else f" --context {shlex.quote(context)}")
    config = {k: v for k, v in record.items() if k not in ("layer", "head", "part")}
    doc = _document(
        result,
        command,
        part=record["part"],
        parts=parts,
        layer=record["layer"],
        head=record.get("head", 0),
        exact=_exact(f"attn show {pair} --model {shlex.quote(model_dir)} --part {{part}} --layer {{layer}}"),
        steps=None,
    )
    return {
        **doc,
        "text": text,
        "context": context,
        "config": config,
        "model": {"name": model.name, "n_head": model.n_head},
    }


# ---- what FORMATS calls -----------------------------------------------------------------------------------


def write_json(doc: View, stream: BinaryIO, precision: int | None = None) -> None:
    """The page's data, as the page embeds it (one JSON object, one line)."""
    stream.write(dumps(doc.doc, allow_nan=False, separators=(",", ":")).encode() + b"\n")


def write_page(doc: View, stream: BinaryIO, precision: int | None = None) -> None:
    """The self-contained HTML page around the data (its builder comes with the document: a renderer)."""
    stream.write(doc.page(doc.doc).encode("utf-8"))
