"""Many texts in one forward pass: padded to the longest, the padding keys masked, the attention weights cut back.

The families' blocks act per token (embeddings, projections, LayerNorm, MLP) or over the last two
axes (attention), so a batch x [B, n, d_model] runs through them unchanged; inside
`attncli.models.network.attention.padding`, `attend` also masks each text's padding keys, so that
a real query puts exactly 0 on them and the real rows are those of the text run alone (to float32
rounding: a longer matrix product may add in another order). Padding sits after the text, so its
positions never move a real token's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attncli.models.files.hparams import ModelError
from attncli.models.network.attention import padding
from attncli.models.network.model import Model


def batches(lengths: Sequence[int], size: int, tokens: int) -> list[list[int]]:
    """Indices of texts in order of length, cut in batches of at most `size` texts and `tokens` padded tokens
    (texts × the longest), so that a batch pads little and its arrays stay in the caches.

    >>> batches([5, 1, 4, 2, 3], 2, 100), batches([5, 1, 4, 2, 3], 4, 9)
    ([[1, 3], [4, 2], [0]], [[1, 3, 4], [2], [0]])
    """
    out: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if out and len(out[-1]) < size and (len(out[-1]) + 1) * lengths[i] <= tokens:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def forward_weights(model: Model, texts: Sequence[np.ndarray]) -> list[np.ndarray]:
    # B × [n_b] token ids -> B × [L, n_head, n_b, n_b]
    """Every layer's attention weights of every text, from one padded forward pass of all of them."""
    weights, _, _, lengths = forward_padded(model, texts)
    return [weights[b, :, :, :n, :n] for b, n in enumerate(lengths)]


def forward_padded(model: Model, texts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # B × [n_b] token ids -> [B, L, n_head, n, n], [B, L, n], [B, n], [B]
    """One padded forward pass of all `texts`: every layer's weights, the norm of the residual stream entering
    each layer at each position (float64, of the float32 stream), the ids padded with 0 and the lengths. A text's
    real rows put no weight on its padding keys; its padding rows are whatever they are."""
    if not texts or min(len(ids) for ids in texts) == 0:
        raise ModelError("no token ids to run")
    lengths = np.array([len(ids) for ids in texts])
    n = int(lengths.max())
    if n > model.max_positions:
        raise ModelError(f"{n} tokens, but {model.name} takes at most {model.max_positions}")
    family = model.family
    model.weights[family.word]  # the table read once, whole: a batch reads many rows (Weights keeps it)
    pad = np.arange(n)[None, :] >= lengths[:, None]  # [B, n]
    ids = np.stack([np.pad(np.asarray(t), (0, n - len(t))) for t in texts])  # [B, n]
    x = np.stack([family.embed(model, row) for row in ids])  # [B, n, d_model]
    layers, norms = [], []
    with padding(pad):
        for l in range(model.n_layer):
            norms.append(np.linalg.norm(x.astype(np.float64), axis=-1))  # [B, n]
            x, steps = family.attention(model, l, x)
            layers.append(steps.weights)  # [B, n_head, n, n]
            if l < model.n_layer - 1:  # the last MLP does not change any attention
                x = family.mlp(model, l, x)
    return np.stack(layers, axis=1), np.stack(norms, axis=1), ids, lengths
