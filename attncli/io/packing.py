"""How the page's arrays are written in its JSON: a weight as one byte (round(weight × SCALE)), any array's bytes
raw-deflated in base64 (`packed`, read back by `unpacked`), and a model's layers of drawn weights with their masks
(`layers_record`), shared by the page's attention (io/view.py) and its colour, sink and contribution data
(io/view_looks.py).
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

SCALE = 255  # a drawn weight is round(weight × SCALE), one byte: 1/255 steps, finer than a line's opacity shows


def packed(a: np.ndarray) -> str:  # any array -> base64 of its bytes, raw-deflated
    """An array's bytes (little-endian, row-major) compressed with raw deflate, in base64: what the page inflates."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    return base64.b64encode(z.compress(np.ascontiguousarray(a).tobytes()) + z.flush()).decode("ascii")


def unpacked(text: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:  # base64 -> [shape] of dtype
    """The inverse of `packed`.

    >>> unpacked(packed(np.arange(6, dtype="<f4").reshape(2, 3)), "<f4", (2, 3)).tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """
    return np.frombuffer(zlib.decompress(base64.b64decode(text), -15), dtype=dtype).reshape(shape)


def mask_rows(masked: np.ndarray) -> list[str]:  # [m, n] bool -> m strings of n "0"/"1"
    return ["".join("1" if x else "0" for x in row) for row in masked.tolist()]


def layers_record(
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
                rows = mask_rows(masked[l, h])
                if rows not in masks:
                    masks.append(rows)
                mask = masks.index(rows)
            drawn = np.rint(weights[l, h] * SCALE).astype(np.uint8)
            entries.append({"head": head, "label": labels[l][h], "mask": mask, "weights": packed(drawn)})
        out.append({"layer": layer, "heads": entries})
    return out, masks
