"""Tokens as text: what a screen draws is what the model read (` Paris`, drawn `␣Paris`), never the vocabulary's
code (`ĠParis`, `Ċ`, `Ã¼`); each token's text is what its id adds to the decoded text, so the texts join to it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attncli.pipeline.tokenize import Tokens, tokenize
from attncli.pipeline.tokentext import BYTE_LEVEL, labels, legend, piece_bytes, shown, texts


def test_the_byte_level_table_is_a_bijection_of_the_256_bytes():
    assert sorted(BYTE_LEVEL.values()) == list(range(256)) and len(BYTE_LEVEL) == 256
    assert BYTE_LEVEL["Ġ"] == ord(" ") and BYTE_LEVEL["Ċ"] == ord("\n") and BYTE_LEVEL["ĉ"] == ord("\t")


@given(st.text(max_size=40))
def test_byte_level_strings_map_back_to_their_bytes(text):
    code = {b: c for c, b in BYTE_LEVEL.items()}
    data = text.encode("utf-8")
    assert piece_bytes("".join(code[b] for b in data) or "<0x00>") == (data or b"\x00")


def test_the_shipped_bpe_is_drawn_as_text_and_its_texts_join_to_the_text():
    """A user reading `Ġflies` takes the G for part of the word: the table draws `␣flies`."""
    text = "time flies\nlike Zürich's arrow"
    t = tokenize(text, "bpe")
    assert "".join(t.texts) == text
    assert not any(c in label for label in t.labels() for c in "ĠĊÃ")
    assert "␣flies" in t.labels() and "↵" in "".join(t.labels())


def test_a_character_split_between_tokens_is_drawn_as_its_bytes():
    """A token that only begins a UTF-8 character has no text of its own: its bytes are drawn, and the token
    that completes the character carries it."""
    pieces = {1: b"Z", 2: b"\xc3", 3: b"\xbcrich"}

    def decode(ids):
        return b"".join(pieces[i] for i in ids).decode("utf-8", "replace")

    found = texts([1, 2, 3], [False] * 3, decode)
    assert found == ("Z", "", "ürich") and "".join(found) == "Zürich"
    assert labels(["Z", "Ã", "¼rich"], found, [False] * 3) == ("Z", "‹c3›", "ürich")
    assert legend(["Z", "‹c3›"]) == "tokens as text: ‹e2 80› the bytes of a character the next token completes"


def test_special_tokens_keep_their_vocabulary_string_and_add_no_text():
    found = texts([0, 1, 2], [True, False, True], lambda ids: "x" * len(ids))
    assert found == ("", "x", "")
    assert labels(["[CLS]", "x", "[SEP]"], found, [True, False, True]) == ("[CLS]", "x", "[SEP]")


def test_a_decoder_that_rewrites_earlier_text_still_joins_to_its_decoded_text():
    """BERT's clean-up joins "don ' t" into "don't": a later prefix is no extension of an earlier one."""
    words = {1: "don", 2: "'", 3: "t", 4: "go"}

    def decode(ids):
        return " ".join(words[i] for i in ids).replace(" ' ", "'")

    found = texts([1, 2, 3, 4], [False] * 4, decode)
    assert "".join(found) == decode([1, 2, 3, 4])


@pytest.mark.parametrize(("text", "drawn"), [(" Paris", "␣Paris"), ("\n", "↵"), ("\t", "⇥"), ("a\r", "a␍")])
def test_whitespace_is_drawn_with_one_mark_each(text, drawn):
    assert shown(text) == drawn


def test_query_accepts_the_text_with_or_without_its_space_the_vocabulary_form_or_an_index():
    t = tokenize("time flies like an arrow", "bpe")
    flies = t.labels().index("␣flies")
    for spec in ("flies", " flies", t.strings[flies], str(flies), str(flies - len(t))):
        assert t.resolve(spec) == (flies, None), spec


def test_a_repeated_token_is_its_first_and_the_note_names_the_others():
    t = tokenize("a the cat saw the dog", "bpe")
    at, note = t.resolve("the")
    assert at == 1 and note == f"--query 'the' is token 1 (␣the); so is token {t.labels().index('␣the', 2)}"


def test_raw_draws_the_vocabulary_strings():
    t = tokenize("time flies", "bpe")
    raw = Tokens(t.strings, t.ids, t.offsets, t.tokenizer, texts=t.texts, raw=True)
    assert raw.labels() == list(t.strings) and "Ġflies" in raw.labels()
