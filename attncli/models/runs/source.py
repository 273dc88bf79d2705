"""What a model layer's result says about itself: its `source`, `ModelLayer` (one layer of a real model, every
head or one), which supplies the caption under its matrix, its config record and the stages of `attn steps
--model`; with the words they share: the model in one line (`describe`), the key to the token labels
(`token_marks`), the score's formula (`score_formula`), and the model facts they name (a layer's sliding window,
the key/value head a query head reads). An encoder–decoder's part (seq2seq.py's `PartLayer`) is one of these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from attncli.core.variants import VARIANTS
from attncli.models.network.model import Model
from attncli.pipeline.result import AttentionResult, Step, config_record
from attncli.pipeline.steps import mask_softmax_mix, shown
from attncli.pipeline.tokenize import GENERATED_MARK, SECOND_MARK, SPECIAL_MARK, Tokens
from attncli.pipeline.tokentext import legend, shown_text


def sliding_window(model: Model, layer: int) -> int | None:
    """The sliding window of `layer` (a query sees itself and the window - 1 tokens before it), if any."""
    return model.hp.get("windows", [None] * model.n_layer)[layer]


def kv_head(model: Model, head: int) -> int:
    """The key/value head that query head `head` reads (grouped-query attention; itself otherwise)."""
    return head // (model.n_head // model.n_kv_head)


def token_marks(tokens: Tokens, *others: Tokens) -> list[str]:
    """The caption's key to the token labels: which special tokens the tokenizer added (to `tokens` or the
    `others`, a cross-attention's source), where a pair splits."""
    lines = []
    said = legend([label for k in (tokens, *others) for label in k.drawn()])
    if said is not None:
        lines.append(said)
    added = list(dict.fromkeys(t for k in (tokens, *others) for t, special in zip(k.strings, k.special) if special))
    if added:
        lines.append(f"{SPECIAL_MARK} = added by the tokenizer, not cut from the text: {' '.join(added)}")
    if tokens.generated is not None:
        lines.append(
            f"{GENERATED_MARK} = written by the model after the text: {len(tokens) - tokens.generated} tokens, "
            f"{tokens.generated_by}, one pass per token with a key/value cache; the weights are one pass over the "
            "whole sequence, each row what the model saw when it wrote the next token"
        )
        lines.append(f"the model wrote: {shown_text(''.join(tokens.text_of()[tokens.generated :]))}")
    if tokens.segments:
        lines.append(chat_line(tokens.segments))
    if tokens.second is not None:
        lines.append(
            f"sentence pair: {SECOND_MARK} = the second text (--context) starts at token {tokens.second}; "
            "the model sees both as one sequence, segment 2 with token type 1 where it has token types"
        )
    return lines


def chat_line(segments: tuple[str, ...]) -> str:
    """The caption's line for a chat's segments (Tokens.segments), as runs of token indices.

    >>> chat_line(("template", "template", "user", "template", "assistant", "assistant"))
    "--chat, the text as the model's chat template writes it: tokens 0–1 template, 2 user, 3 template, 4–5 assistant"
    """
    runs: list[list] = []
    for i, s in enumerate(segments):
        if runs and runs[-1][0] == s:
            runs[-1][2] = i
        else:
            runs.append([s, i, i])
    spans = ", ".join(f"{a}{'' if a == b else f'–{b}'} {s}" for s, a, b in runs)
    return f"--chat, the text as the model's chat template writes it: tokens {spans}"


def chat_fields(tokens: Tokens) -> dict:
    """A --chat run's JSON fields: "chat" (the chat as the template wrote it), "segments" (each token's part of
    it) and "chat_caption" (the caption's line: those as runs of token indices); {} without --chat."""
    if not tokens.segments:
        return {}
    return {"chat": tokens.chat_text, "segments": list(tokens.segments), "chat_caption": chat_line(tokens.segments)}


def score_formula(result: AttentionResult) -> str:
    """`S = qᵀk / √d_k`, with the temperature when the model divides by more, and Gemma 2's soft-cap."""
    c = result.config
    formula = VARIANTS[c.variant].formula.replace("s = ", "S = ", 1)
    formula = formula if c.temperature == 1 else f"S = ({formula[4:]}) / {c.temperature:g}"
    hp = cast(ModelLayer, result.source).model.hp
    if hp.get("score_bias"):  # a term the family adds to every score (MPNet's relative position bias)
        formula = f"{formula} + {hp['score_bias']}"
    cap = hp.get("softcap")
    return formula if cap is None else f"S = {cap:g} · tanh(({formula[4:]}) / {cap:g})  (soft-capped)"


def describe(model: Model) -> str:
    """One line: `name: bert, 6 layers × 12 heads, d_model 384, its own weights` (and the key/value heads they
    share, if fewer; what the weights are as the folder says it: `Model.weights_said`)."""
    kv = f" sharing {model.n_kv_head} key/value heads" if model.n_kv_head != model.n_head else ""
    return (
        f"{model.name}: {model.model_type}, {model.n_layer} layers × {model.n_head} heads{kv}, d_model {model.d_model}"
        f", {model.weights_said}"
    )


