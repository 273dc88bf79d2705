"""Text -> tokens, each with its string, id and character offsets.

Three built-in tokenizers and any Hugging Face tokenizer.json:

    >>> word("don't panic...").strings
    ('don', "'", 't', 'panic', '...')
    >>> char("hi!").offsets
    ((0, 1), (1, 2), (2, 3))
    >>> word("the dog chased the cat").ids     # ids index this text's own vocabulary
    (0, 1, 2, 0, 3)

`TOKENIZERS` is the registry: the CLI's choices and `attn compare` read it.
Offsets are indices into the Python string (code points), so
`text[start:end]` is the span a token came from.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from attncli.errors import ConfigError, DataError
from attncli.pipeline.budget import max_bytes_from
from attncli.pipeline.read import MAX_JSON_DEPTH, decode, json_depth, read_bounded
from attncli.pipeline.tokentext import labels as text_labels
from attncli.pipeline.tokentext import texts as decoded_texts

WORD_RE = re.compile(r"\w+|[^\w\s]+")


SPECIAL_MARK = "◇"  # before a special token's label in a table ([CLS], <s>): added by the tokenizer
SECOND_MARK = "‖"  # before the label of a sentence pair's second segment's first token: the pair's boundary
GENERATED_MARK = "›"  # before the label of a token a model wrote (--generate), not cut from the text
CHAT_TEMPLATE_SEGMENT = "template"  # --chat: a token the chat template wrote (not a message's text)


@dataclass(frozen=True)
class Tokens:
    """A tokenized text: parallel tuples of strings, ids and (start, end) offsets, and each token's text.

    `strings` are the vocabulary's (`ĠParis`); `texts` what each token adds to the decoded text (` Paris`;
    attncli.pipeline.tokentext: joined, they are the decoded text); a screen draws `drawn()`, the texts with
    their whitespace visible (`␣Paris`), or the vocabulary strings when `raw` (--raw-tokens)."""

    strings: tuple[str, ...]
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]
    tokenizer: str
    vocab_size: int | None = None  # None: open vocabulary (char, word)
    warnings: tuple[str, ...] = ()  # things the user must be told (e.g. truncation)
    unk_token: str | None = None  # the tokenizer's unknown token ([UNK]), if it has one
    special: tuple[bool, ...] = ()  # per token: added by the tokenizer ([CLS], <s>, BOS), not cut from the text
    second: int | None = None  # a sentence pair: the index of the second segment's first token
    generated: int | None = None  # a model's --generate: the index of the first token it wrote (the rest are too)
    generated_text: str = ""  # the tokens it wrote, decoded by its tokenizer
    generated_by: str = ""  # how it chose them: greedy, or sampled (and how)
    # --chat: per token, the part of the chat it belongs to: a message's role (system, user, assistant) or
    # CHAT_TEMPLATE_SEGMENT (what the model's chat template wrote around them); () without --chat
    segments: tuple[str, ...] = ()
    chat_text: str = ""  # --chat: the chat as the template wrote it, the text the offsets point into
    texts: tuple[str, ...] = ()  # each token's text (empty: the strings are the texts, as char's and word's)
    raw: bool = False  # draw the vocabulary strings, not the texts (--raw-tokens)

    def text_of(self) -> tuple[str, ...]:
        """Each token's text: `texts`, or the strings for a tokenizer whose strings are their text."""
        return self.texts or self.strings

    def drawn(self) -> tuple[str, ...]:
        """Each token as every screen draws it: its text with visible whitespace (`␣Paris`, `↵`, `‹e2 80›`),
        a special token as its vocabulary string; the vocabulary strings themselves when `raw`.

        >>> t = Tokens(("ĠParis", "Ċ"), (0, 1), ((0, 6), (6, 7)), "t", texts=(" Paris", "\\n"))
        >>> t.drawn(), dataclasses.replace(t, raw=True).drawn()
        (('␣Paris', '↵'), ('ĠParis', 'Ċ'))
        """
        if self.raw:
            return self.strings
        return text_labels(self.strings, self.text_of(), self.special or (False,) * len(self.strings))

    def generation(self) -> dict | None:
        """`{"ids": [...], "text": "...", "decoding": "..."}` of the tokens a model wrote, or None."""
        if self.generated is None:
            return None
        return {"ids": list(self.ids[self.generated :]), "text": self.generated_text, "decoding": self.generated_by}

    def __len__(self) -> int:
        return len(self.strings)

    def prompt(self) -> Tokens:
        """The tokens before the first a model wrote (--generate), as the text alone has them; all when none.

        >>> Tokens(("a", "b", "c"), (0, 1, 2), ((0, 1), (1, 1), (1, 1)), "t", generated=1).prompt().strings
        ('a',)
        """
        n = self.generated
        if n is None:
            return self
        return dataclasses.replace(
            self,
            strings=self.strings[:n],
            ids=self.ids[:n],
            offsets=self.offsets[:n],
            special=self.special[:n],
            texts=self.texts[:n],
            segments=self.segments[:n],
            generated=None,
            generated_text="",
            generated_by="",
        )

    def resolve(self, spec: str, option: str = "--query") -> tuple[int, str | None]:
        """The index an option naming one of these tokens means, and a note when the name was ambiguous: an
        index (negative counts from the end), else a token by its vocabulary string (`ĠFrance`), its text
        (` France`) or its text without the whitespace around it (`France`), the first way that matches
        anything; of several equal tokens, the first, and the note names the others. ConfigError when none.

        >>> t = Tokens(("The", "ĠFrance", "Ġis", "ĠFrance"), (0, 1, 2, 1), ((0, 3),) * 4, "t",
        ...            texts=("The", " France", " is", " France"))
        >>> t.resolve("France"), t.resolve("ĠFrance")[0], t.resolve(" is"), t.resolve("-1")
        ((1, "--query 'France' is token 1 (␣France); so is token 3"), 1, (2, None), (3, None))
        """
        n = len(self)
        try:
            i = int(spec)
        except ValueError:
            pass
        else:
            if not -n <= i < n:
                raise ConfigError(f"{option} {i} is out of range: the text has {n} tokens, 0..{n - 1}")
            return i % n, None
        texts = self.text_of()
        for same in (
            lambda k: self.strings[k] == spec,
            lambda k: texts[k] == spec,
            lambda k: bool(spec.strip()) and texts[k].strip() == spec.strip(),
        ):
            found = [k for k in range(n) if same(k)]
            if found:
                others = found[1:]
                note = None
                if others:
                    more = ", ".join(map(str, others[:5])) + (" …" if len(others) > 5 else "")
                    note = (
                        f"{option} {spec!r} is token {found[0]} ({self.drawn()[found[0]]}); so is token"
                        f"{'s' if len(others) > 1 else ''} {more}"
                    )
                return found[0], note
        drawn = self.drawn()
        raise ConfigError(
            f"{option} {spec!r}: no such token; the tokens are "
            + " ".join(f"{j}:{t}" for j, t in enumerate(drawn[:20]))
            + (" …" if n > 20 else "")
        )

    def find(self, spec: str, option: str = "--query") -> int:
        """`resolve`'s index alone."""
        return self.resolve(spec, option)[0]

    def labels(self) -> list[str]:
        """The tokens as a table labels them (`drawn()`): ◇ before a special token, ‖ where a pair's second
        segment starts, › before each token a model wrote (--generate).

        >>> marks = dict(special=(True, False, True, False), second=3)
        >>> Tokens(("[CLS]", "a", "[SEP]", "b"), (0, 1, 2, 3), ((0, 0),) * 4, "t", **marks).labels()
        ['◇[CLS]', 'a', '◇[SEP]', '‖b']
        >>> Tokens(("a", "b", "c"), (0, 1, 2), ((0, 1), (1, 1), (1, 1)), "t", generated=1).labels()
        ['a', '›b', '›c']
        """
        special = self.special or (False,) * len(self.strings)
        wrote = len(self.strings) if self.generated is None else self.generated
        return [
            (SECOND_MARK if i == self.second else "")
            + (GENERATED_MARK if i >= wrote else "")
            + (SPECIAL_MARK if s else "")
            + t
            for i, (t, s) in enumerate(zip(self.drawn(), special))
        ]


