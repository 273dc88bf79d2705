"""The shipped BPE tokenizer: reproducible from the corpus, and well-behaved."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

_SPEC = importlib.util.spec_from_file_location(
    "train_bpe", Path(__file__).resolve().parents[2] / "tools" / "train_bpe.py"
)
train_bpe = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(train_bpe)

SHIPPED = train_bpe.DEFAULT_OUTPUT


@pytest.fixture(scope="module")
def tok():
    return tokenizers.Tokenizer.from_file(str(SHIPPED))


def test_retraining_reproduces_shipped_file_byte_for_byte():
    assert train_bpe.build() == SHIPPED.read_bytes(), (
        "attncli/data/tokenizer.json is stale: run python tools/train_bpe.py"
    )


def test_shipped_file_is_plain_text_with_trailing_newline():
    data = SHIPPED.read_bytes()
    assert data.endswith(b"}\n") and b"\r" not in data
    data.decode("utf-8")


def test_check_mode(tmp_path, capsys):
    assert train_bpe.main(["--check"]) == 0
    stale = tmp_path / "tokenizer.json"
    stale.write_bytes(SHIPPED.read_bytes() + b"\n")  # one byte more is stale
    assert train_bpe.main(["--check", "--output", str(stale)]) == 1
    assert "out of date" in capsys.readouterr().err
    missing = tmp_path / "nope.json"
    assert train_bpe.main(["--check", "--output", str(missing)]) == 1


def test_write_mode(tmp_path):
    out = tmp_path / "sub" / "tokenizer.json"
    assert train_bpe.main(["--output", str(out)]) == 0
    assert out.read_bytes() == SHIPPED.read_bytes()


def test_vocab_size_and_config(tok):
    assert tok.get_vocab_size() == train_bpe.DEFAULT_VOCAB_SIZE
    assert tok.padding is None and tok.truncation is None
    assert tok.token_to_id("<|endoftext|>") == 0


@pytest.mark.parametrize(
    "text, expected",
    [
        ("time flies like an arrow", ["time", "Ġflies", "Ġlike", "Ġan", "Ġarrow"]),
        ("fruit flies like a banana", ["fruit", "Ġflies", "Ġlike", "Ġa", "Ġbanana"]),
        ("the dog chased the cat", ["the", "Ġdog", "Ġchased", "Ġthe", "Ġcat"]),
    ],
)
def test_demo_sentences_are_whole_words(tok, text, expected):
    enc = tok.encode(text)
    assert enc.tokens == expected
    # Offsets point at the word itself, never at the space before it.
    for token, (start, end) in zip(enc.tokens, enc.offsets):
        assert text[start:end] == token.removeprefix("Ġ")


def test_time_flies_ids_and_offsets(tok):
    enc = tok.encode("time flies like an arrow")
    assert enc.ids == [858, 478, 431, 336, 461]
    assert enc.offsets == [(0, 4), (5, 10), (11, 15), (16, 18), (19, 24)]


def test_leading_space_is_trimmed_from_first_offset(tok):
    enc = tok.encode(" time flies")
    assert enc.tokens == ["Ġtime", "Ġflies"]
    assert enc.offsets == [(1, 5), (6, 11)]


@pytest.mark.parametrize(
    "text",
    [
        "Café naïve — 東京で時間が飛ぶ 🕰️➡️🏹 Zürich straße",
        "👩‍👩‍👧 family, 🇨🇭 flag, ½ ∑ ∞, tab\there, new\nline",
        "\x00\x1b[31m control \u202e bidi",
    ],
)
def test_no_unknown_tokens_and_lossless_decode(tok, text):
    enc = tok.encode(text)
    vocab = tok.get_vocab()
    assert enc.tokens and all(t in vocab for t in enc.tokens)
    assert None not in enc.ids and "<|endoftext|>" not in enc.tokens
    assert tok.decode(enc.ids) == text
    for start, end in enc.offsets:
        assert 0 <= start <= end <= len(text)


def test_multilingual_sample_line(tok):
    path = train_bpe.REPO_ROOT / "sample_texts" / "multilingual.txt"
    text = path.read_text(encoding="utf-8").rstrip("\n")
    enc = tok.encode(text)
    assert enc.tokens[:3] == ["C", "afÃ©", "ĠnaÃ¯ve"]
    assert "ĠZÃ¼rich" in enc.tokens
    assert tok.decode(enc.ids) == text


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_round_trips(tok, text):
    enc = tok.encode(text)
    assert tok.decode(enc.ids, skip_special_tokens=False) == text
