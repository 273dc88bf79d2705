"""The registry of contribution measures (`--contrib`): one entry per measure, what the CLI offers and the JSON names.

Plain data, so that `attn show --help` reads the choices without NumPy; attncli.core.contrib computes them.

    >>> CONTRIBUTIONS["norm"].per_head, CONTRIBUTIONS["alti"].rolls_out, list(CONTRIBUTIONS)[0]
    (True, True, 'weights')
    >>> computed("weights"), computed("alti"), computed("saliency")
    (False, True, False)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    """One contribution measure: what `--contrib NAME` draws and `-f json` writes under `contributions`."""

    name: str  # the registry key: the CLI choice and the JSON's "measure"
    title: str  # how a table, a heatmap or the page names the matrices drawn ("norm ‖αf(x)‖")
    formula: str
    paper: str
    needs: str  # what it computes from, and what it costs beyond the forward pass
    per_head: bool  # whether it has one matrix per head (`heads` in the JSON) besides the layer's
    rolls_out: bool  # whether the layers' matrices are rolled out (`rollout` in the JSON)
    normalized: bool  # whether each row sums to 1 (a share of the output), else a length in the model's units
    computed: bool = True  # False for the weights themselves: nothing computed beyond the pass, today's output

    @property
    def unit(self) -> str:
        """What a number of its maps is, as a legend or a caption says it."""
        return "shares of each output, rows sum to 1" if self.normalized else "lengths in the model's units"


CONTRIBUTIONS: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure(
            "weights",
            "attention weights A = softmax(S)",
            "α^h_ij",
            "Bahdanau et al. 2015; Vaswani et al. 2017",
            "the forward pass only",
            per_head=True,
            rolls_out=False,
            normalized=True,
            computed=False,
        ),
        Measure(
            "norm",
            "norm ‖αf(x)‖",
            "head h: ‖α^h_ij f_h(x_j)‖; layer: ‖Σ_h α^h_ij f_h(x_j)‖, f_h(x) = (x W_V^h + b_V^h) W_O^h",
            "Kobayashi et al. 2020, 'Attention is not only a weight', §3 (the norm of the weighted vector)",
            "the pass's values and W_O, and an [h, n, n, d] sum over the heads made a block of rows at a time",
            per_head=True,
            rolls_out=False,
            normalized=False,
        ),
        Measure(
            "alti",
            "ALTI contributions",
            "c_ij = max(0, ‖y_i‖₁ - ‖y_i - T_i(x_j)‖₁) / Σ_k max(0, ‖y_i‖₁ - ‖y_i - T_i(x_k)‖₁), "
            "T_i(x_j) = L_i(Σ_h α^h_ij f_h(x_j) + [i = j] x_j), y_i = Σ_j T_i(x_j); rolled out C_l ⋯ C_0",
            "Ferrando et al. 2022, 'Measuring the Mixing of Contextual Information in the Transformer', §3 "
            "(the layer norm's linear part L_i, the Manhattan distance, the rollout of contributions)",
            "the pass's values, W_O and each layer's norm: one pass, and the [n, n, d] vectors a block of rows "
            "at a time",
            per_head=False,
            rolls_out=True,
            normalized=True,
        ),
        Measure(
            "value-zeroing",
            "value zeroing (cosine distance)",
            "c_ij = 1 - cos(x̃_i, x̃_i^(¬j)), x̃^(¬j) the layer's output with token j's value vectors zeroed in "
            "every head; rows normalized",
            "Mohebbi et al. 2023, 'Quantifying Context Mixing in Transformers', §2 (value zeroing)",
            "one extra pass of the layer per token, a batch of tokens at a time",
            per_head=False,
            rolls_out=False,
            normalized=True,
        ),
    )
}


def computed(name: str) -> bool:
    """Whether `--contrib name` asks for maps beyond the weights (a name not in the registry: no, and the check
    of the measure says so)."""
    return name in CONTRIBUTIONS and CONTRIBUTIONS[name].computed