@dataclass(frozen=True)
class Tokenizer:
    """A registry entry: a name, one line of description, and `encode(text) -> Tokens`."""

    name: str
    summary: str
    encode: Callable[[str], Tokens]


def char(text: str) -> Tokens:
    """One token per Unicode code point, spaces included; the id is the code point."""
    return Tokens(
        strings=tuple(text),
        ids=tuple(ord(c) for c in text),
        offsets=tuple((i, i + 1) for i in range(len(text))),
        tokenizer="char",
    )


def word(text: str) -> Tokens:
    r"""Runs of word characters, and each run of punctuation, as tokens (`\w+|[^\w\s]+`).

    Ids number the distinct words of this text in order of first appearance.
    """
    matches = list(WORD_RE.finditer(text))
    vocab: dict[str, int] = {}
    ids = tuple(vocab.setdefault(m.group(), len(vocab)) for m in matches)
    return Tokens(
        strings=tuple(m.group() for m in matches),
        ids=ids,
        offsets=tuple(m.span() for m in matches),
        tokenizer="word",
    )


MAX_TOKENIZER_BYTES = 256 * 2**20  # the largest tokenizer.json files of real models are tens of MB


@functools.lru_cache(maxsize=8)
def _load_hf(path: str):
    """Load a tokenizer.json with the `tokenizers` library, padding off.

    Read by attn first, at most MAX_TOKENIZER_BYTES and strictly UTF-8, so that /dev/zero, a FIFO or a
    huge file is an error and not an endless read.
    """
    if not os.path.exists(path):
        raise DataError(f"tokenizer file not found: {path}")
    if os.path.isdir(path):
        raise DataError(f"tokenizer path is a directory, expected a tokenizer.json file: {path}")
    try:
        with open(path, "rb") as f:
            data = read_bounded(f, f"tokenizer {path}", "is it a tokenizer.json?", MAX_TOKENIZER_BYTES)
    except OSError as e:
        raise DataError(f"cannot read tokenizer {path}: {e.strerror or e}") from None
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise DataError(f"not a valid tokenizer.json: {path}: nests {depth:,} levels deep, more than {MAX_JSON_DEPTH}")
    text = decode(data, f"tokenizer {path}")
    from tokenizers import Tokenizer as HFTokenizer  # late: start-up (tokenizers only for a tokenizer.json)

    try:
        tok = HFTokenizer.from_str(text)
    except Exception as e:  # the library raises a bare Exception on bad JSON or an unknown model
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DataError(f"not a valid tokenizer.json: {path}: {reason}") from None
    tok.no_padding()  # one text is never padded
    return tok


