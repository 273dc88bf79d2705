"""The blocks of an encoder–decoder's decoder (families/bart.py, families/t5.py).

Its cross-attention is `models/network/attention.py`'s `attend` with `memory` = the encoder's output (Bahdanau
et al. 2015; Vaswani et al. 2017): queries from the decoder, keys and values from the source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Decoder:
    """An encoder–decoder family's decoder blocks. y is the decoder's residual stream [m, d_model]."""

    embed: Callable  # (m, ids [m]) -> y [m, d_model]
    self_attention: Callable  # (m, layer, y) -> (y, LayerSteps of the causal self-attention)
    cross_attention: Callable  # (m, layer, y, memory [n, d_model]) -> (y, LayerSteps: queries y, keys memory)
    mlp: Callable  # (m, layer, y) -> y
    input_note: Callable[[int, str], str]  # (layer, "decoder" or "cross") -> what X, the attention's input, is
    logits: Callable  # (m, y [m, d_model] after the last layer) -> [m, vocab]: the final norm, if any, and the LM head
    # tensors the logits read when the checkpoint has them, by their full names, and their shapes (None = any)
    optional: dict[str, tuple[int | None, ...]] = field(default_factory=dict)
    # (layer, "decoder" or "cross") -> the LayerNorm after that attention and its residual (post-LN: BART, Marian),
    # without ".weight" (ALTI's linear part of it, attncli.models.interpret.contrib_parts); None: no norm after
    attention_norm: Callable[[int, str], str] | None = None
