"""The colour scale stays ordered in every colour system: darker always means a larger weight."""

import itertools

from rich.color import Color

from attncli.render.style import XTERM_16, luminance, shade

WEIGHTS = [i / 20 for i in range(21)]


def _luminance(style) -> float:
    color: Color = style.bgcolor
    triplet = XTERM_16[color.name] if color.name in XTERM_16 else color.get_truecolor()
    return luminance(tuple(triplet))


def test_every_colour_system_keeps_the_order_of_the_weights():
    for system in ("truecolor", "256", "standard"):
        levels = [_luminance(shade(w, system)) for w in WEIGHTS]
        assert all(a >= b for a, b in itertools.pairwise(levels)), system
        assert levels[0] > 0.9 and levels[-1] < 0.1, system


def test_the_text_contrasts_with_its_background():
    for system in ("truecolor", "256", "standard"):
        for w in WEIGHTS:
            style = shade(w, system)
            dark_text = style.color.get_truecolor() == (0, 0, 0)
            assert dark_text == (_luminance(style) > 0.179), (system, w)


def test_no_colour_is_bold_only_on_the_row_maximum():
    assert shade(0.3, None) == shade(0.9, None) and shade(0.9, None, bold=True).bold