def _encode(tok, label: str, text: str) -> Tokens:
    """`text` through a loaded `tokenizers` Tokenizer, as Tokens."""
    try:
        enc = tok.encode(text)
    except Exception as e:  # e.g. a WordLevel or WordPiece model with no [UNK] meets an unknown word
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DataError(f"tokenizer {label} cannot encode this text: {reason}") from None
    warnings: tuple[str, ...] = ()
    if enc.overflowing:
        dropped = sum(len(o.ids) for o in enc.overflowing)
        warnings = (f"tokenizer {label} truncates its input: kept {len(enc.ids)} tokens, dropped {dropped}",)
    special = tuple(bool(m) for m in enc.special_tokens_mask)
    return Tokens(
        strings=tuple(enc.tokens),
        ids=tuple(enc.ids),
        offsets=tuple(tuple(o) for o in enc.offsets),
        tokenizer=label,
        vocab_size=tok.get_vocab_size(with_added_tokens=True),
        warnings=warnings,
        unk_token=getattr(tok.model, "unk_token", None),
        texts=decoded_texts(enc.ids, special, tok.decode),
    )


def _encode_file(path: str, label: str, text: str) -> dict:
    """What the contained child does: load the tokenizer.json, encode `text`, answer with the Tokens' fields."""
    return dataclasses.asdict(_encode(_load_hf(path), label, text))


