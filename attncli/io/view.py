"""`attn view`: the interactive page's data, one JSON document (schema attncli.view/4).

The page (`-f html`, `attn view -o FILE.html`, `--save-html`) embeds exactly the document `-f json` writes,
once. Its weights are for drawing, in a compact encoding ("encoding" in the document says it): each head's
weights rounded to 1/255 (round(weight × 255), one byte a cell, row-major), compressed (raw deflate) and
written in base64, so that a 200-token page of a 6-layer × 12-head model stays under 2 MB; `weights_of`
reads them back. The exact numbers stay one step away: a text run carries every stage of `attn steps` whole
("steps", the same records as `attn steps -f json`); a model run carries the command and the jq path that
print any weight exactly ("exact"), and the queries, keys and values of its every layer, or of the page's layer
when they would take more than models/runs/page.py's QKV_BYTES (under the key "neuron", `qkv_record`: q and k as
the model's own float32, v as float16), from which the page's steps view redoes a score, its softmax and the mix.
A model's page is computed below (attncli.models.interpret.page's `model_page`, one pass); here it is encoded.

    >>> from attncli.pipeline.run import run
    >>> doc = result_view(run("a b a"), "attn view")
    >>> row = weights_of(doc)[0, 0, 0]  # layer 0, head 0, query 0, to 1/255
    >>> doc["schema"], doc["tokens"], (row * 255).round().astype(int).tolist(), round(float(row.sum()), 2)
    ('attncli.view/4', ['a', 'b', 'a'], [49, 157, 49], 1.0)
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, BinaryIO, cast

import numpy as np

from attncli.core.parts import PARTS
from attncli.core.stats import head_stats, label_heads, sink_stats
from attncli.io.documents import View
from attncli.io.encode import dumps, token_marks
from attncli.io.packing import SCALE, layers_record, packed, unpacked
from attncli.io.steps import step_record
from attncli.io.view_looks import looks_view, parts_looks, sinkless_view
from attncli.pipeline.behaviour import Behaviour
from attncli.pipeline.result import AttentionResult, Step
from attncli.pipeline.steps import steps
from attncli.pipeline.tokentext import labels as token_labels

if TYPE_CHECKING:  # a text run's view loads no model code
    from attncli.models import Model
    from attncli.models.interpret.page import LayersPage, PartsPage
    from attncli.models.runs.page import Carried
    from attncli.models.runs.source import ModelLayer

SCHEMA = "attncli.view/4"
ENCODING = {
    "weights": "each head's weights: round(weight × scale) as one unsigned byte a cell, rows of queries one after "
    "another, compressed with raw deflate (RFC 1951), in base64",
    "precision": "weights to 1/255 (0.004); the exact ones: 'exact' (a model) or 'steps' (a text run)",
    "steps": "each stage's array ('packed'): float64 little-endian, row-major in its 'shape', −∞ for a masked "
    "score, compressed with raw deflate (RFC 1951), in base64",
}
MEAN_PATH = "[.heads[].weights[{query}][{key}]] | add / length"  # jq: one weight of the mean over the heads
PATCH_NAMED = 5  # the patch's cells of largest |score| the page names above its grid


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
    # a layer at a time: head_stats works in float64, several [h, m, n] arrays of it
    return [label_heads(head_stats(layer[None], causal=causal))[0] for layer in weights]


def weights_of(doc: dict) -> np.ndarray:  # a view document (or one of its parts) -> [L, h, m, n] float64
    """The drawn weights of every layer and head, decoded: what the page draws, to 1/255."""
    m, n = len(doc["tokens"]), len(doc["context_tokens"] or doc["tokens"])
    return (
        np.array(
            [[unpacked(h["weights"], "u1", (m, n)) for h in layer["heads"]] for layer in doc["layers"]], dtype=float
        )
        / SCALE
    )


OPENING_RULE = (
    "the head of this layer whose queries put the least mean weight on token 0, the sink "
    "(α_0 of Gu et al. 2025, as attn heads' sinks section has it)"
)


def opening(weights: np.ndarray, layer: int) -> dict:  # [L, h, n, n] -> where a decoder's page opens, and why
    """The head a decoder's page opens on when none was given: in the page's `layer`, the head of least α_0, the mean
    weight of the queries on key 0 (`sink_stats`; Gu et al. 2025, 'When attention sink emerges in language models',
    §3), the first of them when equal. Most heads of a trained decoder put most of every row on the first token (a
    sink: no information about the text), so head 0 of the last layer tends to show little more than that.

    >>> sink, self_ = [[1.0, 0.0], [0.9, 0.1]], [[1.0, 0.0], [0.2, 0.8]]  # 1 layer, 2 causal heads, 2 tokens
    >>> o = opening(np.array([[sink, self_]]), 0)
    >>> o["layer"], o["head"], o["sink"], o["most"], o["sinks"]
    (0, 1, 0.6, 0.95, [0.95, 0.6])
    >>> o["note"][:26], o["note"][-55:]
    ('opened on layer 0, head 1:', 'α_0 = 0.600 (its heads: 0.600–0.950); [ ] , . change it')
    """
    first = sink_stats(weights[layer][None], positions=1)["first"][0, :, 0]  # [h]
    head = int(np.argmin(first))
    sink, most = float(first[head]), float(first.max())
    note = f"opened on layer {layer}, head {head}: {OPENING_RULE}, α_0 = {sink:.3f} (its heads: {sink:.3f}–{most:.3f})"
    return {
        "layer": layer,
        "head": head,
        "sink": sink,
        "most": most,
        "sinks": first.tolist(),
        "rule": OPENING_RULE,
        "note": note + "; [ ] , . change it",
    }


def _strings(tokens) -> list[str] | None:  # Tokens or None -> its strings
    return None if tokens is None else list(tokens.strings)


def _document(result: AttentionResult, command: str, **more) -> dict:
    return {
        "schema": SCHEMA,
        "command": command,
        "text": result.text,
        "context": result.context,
        "tokens": list(result.tokens.strings),
        "texts": list(result.tokens.text_of()),
        "labels": result.tokens.labels(),
        "context_tokens": _strings(result.context_tokens),
        "config": result.source.config_record(result),
        "caption": result.source.caption(result),
        "scale": SCALE,
        "encoding": ENCODING,
        **more,
    }


def _weights(result: AttentionResult) -> tuple[np.ndarray, np.ndarray | None]:  # -> [h, m, n], [h, m, n] or None
    return result.attention("the page draws the weights, and --no-weights computed none: drop --no-weights")[
        1
    ], result.masked


def result_view(
    result: AttentionResult,
    command: str,
    precision: int | None = None,
    head: int | None = None,
    behaviour: Behaviour = Behaviour(),
    maps: list | None = None,
) -> dict:
    """A text run: its one layer of heads, opened at `head` (default the first), and every stage of
    `attn steps` exactly (or to `precision` digits); the colour scale and the sinkless weights `behaviour` asks
    for, and the contribution `maps` (`looks_view`)."""
    weights, masked = _weights(result)
    heads = [result.head_index(h) for h in range(weights.shape[0])]
    labels = _labels(weights[None], _causal(masked), result.context_tokens is not None)
    stacked = None if masked is None else masked[None]
    layers, masks = layers_record(weights[None], stacked, [0], heads, labels)
    looks = looks_view(weights[None], stacked, labels, behaviour, heads, maps)
    return looks | _document(
        result,
        command,
        masks=masks,
        layers=layers,
        layer=0,
        head=heads[0] if head is None else head,
        exact=None,
        steps=[_packed_step(s, precision) for s in steps(result)],
    )


def _packed_step(step: Step, precision: int | None) -> dict:  # a stage -> its record, the array packed
    """A stage of `attn steps -f json` with its array exact but packed (float64 bytes, deflated, in base64): a
    300-token run's scores and weights as JSON numbers take some 9 MB, packed about a quarter of that."""
    record = step_record(replace(step, array=np.zeros(0)), precision)  # its words and axes
    a = np.asarray(step.array, dtype="<f8")
    del record["array"]
    record["shape"] = list(step.shape)
    record["packed"] = packed(a if precision is None else np.round(a, precision))
    return record