@dataclass(frozen=True)
class ModelLayer:
    """The source of `model_result()`: one layer of a real model, every head or the one `head`; its own weights."""

    model: Model
    layer: int
    head: int | None  # --head H: the result holds that one head (index 0 of its arrays)
    pair: str | None = None  # --context: the second text of a sentence pair

    output_formula = "concat(A_h V_h) W_O"

    @property
    def matrix_name(self) -> str | None:
        return None  # a model's self-attention: plain attention weights

    def _heads_phrase(self) -> str:
        n = self.model.n_head
        return f"head {self.head} of {n}" if self.head is not None else f"{n} heads"  # not "all": explore shows one

    def _projection(self, name: str) -> str:
        """`X W_Q + b_Q`; for rotary families `RoPE(...)` on Q and K (Qwen 3: of the RMSNormed heads)."""
        hp, base = self.model.hp, f"X W_{name} + b_{name}"
        if name == "V" or "rope" not in hp:
            return base
        if hp.get("qk_norm"):
            base = f"RMSNorm({base})" if hp["qk_norm"] == "whole" else f"RMSNorm_head({base})"
        r = hp["ropes"][self.layer] if "ropes" in hp else hp["rope"]  # the layer's own (Gemma 3, SmolLM3)
        if r is None:
            return f"{base} (no RoPE on this layer)"
        d_rot = r["d_rot"]
        part = f" on the first {d_rot} of {self.model.d_k} dims" if d_rot < self.model.d_k else ""
        return f"RoPE({base}) (rotated by position{part}, θ = {r['theta']:g})"

    def _kv_phrase(self) -> str | None:
        """Grouped-query attention: which key/value head the shown query head(s) read."""
        m = self.model
        if m.n_kv_head == m.n_head:
            return None
        group = m.n_head // m.n_kv_head
        if self.head is not None:
            kv = kv_head(m, self.head)
            return (
                f"grouped-query: head {self.head} reads key/value head {kv}, shared by query heads "
                f"{kv * group}..{kv * group + group - 1}"
            )
        return f"grouped-query: query head h reads key/value head h // {group} ({m.n_kv_head} key/value heads)"

    def caption(self, result: AttentionResult) -> list[str]:
        """What `attn show --model` says under the matrix: which model (and what its weights are), layer and head."""
        m = self.model
        lines = [
            describe(m),
            f"layer {self.layer} of 0..{m.n_layer - 1} · {self._heads_phrase()} · d_k {result.config.d_k} · "
            f"{len(result.tokens)} tokens (the model's tokenizer)",
            f"the model's weights, not attn's seeded projections: {score_formula(result)}, as transformers' "
            "output_attentions",
        ]
        lines += token_marks(result.tokens)
        window = sliding_window(m, self.layer)
        if window is not None and not m.causal:
            lines.append(
                f"mask: sliding window: each token sees the tokens up to {window - 1} before and after it "
                "(· = masked, weight 0)"
            )
        elif window is not None:
            lines.append(
                f"mask: causal and sliding window {window}: each token sees itself and the {window - 1} before it "
                "(· = masked, weight 0)"
            )
        elif result.config.mask:
            lines.append("mask: causal, no token sees a later one (· = masked, weight 0)")
        if (kv := self._kv_phrase()) is not None:
            lines.append(kv)
        lines.append("rows: queries, columns: keys; each row sums to 1; ▸ = row maximum")
        lines.append(
            f"output: the layer's attention output, of its {m.n_head} heads together: concat(A_h V_h) W_O + b_O"
        )
        return lines

    def config_record(self, result: AttentionResult) -> dict:
        """Learned positions, trained projections, no seed; then the model, the layer and the head if one was chosen."""
        m = self.model
        chosen = {"model": m.name, "layer": self.layer, **({} if self.head is None else {"head": self.head})}
        if m.n_kv_head != m.n_head:
            chosen["n_kv_head"] = m.n_kv_head
            if self.head is not None:
                chosen["kv_head"] = kv_head(m, self.head)
        chosen |= {} if self.pair is None else {"pair": self.pair}
        positional = "rope" if "rope" in m.hp else "learned"  # rotary families rotate q and k by position
        return config_record(result.config, m.name, positional, "trained", None, chosen)

    def steps(self, result: AttentionResult) -> list[Step]:
        """`attn steps --model`: the stages of one layer's attention, the model's own numbers and formulas."""
        m, layer = self.model, self.layer
        x = m.family.input_note(layer)
        split = f", split into heads ({self._heads_phrase()})"
        shared = ", each query head's key/value head" if m.n_kv_head != m.n_head else ""
        scores = shown(result)[0]
        out = [
            Step("x", x, result.x, ("query", "dim"), stage="layer input"),
            Step("q", f"Q = {self._projection('Q')}{split}", result.q, ("head", "query", "dim")),
            Step("k", f"K = {self._projection('K')}{split}{shared}", result.k, ("head", "key", "dim")),
            Step("v", f"V = {self._projection('V')}{split}{shared}", result.v, ("head", "key", "dim")),
        ]
        if m.family.score_terms is not None:  # the terms the scores add up from (DeBERTa's content and positions)
            heads = list(range(m.n_head)) if self.head is None else [self.head]
            for name, what, term in m.family.score_terms(m, layer, result.q, result.k, heads):
                out.append(Step(name, what, term, ("head", "query", "key")))
        out.append(
            Step("scores", score_formula(result) + "  (for every query–key pair)", scores, ("head", "query", "key"))
        )
        window = sliding_window(m, layer)
        masked = "causal: keys after the query" + (
            f"; and keys {window} or more before it" if window is not None else ""
        )
        out += mask_softmax_mix(result, masked if m.causal else f"sliding window: keys {window} or more away")
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
            + f"; its own tokenizer, layer {self.layer}, "
            + (f"head {self.head}" if self.head is not None else f"{self.model.n_head} heads")
        )