def _from_record(record: dict) -> Tokens:
    return Tokens(
        strings=tuple(record["strings"]),
        ids=tuple(record["ids"]),
        offsets=tuple((int(a), int(b)) for a, b in record["offsets"]),
        tokenizer=record["tokenizer"],
        vocab_size=record["vocab_size"],
        warnings=tuple(record["warnings"]),
        unk_token=record["unk_token"],
        texts=tuple(record["texts"]),
    )


def from_tokenizer_json(path: str, name: str | None = None, trusted: bool = False) -> Tokenizer:
    """A Tokenizer for a Hugging Face tokenizer.json, used as its file configures it.

    A file from the user is a program for Rust code (normalizers, regexes) that could panic, abort, loop or
    blow up the text: it is loaded and run in a contained child process (`attncli.pipeline.contain`), with
    ATTN_TOKENIZER_SECONDS and ATTN_MAX_MEMORY as its limits. The `trusted` one shipped in the package
    runs in-process.
    """
    label = name or path
    if trusted:
        tok = _load_hf(path)
        return Tokenizer(label, f"Hugging Face tokenizer from {path}", lambda text: _encode(tok, label, text))
    return _contained_tokenizer(path, label)


@functools.lru_cache(maxsize=8)
def _contained_tokenizer(path: str, label: str) -> Tokenizer:
    """An untrusted tokenizer.json, loaded once in a contained child to check it (a bad file fails here, before
    any text is read), then loaded and run there again for each text."""
    from attncli.pipeline.contain import contained  # late: start-up (a tokenizer file only)

    def run(fn: Callable, *args: object):
        return contained(fn, *args, what=f"tokenizer {label}", memory=max_bytes_from(os.environ))

    run(_check_file, path)
    return Tokenizer(
        label, f"Hugging Face tokenizer from {path}", lambda text: _from_record(run(_encode_file, path, label, text))
    )


def _check_file(path: str) -> int:
    """What the contained child does to check a tokenizer.json: load it; its vocabulary size."""
    return _load_hf(path).get_vocab_size(with_added_tokens=True)


def shipped_bpe_path() -> str:
    """Path of the byte-level BPE shipped in the package (see tools/train_bpe.py)."""
    from importlib import resources  # late: start-up (importlib.resources, and tempfile through it: -t bpe only)

    return str(resources.files("attncli") / "data" / "tokenizer.json")


def _bpe(text: str) -> Tokens:
    return from_tokenizer_json(shipped_bpe_path(), name="bpe", trusted=True).encode(text)


TOKENIZERS: dict[str, Tokenizer] = {
    "char": Tokenizer("char", "one token per character, spaces included", char),
    "word": Tokenizer("word", r"words, and runs of punctuation (\w+|[^\w\s]+)", word),
    "bpe": Tokenizer("bpe", "byte-level BPE trained on sample_texts/bpe_corpus.txt", _bpe),
}


def get_tokenizer(spec: str) -> Tokenizer:
    """A registered name (char, word, bpe) or a path to a tokenizer.json."""
    if spec in TOKENIZERS:
        return TOKENIZERS[spec]
    if spec.lower().endswith(".gguf") or os.path.isfile(os.path.join(spec, "config.json")):
        raise ConfigError(
            f"{spec} is a model, not a tokenizer.json: give it with --model, which reads its own tokenizer "
            "(attn compare TEXT --model A --model B puts models' tokenizers side by side)"
        )
    looks_like_path = os.sep in spec or spec.endswith(".json") or os.path.exists(spec)
    if not looks_like_path:
        names = ", ".join(TOKENIZERS)
        raise ConfigError(f"unknown tokenizer {spec!r}: choose {names} or a path to a tokenizer.json")
    return from_tokenizer_json(spec)


