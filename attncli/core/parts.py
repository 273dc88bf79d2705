"""The parts of an encoder–decoder model whose attention attn shows (`--part`): the one list of their names.

An encoder–decoder (Vaswani et al. 2017; BART, T5, Marian) has three attentions: the encoder's
self-attention over the source, the decoder's causal self-attention over the target, and the
cross-attention whose queries come from the decoder and whose keys and values come from the
encoder's output. Standard library only: the command line reads it before NumPy loads.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    """One attention of an encoder–decoder."""

    help: str  # what it is, for --help and captions
    title: str  # the name over its matrices in `attn show`
    queries: str  # whose tokens are the rows
    keys: str  # whose tokens are the columns
    needs_source: bool  # decoder and cross run the target through the decoder, so they need --context SOURCE


PARTS: dict[str, Part] = {
    "cross": Part(
        "cross-attention: queries from the decoder (the target), keys and values from the encoder (the source)",
        "Cross-attention alignment: target queries × source keys",
        "target",
        "source",
        True,
    ),
    "decoder": Part(
        "the decoder's causal self-attention over the target",
        "Decoder self-attention (causal): target × target",
        "target",
        "target",
        True,
    ),
    "encoder": Part(
        "the encoder's self-attention over the source",
        "Encoder self-attention: source × source",
        "source",
        "source",
        False,
    ),
}
DEFAULT_PART = "cross"
