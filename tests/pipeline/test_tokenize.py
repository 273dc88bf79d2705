"""Tokenizers: strings, ids and offsets for char, word, the shipped BPE and any tokenizer.json."""

import pytest

from attncli.errors import ConfigError, DataError
from attncli.pipeline.tokenize import TOKENIZERS, char, get_tokenizer, tokenize, word
from tests.conftest import attn, refused

TEXT = "time flies like an arrow"


def test_char_is_every_code_point_spaces_included():
    t = char("a b😀")
    assert t.strings == ("a", " ", "b", "😀")
    assert t.ids == (97, 32, 98, 0x1F600)
    assert t.offsets == ((0, 1), (1, 2), (2, 3), (3, 4))


def test_word_splits_punctuation_runs():
    t = word("Don't panic... ok?")
    assert t.strings == ("Don", "'", "t", "panic", "...", "ok", "?")
    assert word("the dog chased the cat").ids == (0, 1, 2, 0, 3)


@pytest.mark.parametrize("name", list(TOKENIZERS))
def test_offsets_point_back_into_the_text(name):
    t = tokenize(TEXT, name)
    for s, (start, end) in zip(t.strings, t.offsets):
        assert TEXT[start:end] == s.replace("Ġ", " ").strip() or TEXT[start:end] == s


def test_shipped_bpe_keeps_the_demo_words_whole():
    t = tokenize(TEXT, "bpe")
    assert t.strings == ("time", "Ġflies", "Ġlike", "Ġan", "Ġarrow")
    assert t.vocab_size == 2000
    assert t.offsets == ((0, 4), (5, 10), (11, 15), (16, 18), (19, 24))


def _wordpiece_file(path, truncate=None):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {
        "[PAD]": 0,
        "[UNK]": 1,
        "[CLS]": 2,
        "[SEP]": 3,
        "time": 4,
        "flies": 5,
        "like": 6,
        "an": 7,
        "arr": 8,
        "##ow": 9,
    }
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.enable_padding(length=32)  # must be switched off: one text is never padded
    if truncate:
        tok.enable_truncation(max_length=truncate)
    tok.save(str(path))
    return str(path)


def test_a_bert_wordpiece_file_adds_cls_and_sep(tmp_path):
    t = tokenize("Time flies like an arrow", _wordpiece_file(tmp_path / "tokenizer.json"))
    assert t.strings == ("[CLS]", "time", "flies", "like", "an", "arr", "##ow", "[SEP]")
    assert t.ids == (2, 4, 5, 6, 7, 8, 9, 3)
    assert t.offsets[5:7] == ((19, 22), (22, 24))
    assert t.warnings == ()


def test_a_truncating_tokenizer_is_announced(tmp_path):
    t = tokenize(TEXT, _wordpiece_file(tmp_path / "tokenizer.json", truncate=4))
    assert len(t) == 4
    assert "truncates" in t.warnings[0] and "dropped" in t.warnings[0]


def test_a_unigram_file_works(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(
        models.Unigram(
            [
                ("<unk>", 0.0),
                ("▁time", -1.0),
                ("▁flies", -1.0),
                ("▁", -2.0),
                ("t", -3.0),
                ("i", -3.0),
                ("m", -3.0),
                ("e", -3.0),
            ],
            unk_id=0,
        )
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.save(str(tmp_path / "u.json"))
    assert tokenize("time flies", str(tmp_path / "u.json")).strings == ("▁time", "▁flies")


def test_unknown_name_missing_file_and_corrupt_file(tmp_path):
    with pytest.raises(ConfigError, match="unknown tokenizer 'sentencepiece'"):
        get_tokenizer("sentencepiece")
    with pytest.raises(DataError, match=r"not found: .*missing.json"):
        get_tokenizer(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text('{"not": "a tokenizer"}')
    with pytest.raises(DataError, match=r"not a valid tokenizer.json"):
        get_tokenizer(str(tmp_path / "bad.json"))
    with pytest.raises(DataError, match="directory"):
        get_tokenizer(str(tmp_path) + "/")


def test_no_tokens_is_an_error():
    with pytest.raises(DataError, match="no tokens"):
        tokenize("   ", "word")


def test_a_tokenizer_json_nested_too_deep_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"version": "1.0", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    r = attn("show", "time flies", "-t", path)
    assert refused(r).startswith(f"Error: not a valid tokenizer.json: {path}: nests 100,001 levels deep, more than 64")
