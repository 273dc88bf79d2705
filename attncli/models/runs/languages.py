"""The target language of a multilingual translation model, which its decoder cannot guess.

- Multilingual Marian (opus-mt-en-ROMANCE and the like) writes the language whose token (`>>fra<<`) starts the
  source: `check_language` refuses a source without one, naming the tokens there are.
- mBART writes the language whose code (`fr_XX`) starts the decoder: the user gives it first in the target (and
  may give the source's first in the source), and `with_language` puts it where transformers' tokenizer does
  given `tgt_lang` / `src_lang`, or refuses a target without one, naming the codes.
"""

from __future__ import annotations

import re
from dataclasses import replace

from attncli.models.files.hparams import ModelError
from attncli.models.network.model import Model
from attncli.models.runs.tokens import ModelTokens

LANGUAGE_TOKEN = (">>", "<<")  # Marian's multilingual target-language token, >>fra<<, first in the source


def check_language(model: Model, source: str) -> None:
    """A multilingual Marian model needs the target language's token (>>fra<<) first in the source."""
    start, end = LANGUAGE_TOKEN
    vocab = model.tokenizer.get_vocab(with_added_tokens=True)
    languages = sorted(t for t in vocab if t.startswith(start) and t.endswith(end) and len(t) > 4)
    if languages and not source.lstrip().startswith(start):
        shown_languages = " ".join(languages[:6]) + (" ..." if len(languages) > 6 else "")
        raise ModelError(
            f"{model.name} is multilingual: its decoder writes the language whose token starts the source, one of "
            f"{shown_languages} ({len(languages)}); put one first: --context '{languages[0]} {source.strip()}'"
        )


def language_codes(model: Model) -> list[str]:
    """mBART's language codes (en_XX, fr_XX, ...): the vocabulary's tokens of its family's `language_code` form."""
    pattern = model.hp.get("language_code")
    if pattern is None:
        return []
    return sorted(t for t in model.tokenizer.get_vocab(with_added_tokens=True) if re.fullmatch(pattern, t))


def with_language(model: Model, text: str, t: ModelTokens, target: bool) -> ModelTokens:
    """mBART: a language code first in `text` takes the place of the one its tokenizer adds (the source language
    it was saved with), as transformers' tokenizer does given src_lang / tgt_lang. A target must give one: the
    decoder starts from it."""
    codes = language_codes(model)
    if not codes:
        return t
    given = next((i for i, special in enumerate(t.special) if not special), None)  # the first token of the text
    slot = next((i for i, (s, special) in enumerate(zip(t.strings, t.special)) if special and s in codes), None)
    if given is None or t.strings[given] not in codes or slot is None:
        if not target:
            return t
        shown_codes = " ".join(codes[:6]) + (" ..." if len(codes) > 6 else "")
        words = text.split()
        code = next((w for w in words if w in codes), codes[0])  # a code given later in the text moves first
        rest = " ".join(words[: words.index(code)] + words[words.index(code) + 1 :]) if code in words else text.strip()
        raise ModelError(
            f"{model.name} is multilingual: its decoder starts from the target language's code, one of "
            f"{shown_codes} ({len(codes)}); put one first in the target: '{code} {rest}'"
        )
    keep = [i for i in range(len(t)) if i != given]
    at = keep.index(slot)

    def moved(values: tuple, value) -> tuple:  # the code given in the text, in the tokenizer's slot
        out = [values[i] for i in keep]
        out[at] = value
        return tuple(out)

    return replace(
        t,
        strings=moved(t.strings, t.strings[given]),
        ids=moved(t.ids, t.ids[given]),
        offsets=moved(t.offsets, t.offsets[given]),
        types=moved(t.types, t.types[given]),
        special=moved(t.special, True),
    )
