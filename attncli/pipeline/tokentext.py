"""A token as its text, one convention for every screen: what the model read, with its whitespace visible.

A vocabulary writes its tokens in its own code: byte-level BPE (GPT-2, Llama 3, SmolLM2) maps each byte to a
printable character (a space is `Ġ`, a newline `Ċ`, the two bytes of "ü" `Ã¼`; Radford et al. 2019, §2.2),
SentencePiece writes a space as `▁` and an unknown byte as `<0xE2>` (Kudo & Richardson 2018), WordPiece marks a
word's continuation `##` (Wu et al. 2016). The text of a token is what the tokenizer's own decoder makes of it:
`texts` decodes every prefix of the ids (as a streaming detokenizer does) and gives each token what its id
added, so that the texts joined are the decoded text. A token that ends inside a UTF-8 character adds nothing
yet (the character is given to the token that completes it); it is shown by its bytes, `‹e2 80›`.

`shown` draws a text for a table, the page or an SVG: a space as `␣`, a newline as `↵`, a tab as `⇥`, a carriage
return as `␍`; `legend` is the one line that says so, for the marks a screen shows:

    >>> shown(" Paris"), shown("\\n\\n"), shown("\\tx"), shown("")
    ('␣Paris', '↵↵', '⇥x', '∅')
    >>> legend(["␣Paris", "↵", "is"])
    'tokens as text: ␣ a space, ↵ a newline'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

MARKS = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}  # whitespace -> the mark that draws it
MEANS = {"␣": "a space", "↵": "a newline", "⇥": "a tab", "␍": "a carriage return"}
EMPTY = "∅"  # a token whose text is empty (a special token's, or one its decoder drops)
BYTES_OPEN, BYTES_CLOSE = "‹", "›"  # around the bytes of a character a token only begins
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
REPLACEMENT = "\ufffd"  # what a decoder writes for bytes that are not (yet) a whole UTF-8 character


def _byte_level_table() -> dict[str, int]:
    """Byte-level BPE's printable stand-in for each byte -> the byte (GPT-2's encoder: the printable Latin-1
    bytes stand for themselves, the 68 others are shifted to 256 + k in their order)."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {chr(b): b for b in kept}
    shifted = [b for b in range(256) if b not in table.values()]
    table.update({chr(256 + k): b for k, b in enumerate(shifted)})
    return table


BYTE_LEVEL = _byte_level_table()


def piece_bytes(string: str) -> bytes | None:
    """The bytes a vocabulary string stands for, where its code says so: `<0xE2>` (SentencePiece's byte
    fallback), or a byte-level BPE string; None for any other.

    >>> piece_bytes("<0xE2>"), piece_bytes("Ã¼"), piece_bytes("ĠParis"), piece_bytes("日本")
    (b'\\xe2', b'\\xc3\\xbc', b' Paris', None)
    """
    byte = _BYTE_PIECE.fullmatch(string)
    if byte:
        return bytes([int(byte.group(1), 16)])
    if string and all(c in BYTE_LEVEL for c in string):
        return bytes(BYTE_LEVEL[c] for c in string)
    return None


def texts(ids: Sequence[int], special: Sequence[bool], decode: Callable[[list[int]], str]) -> tuple[str, ...]:
    # [n] ids, [n] special -> [n] texts
    """Each token's text: what its id adds to the decoded text of the ids before it (special tokens skipped:
    their text is empty). A token that leaves the decoded text ending in U+FFFD (the first bytes of a
    character) adds nothing; the token that completes the character adds it. Joined, they are `decode` of
    the ids that are not special.

    >>> pieces = {1: "time", 2: " fl", 3: "ies", 4: "\\xe2", 5: "\\x80\\x99"}
    >>> as_bytes = lambda ids: b"".join(pieces[i].encode("latin-1") for i in ids).decode("utf-8", "replace")
    >>> texts([1, 2, 3, 4, 5], [False] * 5, as_bytes)
    ('time', ' fl', 'ies', '', '’')
    """
    out: list[str] = []
    kept: list[int] = []
    done = ""  # the decoded text of the tokens so far, up to its last whole character
    for i, s in zip(ids, special):
        if s:
            out.append("")
            continue
        kept.append(int(i))
        now = decode(kept)
        if now.endswith(REPLACEMENT) or not now.startswith(done):
            out.append("")  # a character begun, or a decoder that rewrites what came before: wait
            continue
        out.append(now[len(done) :])
        done = now
    if kept:
        last = decode(kept)
        if last != done:  # bytes never completed, or a rewriting decoder: the rest goes to the last token
            rest = last[len(done) :] if last.startswith(done) else None
            if rest is None:
                return _spans_of(out, last)
            at = max(k for k, s in enumerate(special) if not s)
            out[at] += rest
    return tuple(out)


