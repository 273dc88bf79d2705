r"""Text from the user made safe and visible for a terminal.

Anything a terminal could act on or that is invisible becomes a visible escape:
C0 and C1 control characters (ESC, BEL, NUL, CSI U+009B, ...) as `\x1b`, `\x9b`
(with `\n`, `\t`, `\r`, `\0` by name), and format characters, separators,
surrogates, private-use and unassigned code points (bidi overrides U+202A..202E
and isolates U+2066..2069, zero-width U+200B..200D, U+2060, BOM U+FEFF, line and
paragraph separators) as `<U+XXXX>`. Everything else, wide CJK and emoji included,
passes through unchanged.

    >>> escape_text("a\x1b]0;title\x07b \u202eevil")
    'a\\x1b]0;title\\x07b <U+202E>evil'

A combining mark has nothing to sit on at the start of a token (the char
tokenizer makes each mark its own token) or after an escape, where it would
land on the border of a table cell or on the escape's last character: there it
gets the dotted circle U+25CC, as in Unicode's own charts, so that it is seen
and takes one column:

    >>> escape_token("\u0301") == "\u25cc\u0301", escape_token("e\u0301") == "e\u0301"
    (True, True)

`escape_token` also shows a token of spaces as ␣ (an empty-looking cell
is confusing); `escape_text` keeps spaces for messages and captions. Markup
(`[red]`) needs no escaping here: user text only ever reaches Rich as
`rich.text.Text`, which is never parsed for markup. Imports the standard
library only.
"""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}
_HIDDEN = ("Cf", "Cs", "Co", "Cn", "Zl", "Zp")  # format, surrogate, private use, unassigned, line/para separator
_COMBINING = ("Mn", "Me")  # marks that draw on the character before them
DOTTED_CIRCLE = "\u25cc"


def escape_text(s: str) -> str:
    """`s` with every control, format or invisible code point made a visible escape (spaces kept)."""
    if s.isprintable() and not any(unicodedata.category(c) in _COMBINING for c in s[:1]):
        return s  # the common case, fast: isprintable() is False for Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs but ' '
    out: list[str] = []
    bare = True  # the next combining mark would have nothing (or an escape) to sit on
    for c in s:
        cat = unicodedata.category(c)
        if c in _NAMED:
            out.append(_NAMED[c])
            bare = True
        elif cat == "Cc":
            out.append(f"\\x{ord(c):02x}")
            bare = True
        elif cat in _HIDDEN:
            out.append(f"<U+{ord(c):04X}>")
            bare = True
        elif cat in _COMBINING and bare:
            out.append(DOTTED_CIRCLE + c)
            bare = False
        else:
            out.append(c)
            bare = False
    return "".join(out)


def escape_token(s: str) -> str:
    r"""A token made safe and visible: `escape_text`, and a token of spaces shows as ␣.

    >>> escape_token("a\x1b[2Jb"), escape_token("\u202e"), escape_token(" ")
    ('a\\x1b[2Jb', '<U+202E>', '␣')
    """
    if s and all(c == " " for c in s):
        return "␣" * len(s)
    return escape_text(s)


def escape_lines(s: str) -> str:
    """Like `escape_text`, but newlines stay newlines (for captions and notes of several lines)."""
    return "\n".join(escape_text(line) for line in s.split("\n"))
