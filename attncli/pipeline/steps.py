"""Every stage of the pipeline, tokens to merged output, as a named array with its formula: what `attn steps` shows.

    >>> from attncli.pipeline.run import run
    >>> [(s.name, s.shape) for s in steps(run("time flies", trace=True))][:4]
    [('x', (2, 16)), ('q', (1, 2, 16)), ('k', (1, 2, 16)), ('v', (1, 2, 16))]

Each `Step` names its axes ("head", "query", "key", "dim") so that a renderer
knows which labels go where; the JSON of `attn steps -f json` holds every array whole.
NumPy and the standard library only.
"""

from __future__ import annotations

import numpy as np

from attncli.core.variants import VARIANTS
from attncli.pipeline.embed import POSITIONAL, embed
from attncli.pipeline.result import TRACE, AttentionResult, Step

SCHEMA = "attncli.steps/1"


def _trace_axes(terms: dict, name: str, shape: tuple[int, ...], m: int, n: int) -> tuple[str, ...]:
    """Axes of a trace term: the variant's own (`terms`), or, for a term it does not name, guessed from its shape."""
    if name in terms and len(terms[name][1]) == len(shape):
        return terms[name][1]
    side = "key" if shape[1:2] == (n,) and (m != n or ("k" in name and "q" not in name)) else "query"
    guesses = {
        2: ("head", side),
        3: ("head", side, "key" if shape[1:] == (m, n) else "dim"),
        4: ("head", "query", "key", "dim"),
    }
    return guesses.get(len(shape), tuple(f"axis{i}" for i in range(len(shape))))


def steps(result: AttentionResult) -> list[Step]:
    """The stages of the run, as its source knows them: a text's, given matrices' or a model layer's."""
    return result.source.steps(result)


def text_steps(result: AttentionResult) -> list[Step]:
    """A text run's stages in pipeline order, X to O. Run with `trace=True` to get the variant's own terms."""
    c = result.config
    weights = shown(result)[1]
    out: list[Step] = []
    e = embed(result.tokens.strings, c.dim, c.seed)  # [m, d_model]
    if c.positional == "none":
        out.append(
            Step("x", "X = E: one hashed vector per token, no positions (order-blind)", result.x, ("query", "dim"))
        )
    else:
        out.append(Step("e", "E: one hashed vector per token string", e, ("query", "dim")))
        out.append(
            Step("pe", f"PE: {POSITIONAL[c.positional].formula.split(', ', 1)[-1]}", result.x - e, ("query", "dim"))
        )
        out.append(Step("x", "X = E + PE", result.x, ("query", "dim")))
    if result.x_context is not None:
        out.append(
            Step("x_context", "X_ctx: the --context tokens, embedded the same way", result.x_context, ("key", "dim"))
        )
    src = "X" if result.x_context is None else "X_ctx"
    if c.projection == "identity":
        out += [
            Step("q", "Q = X (identity projection)", result.q, ("head", "query", "dim")),
            Step("k", f"K = {src}", result.k, ("head", "key", "dim")),
            Step("v", f"V = {src}", result.v, ("head", "key", "dim")),
        ]
    else:
        split = ", split into heads" if c.heads > 1 else ""
        out += [
            Step("q", f"Q = X W_Q{split}", result.q, ("head", "query", "dim")),
            Step("k", f"K = {src} W_K{split}", result.k, ("head", "key", "dim")),
            Step("v", f"V = {src} W_V{split}", result.v, ("head", "key", "dim")),
        ]
    m, n = weights.shape[1:]
    terms = VARIANTS[c.variant].trace_terms  # the variant's trace terms: name -> (formula, axes)
    known = list(terms)
    order = sorted(result.trace, key=lambda k: known.index(k) if k in known else len(known))  # stable
    for name in order:
        array = result.trace[name]
        formula = terms.get(name, (name, ()))[0]
        out.append(Step(f"{TRACE}{name}", formula, np.asarray(array), _trace_axes(terms, name, array.shape, m, n)))
    out.append(score_step(result))
    out += mask_softmax_mix(result, ", ".join(c.mask))
    if c.heads > 1:
        merged = result.head_outputs.transpose(1, 0, 2).reshape(m, -1)  # [m, h * d_v]
        out.append(
            Step("concat", "concat(O_0, …, O_{h−1}): the heads side by side, head 0 first", merged, ("query", "dim"))
        )
    w_o = "concat(O_h) W_O" if c.heads > 1 else "O_0 W_O"
    out.append(
        Step(
            "output",
            f"O = {w_o}" if c.projection == "random" else "O = concat(O_h) (identity W_O)",
            result.output,
            ("query", "dim"),
        )
    )
    return out


def params(result: AttentionResult) -> dict[str, np.ndarray]:
    """The weights a reader needs to redo the arithmetic: W_Q, W_K, W_V, W_O and the variant's own."""
    out = {}
    if result.projections is not None:
        p = result.projections
        out.update({"W_Q": p.w_q, "W_K": p.w_k, "W_V": p.w_v, "W_O": p.w_o})
    out.update(result.params)
    return out


def shown(result: AttentionResult) -> tuple[np.ndarray, np.ndarray]:  # -> scores [h, m, n], weights [h, m, n]
    """The scores and weights the steps show: a result without them (--no-weights) has no steps to show."""
    return result.attention("attn steps shows the n × n weights: run without --no-weights")


def score_step(result: AttentionResult) -> Step:
    """S: the variant's score of every query–key pair, divided by the temperature T when it is not 1."""
    c = result.config
    formula = VARIANTS[c.variant].formula.replace("s = ", "S = ", 1)
    if c.temperature != 1.0:
        formula = f"S = ({formula[4:]}) / T, T = {c.temperature:g}"
    return Step("scores", formula + "  (for every query–key pair)", shown(result)[0], ("head", "query", "key"))


def mask_softmax_mix(result: AttentionResult, mask_label: str) -> list[Step]:
    """The stages every run shares after its scores: S' (when masked), A = softmax, O_h = A_h V_h."""
    scores, weights = shown(result)
    out = []
    if result.masked is not None:
        out.append(
            Step(
                "masked_scores",
                f"S' = S with −∞ where masked ({mask_label})",
                np.where(result.masked, -np.inf, scores),
                ("head", "query", "key"),
                note="−∞ is null in JSON",
            )
        )
    s = "S'" if result.masked is not None else "S"
    out.append(Step("weights", f"A = softmax({s}) along each row: e^s / Σ e^s", weights, ("head", "query", "key")))
    out.append(
        Step(
            "head_outputs",
            "O_h = A_h V_h: each query's weighted average of the values",
            result.head_outputs,
            ("head", "query", "dim"),
        )
    )
    return out
