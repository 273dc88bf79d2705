"""The text encoders every writer uses: JSON that a terminal cannot act on, and CSV fields."""

from __future__ import annotations

import csv
import io
import json
import re

# Code points that json.dumps(ensure_ascii=False) writes raw but a terminal may act on or hide: DEL and the C1
# controls (U+009B is CSI), format characters (bidi overrides and isolates, zero-width, BOM, tags), the line and
# paragraph separators, and lone surrogates (which are not even encodable as UTF-8). `dumps` writes them as
# \uXXXX escapes instead, so `attn ... -f json` on a terminal is as inert as a table, and the parsed strings
# are exactly the same. tests/test_hostile.py checks this class against the running Python's Unicode tables.
_UNSAFE_IN_JSON = re.compile(
    "[\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def _json_escape(match: re.Match) -> str:
    o = ord(match.group())
    if o > 0xFFFF:  # JSON writes an astral code point as its UTF-16 surrogate pair
        o -= 0x10000
        return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
    return f"\\u{o:04x}"


def dumps(value, **kwargs) -> str:
    r"""json.dumps with readable UTF-8, but every terminal-unsafe code point escaped (see _UNSAFE_IN_JSON):

    >>> dumps(["café", "\x9b2J", "\u202e"])
    '["café", "\\u009b2J", "\\u202e"]'
    """
    return _UNSAFE_IN_JSON.sub(_json_escape, json.dumps(value, ensure_ascii=False, **kwargs))


def csv_field(value: str) -> str:
    """One CSV field, quoted only when it must be (as the csv module writes it).

    >>> csv_field("a"), csv_field("a,b"), csv_field(" "), csv_field("\\n"), csv_field("\\r")
    ('a', '"a,b"', ' ', '"\\n"', '"\\r"')
    """
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow([value])  # a field holding \r or \n is quoted
    return buf.getvalue()[:-2]


def token_marks(tokens) -> dict:
    """The JSON fields a model's tokens add: "special" (one boolean per token: added by the tokenizer) and,
    for a sentence pair, "second_segment" (the index of the second text's first token); for --generate,
    "generated" (the ids the model wrote after the text, and their text); for --chat, "segments" (each token's
    part of the chat: system, user, assistant or template) and "chat" (the chat as the template wrote it); {} for a
    text run."""
    generation = tokens.generation()
    return {
        **({"special": list(tokens.special)} if tokens.special else {}),
        **({} if tokens.second is None else {"second_segment": tokens.second}),
        **({"segments": list(tokens.segments), "chat": tokens.chat_text} if tokens.segments else {}),
        **({} if generation is None else {"generated": generation}),
    }
