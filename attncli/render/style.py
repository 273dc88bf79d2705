"""The colour of a weight: one sequential blue scale for every table and heatmap, in any terminal.

The scale is ColorBrewer's "Blues" (light = small, dark = large), shaded by √w so
that small weights stay visible. A truecolor terminal gets the scale itself; a
256- or 16-colour terminal gets steps picked from its own palette in order of
luminance, so the order survives (Rich's nearest-colour downgrade turns the blues
into unordered teal, lavender and purple). The text on a cell is black or white,
whichever contrasts more with that cell's background.

>>> [shade(w, "truecolor").bgcolor.triplet.hex for w in (0.0, 1.0)]
['#f7fbff', '#08306b']
>>> shade(1.0, "truecolor").color.name, shade(0.0, "256").color.name
('#ffffff', '#000000')
>>> [shade(w, "256").bgcolor.number for w in (0.0, 0.1, 0.3, 0.6, 1.0)]
[231, 146, 74, 25, 17]
>>> shade(0.5, None)
Style()
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from rich.color import Color
from rich.style import Style

from attncli.core.scales import LOG_FLOOR, linear_position, log_position, sqrt_position

BLUES = ["f7fbff", "deebf7", "c6dbef", "9ecae1", "6baed6", "4292c6", "2171b5", "08519c", "08306b"]
SIXTEEN = ["bright_white", "bright_cyan", "cyan", "bright_blue", "blue"]  # light to dark in xterm's palette
XTERM_16 = {  # xterm's defaults for the 16 colours used above
    "bright_white": (255, 255, 255),
    "bright_cyan": (0, 255, 255),
    "cyan": (0, 205, 205),
    "bright_blue": (92, 92, 255),
    "blue": (0, 0, 238),
}


def _rgb(hex6: str) -> tuple[int, int, int]:
    return int(hex6[0:2], 16), int(hex6[2:4], 16), int(hex6[4:6], 16)


def luminance(rgb: tuple[int, int, int]) -> float:
    """Relative luminance (WCAG 2): 0 black, 1 white.

    >>> round(luminance((255, 255, 255)), 3), round(luminance((8, 48, 107)), 3)
    (1.0, 0.032)
    """

    def linear(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_on(rgb: tuple[int, int, int]) -> Color:
    """Black or white, whichever contrasts more with a background of this colour."""
    return Color.parse("#000000" if luminance(rgb) > 0.179 else "#ffffff")


def _xterm_256() -> dict[int, tuple[int, int, int]]:
    """Colours 16..255 of the xterm palette: a 6×6×6 cube and 24 greys (0..15 vary by terminal)."""
    levels = [0, 95, 135, 175, 215, 255]
    cube = {
        16 + 36 * r + 6 * g + b: (levels[r], levels[g], levels[b]) for r in range(6) for g in range(6) for b in range(6)
    }
    return {**cube, **{232 + i: (8 + 10 * i,) * 3 for i in range(24)}}


@functools.cache
def _steps_256() -> list[tuple[int, tuple[int, int, int]]]:
    """For each BLUES step, the nearest 256-palette blue (or grey) that is darker than the previous step's pick."""
    palette = {n: (r, g, b) for n, (r, g, b) in _xterm_256().items() if r == g == b or b > g >= r}
    picks: list[tuple[int, tuple[int, int, int]]] = []
    for target in map(_rgb, BLUES):
        limit = luminance(picks[-1][1]) if picks else 2.0
        darker = {n: c for n, c in palette.items() if luminance(c) < limit}
        n = min(darker, key=lambda n: sum((a - b) ** 2 for a, b in zip(darker[n], target)))
        picks.append((n, darker[n]))
    return picks