def _spans_of(out: list[str], whole: str) -> tuple[str, ...]:
    """A decoder that rewrote an earlier part of the text (a clean-up that joins "don ' t" into "don't"): the
    texts found so far, with the whole decoded text given to the last token that is not empty, so that they
    still join to it."""
    done = "".join(out)
    common = 0
    while common < min(len(done), len(whole)) and done[common] == whole[common]:
        common += 1
    kept, length = [], 0
    for t in out:
        if length + len(t) <= common:
            kept.append(t)
            length += len(t)
        else:
            kept.append("")
    last = max((k for k, t in enumerate(out) if t), default=len(out) - 1)
    kept[last] += whole[length:]
    return tuple(kept)


def shown(text: str) -> str:
    """A token's text drawn with its whitespace visible (MARKS); `∅` for an empty one."""
    if not text:
        return EMPTY
    return "".join(MARKS.get(c, c) for c in text)


def shown_text(text: str) -> str:
    """A text of several tokens drawn in words: its spaces kept, its other whitespace marked (`↵`, `⇥`, `␍`).

    >>> shown_text(" Paris.\\n\\nThe answer")
    '␣Paris.↵↵The answer'
    """
    if not text:
        return EMPTY
    body = "".join(MARKS.get(c, c) if c != " " else c for c in text)
    return MARKS[" "] + body[1:] if text.startswith(" ") else body


def shown_bytes(data: bytes) -> str:
    """The bytes of a character a token only begins: `‹e2 80›`.

    >>> shown_bytes(b"\\xe2\\x80")
    '‹e2 80›'
    """
    return BYTES_OPEN + " ".join(f"{b:02x}" for b in data) + BYTES_CLOSE


def labels(strings: Sequence[str], token_texts: Sequence[str], special: Sequence[bool]) -> tuple[str, ...]:
    # [n] vocabulary strings, [n] texts, [n] special -> [n] labels
    """Each token as a screen shows it: its text with visible whitespace; a special token as its vocabulary
    string (it has no text: `<s>`, `[CLS]`); a token that only begins a character as its bytes (`‹e2 80›`), or
    its vocabulary string when its code does not say which bytes.

    >>> labels(["ĠParis", "<s>", "âĢ", "Ļ"], [" Paris", "", "", "’"], [False, True, False, False])
    ('␣Paris', '<s>', '‹e2 80›', '’')
    """
    out = []
    for string, text, s in zip(strings, token_texts, special):
        if s:
            out.append(string)
        elif text:
            out.append(shown(text))
        else:
            data = piece_bytes(string)
            out.append(shown_bytes(data) if data is not None else string)
    return tuple(out)


def legend(drawn: Sequence[str]) -> str | None:
    """The one line that says what the marks of `drawn` labels mean, or None when they have none."""
    said = [f"{mark} {means}" for mark, means in MEANS.items() if any(mark in d for d in drawn)]
    if any(BYTES_OPEN in d and BYTES_CLOSE in d for d in drawn):
        said.append(f"{BYTES_OPEN}e2 80{BYTES_CLOSE} the bytes of a character the next token completes")
    if any(d == EMPTY for d in drawn):
        said.append(f"{EMPTY} no text")
    return "tokens as text: " + ", ".join(said) if said else None
