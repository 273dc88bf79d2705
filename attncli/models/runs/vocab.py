"""An option that names a token of a model's vocabulary (`--target`, `--contrast`): one resolver for all.

A user writes a token as its text (`Paris`, ` Paris`) or as the vocabulary writes it (`ĠParis`, `▁Paris`);
`vocab_token` finds every token the words could mean, in this order: the vocabulary form exactly, the text
as typed when it is one token, then the text with its leading space added or removed when that is one token.
The first is chosen; when words typed without a leading space name more than one token (`Paris` and ` Paris`),
`note` says which was chosen and what else they could mean (one line, printed by the CLI). `spellings` gives
the tokens of one text with and without its leading space, so that a command can say when the model's own next
token is another spelling of the one watched.
"""

from __future__ import annotations

from dataclasses import dataclass

from attncli.errors import ConfigError
from attncli.models.files.hparams import ModelError
from attncli.models.network.model import Model
from attncli.models.runs.tokens import encode
from attncli.pipeline.tokentext import REPLACEMENT

MAX_TOKEN_CHARS = 256  # one token: the longest of a real vocabulary is a few dozen characters


def check_token(given: str, option: str = "--target") -> None:
    """An option naming one token, as one token can be, before any text is read: ConfigError when it is empty or
    longer than a token (one the model does not have is refused by `vocab_token`, exit 2 too)."""
    if not given:
        raise ConfigError(f"{option} is empty: give one token, as its text (' Paris') or as the vocabulary writes it")
    if len(given) > MAX_TOKEN_CHARS:
        raise ConfigError(
            f"{option} is {len(given):,} characters long, and one token is at most {MAX_TOKEN_CHARS}: give one "
            "token, as its text (' Paris') or as the vocabulary writes it (attn tokens shows them)"
        )


@dataclass(frozen=True)
class VocabToken:
    """A vocabulary token an option named: its id, its text (decoded), and a note when the words were ambiguous."""

    id: int
    text: str
    note: str | None = None


def token_text(model: Model, token: int) -> str:
    """The text a token id decodes to alone (`ĠParis` -> ' Paris', `Ċ` -> '\\n'); empty for a token that only
    begins a UTF-8 character (its decoder writes U+FFFD: attncli.pipeline.tokentext draws its bytes)."""
    text = model.tokenizer.decode([token], skip_special_tokens=False)
    return "" if text.endswith(REPLACEMENT) else text


def token_record(model: Model, token: int, given: str | None) -> dict:
    """A token named by an option (--target, --contrast) in JSON: its id, its vocabulary form, its text (what a
    screen draws, attncli.pipeline.tokentext's `labels`), and the words that named it."""
    return {"id": token, "token": model.tokenizer.id_to_token(token), "text": token_text(model, token), "given": given}


def _one_token(model: Model, text: str) -> int | None:
    """The id of `text` when the tokenizer cuts it into exactly one token (special tokens aside), else None."""
    if not text:
        return None
    try:
        t = encode(model, text, what="token")
    except ModelError:
        return None
    cut = [i for i, special in zip(t.ids, t.special) if not special]
    return cut[0] if len(cut) == 1 else None


def _candidates(model: Model, given: str) -> list[int]:
    """Every token `given` could mean, in the order of preference, each once (none for an empty one)."""
    if not given:
        return []
    found: list[int | None] = [model.tokenizer.token_to_id(given), _one_token(model, given)]
    stripped = given.lstrip()
    found.append(_one_token(model, stripped) if stripped != given else _one_token(model, " " + given))
    out: list[int] = []
    for i in found:
        if i is not None and 0 <= i < model.vocab_size and i not in out:
            out.append(int(i))
    return out


def vocab_token(model: Model, given: str, option: str = "--target") -> VocabToken:
    """The token `given` names (see the module's docstring); ConfigError when it names none (a token the model
    does not have, as a head it does not have: the command line's mistake)."""
    check_token(given, option)
    found = _candidates(model, given)
    if not found:
        cut = [] if not given else [s for s, sp in zip(*_pieces(model, given)) if not sp]
        raise ConfigError(
            f"{option} {given!r} is {len(cut)} tokens for {model.name} ({' '.join(cut)}): give one token, as its "
            "text (' Paris') or as the vocabulary writes it (attn tokens shows them)"
        )
    texts = [token_text(model, i) for i in found]
    note = None
    if len(found) > 1 and given == given.lstrip():  # typed with its space, the words were not ambiguous
        others = ", ".join(f"{t!r} (id {i})" for i, t in zip(found[1:], texts[1:]))
        note = f"{option} {given!r} is the token {texts[0]!r} (id {found[0]}); it could also mean {others}"
    return VocabToken(found[0], texts[0], note)


def _pieces(model: Model, text: str) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """The vocabulary strings of `text` and which are special (for the message of a text of several tokens)."""
    t = encode(model, text, what="token")
    return t.strings, t.special


def spellings(model: Model, token: int) -> list[int]:
    """The tokens whose text is this token's with or without its leading whitespace (itself first).

    `Paris` and `ĠParis` are spellings of one word; what a model writes next after "is" is the spaced one."""
    return _candidates(model, token_text(model, token))