@dataclass(frozen=True)
class Scale:
    """How a weight in [0, 1] becomes a position on the one blue scale (`--scale`)."""

    name: str
    position: Callable[[float], float]  # w in [0, 1] -> [0, 1] (attncli.core.scales)
    words: str  # how a legend names it
    note: str = ""  # what a table says under itself in this scale ("": nothing, the usual √)
    ticks: tuple[float, ...] = (0.0, 0.04, 0.25, 0.5, 1.0)  # the weights a legend marks along its bar

    def legend(self) -> dict:
        """What the page draws its shades and legend from: the position of each weight b/255 (the page's weights
        are bytes), and each tick's position and words.

        >>> t = SCALES["log"].legend()
        >>> len(t["positions"]), t["positions"][255], t["ticks"][2]
        (256, 1.0, [0.5, '0.01'])
        """
        return {
            "words": self.words,
            "positions": [round(self.position(b / 255), 5) for b in range(256)],
            "ticks": [[round(self.position(w), 5), tick(w)] for w in self.ticks],
        }


def tick(w: float) -> str:
    """A legend's words for the weight `w`: short, a power of ten below 0.01 as one.

    >>> tick(1e-4), tick(0.01), tick(0.25), tick(0.0)
    ('10⁻⁴', '0.01', '0.25', '0')
    """
    mantissa, exponent = f"{w:e}".split("e")  # its digits as written: 1e-4 is '1.000000e-04'
    if 0 < w < 0.01 and float(mantissa) == 1:
        return "10" + str(int(exponent)).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{w:g}"


SCALES = {
    s.name: s
    for s in (
        Scale("sqrt", sqrt_position, "√ scale"),
        Scale(
            "log",
            log_position,
            f"log scale (≤ {LOG_FLOOR:g} lightest)",
            f"colour on a log scale (≤ {LOG_FLOOR:g} lightest, 1 darkest); the numbers are the weights",
            ticks=(LOG_FLOOR, 1e-3, 1e-2, 0.1, 1.0),
        ),
        Scale(
            "linear",
            linear_position,
            "linear scale",
            "colour in proportion to the weight (the √ scale's small weights fade); the numbers are the weights",
            ticks=(0.0, 0.25, 0.5, 0.75, 1.0),
        ),
    )
}


def shade(w: float, system: str | None, bold: bool = False, scale: str = "sqrt") -> Style:
    """The style of a cell holding weight `w` in [0, 1] on a console of this colour system
    ("truecolor", "256", "standard", "windows" or None for no colour), placed on the blue scale by `scale` (a key
    of SCALES: √w, or log10 w from LOG_FLOOR).

    >>> shade(0.01, "256", scale="log").bgcolor.number == shade(0.25, "256").bgcolor.number  # both halfway
    True
    """
    t = SCALES[scale].position(min(1.0, max(0.0, float(w)))) if math.isfinite(w) else 0.0
    if system is None:
        return Style(bold=True) if bold else Style()
    if system == "truecolor":
        x = t * (len(BLUES) - 1)
        lo = min(int(x), len(BLUES) - 2)
        a, b = _rgb(BLUES[lo]), _rgb(BLUES[lo + 1])
        rgb = tuple(round(p + (q - p) * (x - lo)) for p, q in zip(a, b))
        back = Color.from_rgb(*rgb)
        return Style(bgcolor=back, color=text_on(rgb), bold=bold)  # type: ignore[arg-type]
    if system == "256":
        n, rgb = _steps_256()[round(t * (len(BLUES) - 1))]
        return Style(bgcolor=Color.from_ansi(n), color=text_on(rgb), bold=bold)
    name = SIXTEEN[round(t * (len(SIXTEEN) - 1))]
    return Style(bgcolor=name, color=text_on(XTERM_16[name]), bold=bold)


def system_of(console) -> str | None:
    """The colour system `shade` draws for on this console: None when colour is off; truecolor when the console
    records a picture (--save-svg, -f svg), which has every colour whatever the terminal has."""
    if console.no_color:
        return None
    return "truecolor" if console.record else console.color_system
