"""A real model's attention (`--model DIR`) as the objects the rest of attn already reads.

    model = load_model("path/to/all-MiniLM-L6-v2")
    r = model_result(model, "time flies like an arrow", layer=5, head=3)
    r.weights.shape            # (1, 7, 7): head 3 of layer 5, [CLS] ... [SEP]

`model_result` gives an `AttentionResult`, so `attn show` and `attn steps`, every table and
every format work unchanged; `heads_document` is `attn heads` (one statistic per head) and
`model_rollout` is `attn show --rollout`. NumPy and the core only: no rich, typer or click.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from attncli.core.attention import Projections
from attncli.core.variants import VARIANTS
from attncli.models import HEAD_STATS, Model, check_head, check_layer, encode, forward, head_stats, label_heads, rollout
from attncli.pipeline.compare import compare_document
from attncli.pipeline.config import RunConfig
from attncli.pipeline.result import AttentionResult, config_record
from attncli.pipeline.run import _check_text
from attncli.pipeline.steps import Step, mask_softmax_mix, shown
from attncli.pipeline.tokenize import Tokens

ROLLOUT_SCHEMA = "attncli.rollout/1"
HEADS_SCHEMA = "attncli.heads/1"
ROLLOUT_METHOD = (
    "attention rollout (Abnar & Zuidema 2020): per layer the mean of the heads plus the identity "
    "for the residual, rows renormalised, multiplied from layer 0 up"
)


def model_tokens(model: Model, text: str) -> Tokens:
    """The text as the model's own tokenizer cuts it ([CLS] ... [SEP] for BERT), as `Tokens`."""
    _check_text(text, "text")
    t = encode(model, text)
    unk = getattr(model.tokenizer.model, "unk_token", None)
    return Tokens(
        t.strings,
        t.ids,
        t.offsets,
        tokenizer=model.name,
        vocab_size=model.tokenizer.get_vocab_size(with_added_tokens=True),
        unk_token=unk,
    )


def _score(model: Model, layer: int) -> tuple[str, float]:
    """The model's score as a variant and a temperature: BERT qᵀk/√d_k; GPT-2 may drop the √d_k
    (scale_attn_weights false) or also divide by layer + 1 (scale_attn_by_inverse_layer_idx)."""
    variant = "scaled" if model.hp.get("scale_attn_weights", True) else "dot"
    return variant, float(layer + 1) if model.hp.get("scale_by_layer") else 1.0


def model_result(model: Model, text: str, layer: int | None = None, head: int | None = None) -> AttentionResult:
    """One layer's self-attention (default the last layer), every head or the one `head`, as an AttentionResult.

    x is that attention's input; q, k, v, scores, weights and head_outputs are the heads shown;
    output is the attention output of the layer, all heads merged (concat(O_h) W_O + b_O).
    """
    layer = check_layer(model, -1 if layer is None else layer)
    chosen = None if head is None else check_head(model, head)
    tokens = model_tokens(model, text)
    s = forward(model, tokens.ids, upto_layer=layer, steps_layer=layer).steps
    assert s is not None  # steps_layer asks for them
    pick = slice(None) if chosen is None else slice(chosen, chosen + 1)
    variant, temperature = _score(model, layer)
    config = RunConfig(
        tokenizer=model.name,
        variant=variant,
        heads=model.n_head if chosen is None else 1,
        dim=model.d_model,
        d_k=model.d_k,
        d_v=model.d_k,
        d_a=model.d_k,
        mask=("causal",) if s.masked is not None else (),
        temperature=temperature,
    )
    masked = None if s.masked is None else np.ascontiguousarray(s.masked[pick])
    return AttentionResult(
        text=text,
        context=None,
        tokens=tokens,
        context_tokens=None,
        config=config,
        x=s.x,
        x_context=None,
        q=s.q[pick],
        k=s.k[pick],
        v=s.v[pick],
        scores=s.scores[pick],
        masked=masked,
        weights=s.weights[pick],
        head_outputs=s.out[pick],
        output=s.output,
        source=ModelLayer(model, layer, chosen),
        params={"b_Q": s.b_q, "b_K": s.b_k, "b_V": s.b_v, "b_O": s.b_o},
        projections=Projections(s.w_q, s.w_k, s.w_v, s.w_o),
    )


def score_formula(result: AttentionResult) -> str:
    """`S = qᵀk / √d_k`, with the temperature when the model divides by more."""
    c = result.config
    formula = VARIANTS[c.variant].formula.replace("s = ", "S = ", 1)
    return formula if c.temperature == 1 else f"S = ({formula[4:]}) / {c.temperature:g}"


def describe(model: Model) -> str:
    """One line: `name: bert, 6 layers × 12 heads, d_model 384`."""
    return f"{model.name}: {model.model_type}, {model.n_layer} layers × {model.n_head} heads, d_model {model.d_model}"