def steps_of(doc: dict) -> dict[str, np.ndarray]:  # a text run's view document -> name -> [shape] float64
    """Every stage's exact array, unpacked: the numbers of `attn steps` (−∞ where a score is masked).

    >>> from attncli.pipeline.run import run
    >>> steps_of(result_view(run("a b a"), "attn view"))["weights"].shape
    (1, 3, 3)
    """
    return {s["name"]: unpacked(s["packed"], "<f8", tuple(s["shape"])) for s in doc["steps"]}


def model_view(
    page: LayersPage | PartsPage,
    model: Model,
    result: AttentionResult,
    model_arg: str,
    command: str,
    behaviour: Behaviour = Behaviour(),
) -> dict:
    """The document of a model's page (`model_page`'s data: every layer and head of the model on the result's text,
    a sentence pair's two texts for an encoder given --context), opened at the result's layer and head (without
    one, a decoder's at its layer's least sink-bound head, "opened": `opening`; else null), with the carried
    layers' q, k and v ("neuron") and the view it opens on (`behaviour.opens`: a causal command's own page; else
    its first), its colour scale, sinkless weights and contribution maps (`looks_view`).

    "exact" is the `attn show` command and the jq path that print one weight exactly, format strings with {layer},
    {head}, {query} and {key} to fill in ({{ and }} are a brace of the text), and the same for the mean over the
    heads ("mean_command", "mean_path"); `model_arg` is --model there, a shell word. An encoder–decoder's page has
    its every part (`parts_view`). A decoder's page also has "lens", "ablation", "patch", "dla" and "knockout"
    (null unless asked for), and, after --generate, the probability of each written token and where they start
    ("generated").
    """
    return DOCUMENTS[page.document](page, model, result, model_arg, command, behaviour)


