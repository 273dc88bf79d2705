"""Where a weight in [0, 1] sits on a colour scale, in [0, 1]: the maths behind render/style.py's SCALES (the
renderers only draw). Standard library only: `attn show --help` reads the scales' names without NumPy.

    >>> sqrt_position(0.25), log_position(0.01)
    (0.5, 0.5)
"""

from __future__ import annotations

import math

#: The smallest weight the log scale tells apart from 0: 10⁻⁴ and below are its lightest shade.
DEFAULT = "sqrt"  # the scale weights are drawn on unless --scale names another (render/style.py's SCALES)
LOG_FLOOR = 1e-4


def linear_position(w: float) -> float:
    """w itself: the shade in proportion to the weight."""
    return w


def sqrt_position(w: float) -> float:
    """√w: small weights stay visible beside a large one."""
    return math.sqrt(w)


def log_position(w: float) -> float:
    """log10(w) from LOG_FLOOR (0) to 1 (1): a decoder's 0.001 and 0.01 apart beside its sink's 0.9.

    >>> [round(log_position(w), 2) for w in (0.0, 1e-4, 1e-2, 1.0)]
    [0.0, 0.0, 0.5, 1.0]
    """
    return (math.log10(max(w, LOG_FLOOR)) - math.log10(LOG_FLOOR)) / -math.log10(LOG_FLOOR)