@dataclass(frozen=True)
class ModelLayer:
    """The source of `model_result()`: one layer of a real model, every head or the one `head`; trained weights."""

    model: Model
    layer: int
    head: int | None  # --head H: the result holds that one head (index 0 of its arrays)

    output_formula = "concat(A_h V_h) W_O"

    def _heads_phrase(self) -> str:
        n = self.model.n_head
        return f"head {self.head} of {n}" if self.head is not None else f"all {n} heads"

    def caption(self, result: AttentionResult) -> list[str]:
        """What `attn show --model` says under the matrix: which model, layer and head, and that it is trained."""
        m = self.model
        lines = [
            describe(m),
            f"layer {self.layer} of 0..{m.n_layer - 1} · {self._heads_phrase()} · d_k {result.config.d_k} · "
            f"{len(result.tokens)} tokens (the model's tokenizer)",
            f"trained weights, not random: {score_formula(result)}, as transformers' output_attentions",
        ]
        if result.config.mask:
            lines.append("mask: causal, no token sees a later one (· = masked, weight 0)")
        lines.append("rows: queries, columns: keys; each row sums to 1; ▸ = row maximum")
        lines.append(f"output: the layer's attention output, all {m.n_head} heads: concat(A_h V_h) W_O + b_O")
        return lines

    def config_record(self, result: AttentionResult) -> dict:
        """Learned positions, trained projections, no seed; then the model, the layer and the head if one was chosen."""
        chosen = {"model": self.model.name, "layer": self.layer, **({} if self.head is None else {"head": self.head})}
        return config_record(result.config, self.model.name, "learned", "trained", None, chosen)

    def steps(self, result: AttentionResult) -> list[Step]:
        """`attn steps --model`: the stages of one layer's attention, the model's own numbers and formulas."""
        m, layer = self.model, self.layer
        x = m.family.input_note(layer)
        split = f", split into heads ({self._heads_phrase()})"
        scores = shown(result)[0]
        out = [
            Step("x", x, result.x, ("query", "dim")),
            Step("q", f"Q = X W_Q + b_Q{split}", result.q, ("head", "query", "dim")),
            Step("k", f"K = X W_K + b_K{split}", result.k, ("head", "key", "dim")),
            Step("v", f"V = X W_V + b_V{split}", result.v, ("head", "key", "dim")),
            Step("scores", score_formula(result) + "  (for every query–key pair)", scores, ("head", "query", "key")),
        ]
        out += mask_softmax_mix(result, "causal: keys after the query")
        out.append(
            Step(
                "output",
                f"O = concat(O_0, …, O_{m.n_head - 1}) W_O + b_O: layer {layer}'s attention output, "
                f"all {m.n_head} heads, before the residual",
                result.output,
                ("query", "dim"),
            )
        )
        return out

    def head_index(self, h: int) -> int:
        return h if self.head is None else self.head

    def heads_shown(self, result: AttentionResult) -> str:
        return f" · layer {self.layer}, head " + (
            f"{self.head}" if self.head is not None else f"0 of {self.model.n_head}"
        )

    def stats_unasked(self, result: AttentionResult) -> bool:
        return result.config.heads == 1  # every head of a layer is already a dozen panels

    def compare_note(self, label: str) -> str | None:
        """`attn compare --model`: its column is the real model, not a random run."""
        return (
            ("" if label == self.model.name else f"{label} = ")
            + describe(self.model)
            + f"; trained weights, its own tokenizer, layer {self.layer}, "
            + (f"head {self.head}" if self.head is not None else f"{self.model.n_head} heads")
        )


# ---- attn heads -----------------------------------------------------------------------------------


def heads_document(model: Model, text: str) -> dict:
    """`attn heads -f json`: every statistic of HEAD_STATS and a label for every head of every layer."""
    tokens = model_tokens(model, text)
    weights = np.stack(forward(model, tokens.ids).weights)  # [L, h, n, n]
    stats = head_stats(weights, causal=model.causal)
    labels = label_heads(stats)
    rows = [
        {"layer": l, "head": h, **{k: float(stats[k][l, h]) for k in HEAD_STATS}, "label": labels[l][h]}
        for l in range(model.n_layer)
        for h in range(model.n_head)
    ]
    return {
        "schema": HEADS_SCHEMA,
        "text": text,
        "tokens": list(tokens.strings),
        "model": model.name,
        "summary": describe(model),
        "model_type": model.model_type,
        "n_layer": model.n_layer,
        "n_head": model.n_head,
        "causal": model.causal,
        "stats": dict(HEAD_STATS),
        "rows": rows,
    }


# ---- attn show --rollout --------------------------------------------------------------------------


@dataclass(frozen=True)
class Rollout:
    """The rolled-out token-to-token matrix through layers 0..layer, and the weights it came from."""

    text: str
    tokens: Tokens
    model: Model
    layer: int
    matrix: np.ndarray  # [n, n] float64, rows sum to 1
    weights: np.ndarray  # [layer + 1, n_head, n, n] the model's attention, layer by layer


def model_rollout(model: Model, text: str, layer: int | None = None) -> Rollout:
    """Attention rollout through layers 0..layer (default all), from one forward pass."""
    layer = check_layer(model, -1 if layer is None else layer)
    tokens = model_tokens(model, text)
    weights = forward(model, tokens.ids, upto_layer=layer).weights
    return Rollout(text, tokens, model, layer, rollout(weights, upto_layer=layer), np.stack(weights))


# ---- attn compare --model -------------------------------------------------------------------------


def compare_with_model(text: str, results: list[AttentionResult], extra: AttentionResult) -> dict:
    """`attn compare` with --model: the model's run is one more row (its own sizes, trained float32 weights)."""
    doc = compare_document(text, [*results, extra])
    source = cast(ModelLayer, extra.source)  # extra is model_result()'s
    row, m = doc["rows"][-1], source.model
    p = extra.projections
    assert p is not None  # a model's trained W_Q, W_K, W_V, W_O
    row["weight_bytes"] = int(sum(a.nbytes for a in (p.w_q, p.w_k, p.w_v, p.w_o, *extra.params.values())))
    row["embedding_bytes"] = m.vocab_size * m.d_model * 4  # float32, as the forward pass holds it
    doc["model"] = {"name": m.name, "model_type": m.model_type, "layer": source.layer, "head": source.head}
    return doc