def layers_view(
    page: LayersPage, model: Model, result: AttentionResult, model_arg: str, command: str, behaviour: Behaviour
) -> dict:
    """An encoder's or a decoder's page (see `model_view`)."""
    a = page.attention
    source = cast("ModelLayer", result.source)
    record = source.config_record(result)  # the layer shown, and the head if one was chosen
    tokens, weights, masked = a.tokens, a.weights, a.masked
    n_layer, n_head = weights.shape[:2]
    labels = _labels(weights, model.causal)
    layers, masks = layers_record(weights, masked, list(range(n_layer)), list(range(n_head)), labels)
    # no --head: a decoder's page opens on its layer's least sink-bound head, and says so
    opened = opening(weights, record["layer"]) if "head" not in record and model.causal else None
    texts = _word(result.text or "") + ("" if source.pair is None else f" --context {_word(source.pair)}")
    wrote = "" if result.tokens.generated is None else f" --generate {len(result.tokens) - result.tokens.generated}"
    if model.chat is not None:  # the text as the user's message of the model's chat template
        wrote += " --chat" + ("" if model.chat.system is None else f" --system {_word(model.chat.system)}")
    exact = _exact(f"attn show {texts} --model {_braced(model_arg)}{wrote} --layer {{layer}}")
    config = {k: v for k, v in record.items() if k not in ("layer", "head")} | {"heads": n_head}
    doc = _document(
        result,
        command,
        masks=masks,
        layers=layers,
        layer=record["layer"],
        head=record.get("head", 0) if opened is None else opened["head"],
        exact=exact,
        steps=None,
    )
    return {
        **doc,
        **token_marks(tokens),
        **behaviour_view(page),
        **causal_view(page),
        **looks_view(weights, masked, labels, behaviour, maps=page.contributions),
        "opens": behaviour.opens,
        "opened": opened,
        "labels": tokens.labels(),
        "context": source.pair,
        "config": config,
        "model": {"name": model.name, "n_layer": n_layer, "n_head": n_head},
        "neuron": [qkv_record(c) for c in a.carried],
    }


def behaviour_view(page: LayersPage) -> dict:
    """A decoder page's "lens" (the rows of `attn lens -f json` over the page's tokens, each cell's tokens with
    their labels) and "ablation" (the fields of `attn ablate -f json` from "mode" on, the watched tokens with
    their labels), each null unless asked for; after --generate, "generated" gains "from" (the index of the first
    written token) and "probs" (the probability the model gave each written token, from the same pass: before a
    sampling's temperature, top-k and top-p)."""
    tokens = page.attention.tokens
    out: dict = {"lens": None, "ablation": None}
    if page.lens is not None:
        rows = [
            r | {"top_labels": list(token_labels(r["top_tokens"], r["top_texts"], [False] * len(r["top_ids"])))}
            for r in page.lens["rows"]
        ]
        out["lens"] = {**page.lens, "rows": rows}
    if page.ablation is not None:
        out["ablation"] = dict(page.ablation)
        for field in ("target", "contrast"):
            named = out["ablation"][field]
            if named is not None:
                label = token_labels([named["token"]], [named["text"]], [False])[0]
                out["ablation"][field] = {**named, "label": label}
    if page.probs is not None:
        out["generated"] = {**(tokens.generation() or {}), "from": tokens.generated, "probs": page.probs.tolist()}
    return out


