"""A text (or a sentence pair) as a model's own tokenizer cuts it, checked before anything runs: some tokens, no
more than the model's positions (a long text counted on a prefix first), ids inside the embedding table, the
run priced against the memory budget (folder.py's `check_run`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from attncli.errors import ConfigError
from attncli.models.files.folder import check_run
from attncli.models.files.hparams import ModelError
from attncli.models.network.model import Model
from attncli.models.text.chat import Chat, ChatTemplate, render, segments


@dataclass(frozen=True)
class ModelTokens:
    """A text (or a pair) as the model's tokenizer cuts it: parallel tuples, special tokens included."""

    strings: tuple[str, ...]  # the tokenizer's own strings: "[CLS]", "##s", "Ġtime"
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]  # character offsets into the text (or the pair's second text)
    types: tuple[int, ...]  # token type ids: 0, and 1 for a pair's second segment where the model has types
    special: tuple[bool, ...]  # added by the tokenizer ([CLS], [SEP], <s>, BOS), not cut from the text
    second: int | None = None  # a pair: the index of the second segment's first token
    segments: tuple[str, ...] = ()  # --chat: each token's part of the chat (chat.py's SEGMENTS); () without

    def __len__(self) -> int:
        return len(self.ids)


PROBE_CHARS_PER_POSITION = 16  # a long text is first tokenized as a prefix of 16 characters per position


def _answer(model: Model, enc: dict | str) -> dict:
    """One answer of the contained tokenizer: the encoding, or ModelError with the tokenizer's reason."""
    if isinstance(enc, str):
        raise ModelError(f"the tokenizer of {model.name} cannot encode this text: {enc}")
    return enc


def _encoded(model: Model, text: str, pair: str | None = None) -> dict:
    """`text` (and a second text `pair`, with the tokenizer's pair template) through the model's tokenizer, run
    contained: {"ids", "tokens", "offsets", "types", "special", "second"}."""
    return _answer(model, model.tokenizer.encode([text if pair is None else (text, pair)])[0])


def _counted(model: Model, text: str, what: str = "text") -> None:
    """A text longer than PROBE_CHARS_PER_POSITION characters per position is first counted on such a prefix
    (cut where a word ends): more tokens there than positions, and the rest is never tokenized."""
    probe = PROBE_CHARS_PER_POSITION * model.max_positions
    if len(text) > probe:
        space = text.rfind(" ", probe // 2, probe)
        prefix = text[: space if space > 0 else probe]
        count = len(_encoded(model, prefix)["ids"])
        if count > model.max_positions + 1:  # + 1: a word cut in two may make one token more
            raise ModelError(
                f"the {what} is more than {model.max_positions} tokens long (its first {len(prefix):,} of "
                f"{len(text):,} characters make {count}), but {model.name} takes at most {model.max_positions} "
                f"({model.hp['positions_key']})"
            )


def _tokens(
    model: Model, enc: dict, pair: str | None = None, what: str = "text", upto: int | None = None
) -> ModelTokens:
    """An encoding checked: some tokens, no more than the positions, ids inside the table, the run priced: a pass
    through layer `upto` (default: every layer) at what it reads, the layers 0..upto (`Weights.least(upto)`)."""
    n = len(enc["ids"])
    if n == 0:
        raise ModelError(f"the {what} gives no tokens for {model.name}")
    if n > model.max_positions:
        what = what if pair is None else "pair"
        raise ModelError(
            f"the {what} is {n} tokens long, but {model.name} takes at most {model.max_positions} "
            f"({model.hp['positions_key']})"
        )
    bad = [i for i in enc["ids"] if i >= model.vocab_size]
    if bad:
        raise ModelError(f"token id {bad[0]} is outside the embedding table of {model.name} ({model.vocab_size} rows)")
    second = None
    if pair is not None:
        second = enc["second"]
        if second is None:
            raise ModelError(f"the context gives no tokens for {model.name}")
    layers = model.n_layer if upto is None else upto + 1
    model.weights.fit(check_run(model.weights.least(upto), layers, model.n_head, model.d_model, n, model.name))
    return ModelTokens(
        tuple(enc["tokens"]),
        tuple(enc["ids"]),
        tuple((int(a), int(b)) for a, b in enc["offsets"]),
        tuple(enc["types"]),
        tuple(bool(m) for m in enc["special"]),
        second,
    )


def encode(
    model: Model, text: str, pair: str | None = None, what: str = "text", upto: int | None = None
) -> ModelTokens:
    """Tokenize `text` (and a second text `pair`) with the model's tokenizer (contained); an error if it gives
    no tokens or more than the positions. A long text is counted on a prefix first (`_counted`), and the run is
    priced (`check_run`) before the forward pass allocates. `what` names `text` in the messages ("context": an
    encoder–decoder's source); `upto`: the run stops at that layer (`attn show --layer L`), priced as far."""
    _counted(model, text, what)
    if pair is not None:
        _counted(model, pair, "context")
    return _tokens(model, _encoded(model, text, pair), pair, what, upto)


def encode_many(model: Model, texts: list[str]) -> list[ModelTokens | ModelError]:
    """`encode` for many texts, the short ones in one contained child (a corpus chunk; a long one is counted
    on its prefix first, alone): each its tokens or its ModelError."""
    probe = PROBE_CHARS_PER_POSITION * model.max_positions
    short: list[str | tuple[str, str]] = [t for t in texts if len(t) <= probe]
    answers = iter(model.tokenizer.encode(short) if short else [])
    out: list[ModelTokens | ModelError] = []
    for text in texts:
        try:
            out.append(_tokens(model, _answer(model, next(answers))) if len(text) <= probe else encode(model, text))
        except ModelError as e:
            out.append(e)
    return out


def _template(model: Model) -> ChatTemplate:
    """The model's chat template; ConfigError (exit 2: an option the model cannot take) when it has none."""
    if model.chat_template is None:
        raise ConfigError(
            f"{model.name} has no chat template (GGUF tokenizer.chat_template, tokenizer_config.json chat_template "
            "or chat_template.jinja): drop --chat"
        )
    return model.chat_template


def with_chat(model: Model, system: str | None) -> Model:
    """`model` reading each text as the user's message of a chat in its template (`system`: the system
    message), checked first: a model with no template is a ConfigError (an encoder–decoder, whose TEXT is a target,
    not a prompt, route.with_chat refuses before)."""
    _template(model)
    return dataclasses.replace(model, chat=Chat(system))


def encode_chat(model: Model, text: str, chat: Chat) -> tuple[ModelTokens, str]:
    """`text` as the user's message of a chat in the model's own template (chat.py), ending where the assistant's
    answer begins: its tokens, each with its segment, and the rendered chat their offsets point into. The special
    tokens the template writes are encoded as such; the tokenizer adds none around it (as transformers'
    apply_chat_template(tokenize=True))."""
    messages = chat.messages(text)
    rendered = render(_template(model), messages)
    _counted(model, rendered, "chat")
    t = _tokens(model, _answer(model, model.tokenizer.encode([rendered], ends=False)[0]), what="chat")
    return dataclasses.replace(t, segments=segments(rendered, messages, t.offsets)), rendered
