"""Text that wraps between units, never inside one: a label stays with its number, a formula term stays whole.

Rich wraps a `Text` at any space (and counts U+00A0 as one), so a line can end in `L0` with `H7 0.85` on the
next, or in `max` with `0.31 a→flies` below it. `Units` is a `Text` that wraps only at the spaces between
units. A space joins the words either side of it into one unit when

- one of them holds a digit (`L0 H7 0.85`, `max 0.31 a→flies`, `3 like`, `3.02 of 3.46`), unless one is a
  separator (`·`, `—`, `•`, `…`) or an operator (`+`, `=`, `×`), or the left one ends a clause (`,` `;` `:`),
  which is where a list or a sum may wrap, or both are bare numbers (a row of a matrix);
- it lies inside a bracket opened in the middle of a word, a term of a formula (`tanh(W₁q + W₂k + b)`).

A unit wider than the whole line is wrapped at its own spaces, as plain text would be.

>>> from rich.console import Console
>>> console = Console(width=12, color_system=None)
>>> [line.plain.rstrip() for line in Units("L3 H3 0.82, L0 H7 0.85").wrap(console, 12)]
['L3 H3 0.82,', 'L0 H7 0.85']
>>> [line.plain.rstrip() for line in Units("s = vᵀ tanh(W₁q + W₂k + b)").wrap(console, 24)]
['s = vᵀ', 'tanh(W₁q + W₂k + b)']
"""

from __future__ import annotations

import itertools
import re

from rich._wrap import divide_line
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.containers import Lines
from rich.measure import Measurement
from rich.text import Text

SEPARATORS = frozenset("·—–•…|+−-=≈×")  # a list or a sum may wrap after these
NUMBER = re.compile(r"[−+-]?[▸\d.,%]+")
JOIN = "\ue000"  # stands for a joining space while the line is divided: one cell wide, not a space to Rich
_WORD = re.compile(r"\S+")


def _bracketed(plain: str) -> set[int]:
    """Positions of the spaces inside a bracket opened mid-word, `tanh(` or `σ(`, that closes on the line."""
    inside: set[int] = set()
    stack: list[int] = []
    for i, c in enumerate(plain):
        if c in "([":
            stack.append(i)
        elif c in ")]" and stack:
            start = stack.pop()
            if start and not plain[start - 1].isspace() and plain[start - 1] not in "([":
                inside.update(k for k in range(start, i) if plain[k] == " ")
    return inside


def _joined(a: str, b: str) -> bool:
    """Whether the space between words `a` and `b` joins them: a number with its label."""
    if a in SEPARATORS or b in SEPARATORS or a[-1] in ",;:" or (NUMBER.fullmatch(a) and NUMBER.fullmatch(b)):
        return False
    return any(c.isascii() and c.isdigit() for c in a + b)


def joins(plain: str) -> str:
    """`plain` (one line) with every space that must not break made `JOIN`.

    >>> joins("diag 0.14 · |i−j| 2.41").replace(JOIN, "_")
    'diag_0.14 · |i−j|_2.41'
    """
    chars = list(plain)
    for k in _bracketed(plain):
        chars[k] = JOIN
    words = list(_WORD.finditer(plain))
    for left, right in itertools.pairwise(words):
        gap = plain[left.end() : right.start()]
        if gap.strip(" ") == "" and _joined(left.group(), right.group()):
            chars[left.end() : right.start()] = JOIN * len(gap)
    return "".join(chars)


def divide(plain: str, width: int, fold: bool = True) -> list[int]:
    """Where to break `plain` (one line) to fit `width`: between units; inside one only if it alone is too wide."""
    masked = joins(plain)
    too_wide = [m for m in _WORD.finditer(masked) if cell_len(m.group()) > width]
    for m in too_wide:
        masked = masked[: m.start()] + m.group().replace(JOIN, " ") + masked[m.end() :]
    return divide_line(masked, width, fold=fold)


class Units(Text):
    """A `Text` that wraps between units (see the module docstring); `Units.of(text)` keeps its styles."""

    @classmethod
    def of(cls, text: Text) -> Units:
        out = cls(text.plain, style=text.style, justify=text.justify, overflow=text.overflow, end=text.end)
        out.no_wrap = text.no_wrap
        out._spans[:] = text._spans
        return out

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        lines = self.plain.splitlines() or [""]
        widest = max(cell_len(line) for line in lines)
        units = [u for line in lines for u in _WORD.findall(joins(line))]
        return Measurement(max((cell_len(u) for u in units), default=widest), widest)

    def wrap(self, console: Console, width: int, *, justify=None, overflow=None, tab_size=8, no_wrap=None) -> Lines:
        if no_wrap or self.no_wrap or overflow == "ignore":
            return super().wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)
        how = overflow or self.overflow or "fold"
        lines = Lines()
        for line in self.split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(tab_size)
            pieces = line.divide(divide(line.plain, width, fold=how == "fold"))
            for piece in pieces:
                piece.rstrip_end(width)
            pieces.justify(console, width, justify=justify or self.justify or "default", overflow=how)
            for piece in pieces:
                piece.truncate(width, overflow=how)
            lines.extend(pieces)
        return lines