def ranked(values: list[float]) -> list[int]:  # [k] -> [k] indices
    """The indices of `values` by |value|, largest first (ties in their order): the order the page lists them in.

    >>> ranked([0.1, -0.5, 0.3, 0.5])
    [1, 3, 2, 0]
    """
    return np.argsort(-np.abs(np.asarray(values, dtype=float)), kind="stable").tolist()


def causal_view(page: LayersPage) -> dict:
    """A decoder page's "patch", "dla" and "knockout": the documents of `attn patch -f json`, `attn dla -f json`
    and `attn knockout -f json` on the page's text (before any written tokens), each null unless asked for; the
    patch with "strongest" (its PATCH_NAMED rows of largest |score|, by index, named on the page) and the dla with
    "ranked" (every row's index by |dla|, largest first: the order of the page's bars)."""
    out: dict = {"patch": None, "dla": None, "knockout": None}
    if page.patch is not None:
        out["patch"] = {**page.patch, "strongest": ranked([r["score"] for r in page.patch["rows"]])[:PATCH_NAMED]}
    if page.dla is not None:
        out["dla"] = {**page.dla, "ranked": ranked([r["dla"] for r in page.dla["rows"]])}
    out["knockout"] = page.knockout
    return out


def qkv_record(c: Carried) -> dict:
    """One layer's queries, keys and values (the model's own: after its biases, RoPE and norms), for the page's
    steps view: q and k as float32 (their products are exact in the page's float64), v as float16, each key/value
    head once; with the layer's scale and soft-cap and the words and formulas of `attn steps --model`.

    The page redoes a score as Σ_d q_d k_d × scale (+ the bias, then the cap); the model sums in float32, so the
    two agree to float32 rounding. A bias added to the scores (T5's relative positions, [h, m, n]) comes as
    float32 too, or null.
    """
    s = c.steps
    group = s.q.shape[0] // s.n_kv_head
    kv = slice(None, None, group)  # each key/value head once (grouped-query attention repeats them per query head)
    return {
        "layer": s.layer,
        "scale": float(s.scale),
        "softcap": s.softcap,
        "bias": None if s.bias is None else packed(np.broadcast_to(s.bias, s.weights.shape).astype("<f4")),
        "kv_group": group,
        "shape": {"q": list(s.q.shape), "k": list(s.k[kv].shape), "v": list(s.v[kv].shape)},
        "q": packed(s.q.astype("<f4")),
        "k": packed(s.k[kv].astype("<f4")),
        "v": packed(s.v[kv].astype("<f2")),
        "precision": "q, k: the model's float32 · v: float16 (3 digits) · the scores, softmax and mix: "
        "computed in the page, in float64",
        "stages": {st.name: {"title": st.title, "formula": st.formula} for st in c.stages},
    }


def _braced(s: str) -> str:
    """`s` inside a format string of "exact": its braces doubled, so that a text's "{layer}" stays text."""
    return s.replace("{", "{{").replace("}", "}}")


def _word(s: str) -> str:
    """`s` as one shell word inside a format string of "exact".

    >>> _word("see {layer} now")
    "'see {{layer}} now'"
    """
    return _braced(shlex.quote(s))


def _exact(shown: str) -> dict:
    """The `attn show` commands (from `shown`, which chooses the layer) and the jq paths that print one weight
    exactly: of a head, and of the mean over the heads (the page's mean)."""
    return {
        "command": f"{shown} --head {{head}} -f json",
        "path": ".heads[0].weights[{query}][{key}]",
        "mean_command": f"{shown} -f json",
        "mean_path": MEAN_PATH,
    }


def part_entry(
    name: str, tokens, key_tokens, weights: np.ndarray, masked: np.ndarray | None, drop_sink: bool = False
) -> dict:
    # [m] strings, [n] strings or None, [L, h, m, n], [m, n] bool or None (the same mask in every head)
    """One part of an encoder–decoder's document: what it is, its tokens, every layer and head of its weights (and,
    with `drop_sink`, its "sinkless" weights, as a one-part page's: `sinkless_view`)."""
    shape = weights.shape
    labels = _labels(weights, masked is not None, key_tokens is not None)
    every = None if masked is None else np.broadcast_to(masked, shape)
    layers, masks = layers_record(weights, every, list(range(shape[0])), list(range(shape[1])), labels)
    part = PARTS[name]
    return ({"sinkless": sinkless_view(weights, every, labels)} if drop_sink else {}) | {
        "help": part.help,
        "queries": part.queries,
        "keys": part.keys,
        "tokens": list(tokens),
        "context_tokens": None if key_tokens is None else list(key_tokens),
        "masks": masks,
        "layers": layers,
    }