class TooManyTokens(DataError):
    """The text has more tokens than allowed: `count` exactly, or `count` in the first `scanned` characters
    (then `about` extrapolates to the whole text)."""

    def __init__(self, tokenizer: str, count: int, max_tokens: int, scanned: int, length: int):
        self.tokenizer, self.count, self.max_tokens, self.scanned, self.length = (
            tokenizer,
            count,
            max_tokens,
            scanned,
            length,
        )
        self.exact = scanned >= length
        super().__init__(f"the text has {self.describe()}, more than --max-tokens {max_tokens:,}")  # (see limits)

    @property
    def about(self) -> int:
        """The count, or its extrapolation from the prefix to the whole text."""
        return self.count if self.exact else max(self.count, round(self.count * self.length / max(1, self.scanned)))

    def describe(self) -> str:
        """'5,000 char tokens', or 'about 2,000,000 word tokens (4,097 in its first 19,000 characters)'."""
        label = self.tokenizer if self.tokenizer in TOKENIZERS else os.path.basename(self.tokenizer)
        if self.exact:
            return f"{self.count:,} {label} tokens"
        return (
            f"about {self.about:,} {label} tokens ({self.count:,} in its first {self.scanned:,} of "
            f"{self.length:,} characters)"
        )


PROBE_CHARS_PER_TOKEN = 8  # a tokenizer.json is first run on a prefix of 8 characters per allowed token


def _cut(text: str, size: int) -> str:
    """A prefix of about `size` characters that ends where a word ends (before a space), so that it
    tokenizes as the start of the whole text does; a hard cut when there is no space in its second half."""
    space = max(text.rfind(" ", size // 2, size), text.rfind("\n", size // 2, size))
    return text[:space] if space > 0 else text[:size]


def check_count(text: str, spec: str, max_tokens: int) -> None:
    """Refuse a text with more than `max_tokens` tokens before tokenizing all of it: TooManyTokens.

    char: the length is the count. word: matches are counted and the scan stops at max_tokens + 1.
    bpe or a tokenizer.json (which may even make more tokens than characters: byte-level pieces of
    one emoji, [CLS] and [SEP]): a prefix cut at a space, of PROBE_CHARS_PER_TOKEN characters per
    allowed token and four times longer each round, is tokenized; too many tokens in a prefix means
    too many in the text. The exact count is checked again after tokenizing (`tokenize`).
    """
    if spec == "char":
        if len(text) > max_tokens:
            raise TooManyTokens(spec, len(text), max_tokens, len(text), len(text))
        return
    if spec == "word":
        if len(text) <= max_tokens:  # every word token takes at least one character
            return
        for i, m in enumerate(WORD_RE.finditer(text)):
            if i == max_tokens:
                raise TooManyTokens(spec, i + 1, max_tokens, m.end(), len(text))
        return
    encode = get_tokenizer(spec).encode
    size = PROBE_CHARS_PER_TOKEN * (max_tokens + 1)
    while size < len(text):
        prefix = _cut(text, size)
        count = len(encode(prefix))
        if count > max_tokens:
            raise TooManyTokens(spec, count, max_tokens, len(prefix), len(text))
        size *= 4


PROBE_CHARS = 65_536  # a tokenizer.json's count is extrapolated from a prefix this long


def expected_tokens(text: str, spec: str) -> int:
    """About how many tokens `text` makes, found without making them (so that a run is priced first):
    char and word count exactly (a regex scan keeps nothing), a tokenizer.json is run on a prefix of
    PROBE_CHARS characters and its count scaled to the whole text.

    >>> expected_tokens("time flies", "char"), expected_tokens("time flies, like an arrow", "word")
    (10, 6)
    """
    if spec == "char":
        return len(text)
    if spec == "word":
        return sum(1 for _ in WORD_RE.finditer(text))
    if len(text) <= PROBE_CHARS:
        return 0  # short: tokenizing it costs less than guessing
    prefix = _cut(text, PROBE_CHARS)
    return len(get_tokenizer(spec).encode(prefix)) * len(text) // max(1, len(prefix))


def tokenize(text: str, spec: str, max_tokens: int | None = None) -> Tokens:
    """Tokenize `text` with the tokenizer named by `spec`; at least one token or DataError, and at most
    `max_tokens` or TooManyTokens (checked cheaply before tokenizing, see `check_count`, and exactly after)."""
    if max_tokens is not None:
        check_count(text, spec, max_tokens)
    tokens = get_tokenizer(spec).encode(text)
    if len(tokens) == 0:
        raise DataError(f"the {spec} tokenizer produced no tokens for {text[:40]!r}")
    if max_tokens is not None and len(tokens) > max_tokens:
        raise TooManyTokens(spec, len(tokens), max_tokens, len(text), len(text))
    return tokens
