"""The colour of a weight: one blue scale for every table and heatmap.

>>> weight_style(0.0).bgcolor.triplet.hex, weight_style(1.0).color.triplet.hex
('#f7fbff', '#ffffff')
"""

from __future__ import annotations

import numpy as np
from rich.style import Style

_STOPS = np.array([[247, 251, 255], [107, 174, 214], [8, 48, 107]])


def weight_style(w: float, bold: bool = False) -> Style:
    """Background shaded by √w (small weights stay visible); the text flips to white on dark cells."""
    t = float(np.sqrt(np.clip(w, 0.0, 1.0)))
    r, g, b = (np.interp(t, [0.0, 0.5, 1.0], _STOPS[:, c]) for c in range(3))
    r, g, b = round(r), round(g), round(b)
    return Style(bgcolor=f"rgb({r},{g},{b})", color="rgb(255,255,255)" if t > 0.55 else "rgb(0,0,0)", bold=bold)