def parts_view(
    page: PartsPage, model: Model, result: AttentionResult, model_arg: str, command: str, behaviour: Behaviour
) -> dict:
    """An encoder–decoder: every layer and head of each of its parts (PARTS: cross, decoder, encoder), from one
    teacher-forced pass of the page's text (the target) over its context (the source; without it, the text is the
    source and only the encoder is there), opened at the result's part, layer and head; with the colour scale, each
    part's weights without the sink and each part's contribution maps `behaviour` asks for (`parts_looks`).

    "parts" maps each part's name to what a one-part document has at its top: its rows' "tokens", its columns'
    "context_tokens" (null: the same), "masks" and "layers"; with "help", and whose tokens the rows ("queries")
    and the columns ("keys") are. "exact" has {part} to fill in as well.
    """
    a = page.attention
    text, context, target = a.text, a.context, a.target
    record = result.source.config_record(result)  # the part and layer shown, and the head if one was chosen
    parts = {}
    for name, part in a.parts.items():
        found = part.found
        keys = _strings(found.key_tokens)
        parts[name] = part_entry(name, found.tokens.strings, keys, part.weights, found.masked, behaviour.drop_sink)
        if target is not None and PARTS[name].queries == "target":  # the written tokens marked ›, as a decoder's
            parts[name]["labels"] = target.labels()
        parts[name]["neuron"] = [qkv_record(part.carried)]
    pair = _word(text) + ("" if context is None else f" --context {_word(context)}")
    pair += "" if target is None else f" --generate {len(target) - (target.generated or 0)}"
    config = {k: v for k, v in record.items() if k not in ("layer", "head", "part")}
    doc = _document(
        result,
        command,
        part=record["part"],
        parts=parts,
        layer=record["layer"],
        head=record.get("head", 0),
        exact=_exact(f"attn show {pair} --model {_braced(model_arg)} --part {{part}} --layer {{layer}}"),
        steps=None,
    )
    return {
        **doc,
        **parts_looks(page, behaviour),
        "text": text,
        "context": context,
        "config": config,
        "model": {"name": model.name, "n_head": model.n_head},
        **({} if target is None else token_marks(target)),
        **({} if page.probs is None else {"generated": _written(target, page.probs)}),
    }


def _written(target, probs: np.ndarray) -> dict:  # Tokens of a written target, [written] -> "generated"
    """An encoder–decoder's "generated" for the page: as `attn show -f json` has it, with "from" (the index of the
    first written token among the decoder's) and "probs" (the probability the model gave each)."""
    return {**(target.generation() or {}), "from": target.generated, "probs": probs.tolist()}


# a model page's data (its `document`) -> its document
DOCUMENTS: dict[str, Callable[..., dict]] = {"layers": layers_view, "parts": parts_view}


# ---- the page's colour scale, its weights without the sink, a measure's maps (--scale, --drop-sink, --contrib) ----


def maps_of(doc: dict, part: str | None = None) -> list[dict]:
    # a view document -> per layer carried: name -> [m, n] or [h, m, n] float64 ([m]: "residual")
    """The page's contribution maps (an encoder–decoder's `part`'s), unpacked: "layer", "heads" (or None), "map",
    "rollout" (or None), "residual" (or None)."""
    where = doc if part is None else doc["parts"][part]
    m = len(where["tokens"])
    shape = (m, len(where["context_tokens"] or where["tokens"]))
    carried = doc["contributions"]["layers"] if part is None else doc["contributions"]["parts"][part]["layers"]

    def one(e: dict | None) -> np.ndarray | None:
        return None if e is None else unpacked(e["values"], "<f8", shape)

    return [
        {
            "layer": l["layer"],
            "heads": None if l["heads"] is None else np.array([one(h) for h in l["heads"]]),
            "map": one(l["map"]),
            "rollout": one(l["rollout"]),
            "residual": unpacked(l["residual"], "<f8", (m,)) if "residual" in l else None,
        }
        for l in carried
    ]


# ---- what FORMATS calls -----------------------------------------------------------------------------------


def write_json(doc: View, stream: BinaryIO, precision: int | None = None) -> None:
    """The page's data, as the page embeds it (one JSON object, one line)."""
    stream.write(dumps(doc.doc, allow_nan=False, separators=(",", ":")).encode() + b"\n")


def write_page(doc: View, stream: BinaryIO, precision: int | None = None) -> None:
    """The self-contained HTML page around the data (its builder comes with the document: a renderer)."""
    stream.write(doc.page(doc.doc).encode("utf-8"))
