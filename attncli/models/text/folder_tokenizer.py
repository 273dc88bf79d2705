"""A Hugging Face folder's own tokenizer: tokenizer.json, or the family's vocabulary files (BERT's vocab.txt,
GPT-2's vocab.json + merges.txt) built as transformers' fast tokenizers build them; run contained
(folder.py's `ContainedTokenizer`). `tokenizers` is imported inside the functions that build one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attncli.models.files.folder import ContainedTokenizer, inside, json_object, json_text, why
from attncli.models.files.hparams import ModelError


def _read_json(path: Path) -> dict:
    return json_object(path.parent, path.name) if path.is_file() else {}


def _special(tok_config: dict, key: str, default: str) -> str:
    value = tok_config.get(key, default)
    return value.get("content", default) if isinstance(value, dict) else str(value)


def _wordpiece_from_vocab(folder: Path, config: dict) -> Any:
    """BERT's tokenizer from vocab.txt, as transformers' BertTokenizerFast builds it."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors  # late: start-up (tokenizer building)
    from tokenizers.models import WordPiece

    tok_config = _read_json(folder / "tokenizer_config.json")
    lower = tok_config.get("do_lower_case", config.get("do_lower_case", True))
    cls, sep = _special(tok_config, "cls_token", "[CLS]"), _special(tok_config, "sep_token", "[SEP]")
    unk = _special(tok_config, "unk_token", "[UNK]")
    try:
        vocab = WordPiece.read_file(str(folder / "vocab.txt"))
    except Exception as e:
        raise ModelError(f"cannot read {folder / 'vocab.txt'}: {why(e)}") from None
    missing = [t for t in (cls, sep, unk) if t not in vocab]
    if missing:
        raise ModelError(f"{folder / 'vocab.txt'} lacks the special token {missing[0]}")
    tok = Tokenizer(WordPiece(vocab, unk_token=unk, continuing_subword_prefix="##", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=tok_config.get("strip_accents"), lowercase=bool(lower)
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])],
    )
    pad, mask = _special(tok_config, "pad_token", "[PAD]"), _special(tok_config, "mask_token", "[MASK]")
    tok.add_special_tokens([t for t in (pad, unk, cls, sep, mask) if t in vocab])
    return tok


def _byte_level_bpe(folder: Path) -> Any:
    """GPT-2's tokenizer from vocab.json and merges.txt, as transformers' GPT2TokenizerFast builds it."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors  # late: start-up (tokenizer building)
    from tokenizers.models import BPE

    try:
        tok = Tokenizer(BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt")))
    except Exception as e:
        raise ModelError(f"cannot read vocab.json/merges.txt in {folder}: {why(e)}") from None
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


_VOCAB_FILES = {  # a family's vocab_files -> (the files, the tokenizer built from them)
    "vocab.txt": (("vocab.txt",), lambda folder, config: _wordpiece_from_vocab(folder, config)),
    "vocab.json + merges.txt": (("vocab.json", "merges.txt"), lambda folder, config: _byte_level_bpe(folder)),
}


def load_tokenizer(folder: Path, vocab_files: str | None, config: dict) -> Any:
    """tokenizer.json if present, else the family's `vocab_files` (BERT: vocab.txt, GPT-2: vocab.json + merges.txt).

    Padding and truncation are switched off: one text is never padded, and a text longer
    than the model's positions is an error in `encode` (transformers does not apply a
    tokenizer.json's own truncation either unless asked).
    """
    path = folder / "tokenizer.json"
    if path.is_file():
        text = json_text(folder, path.name)

        def build() -> Any:
            from tokenizers import Tokenizer  # late: start-up (tokenizer building)

            try:
                tok = Tokenizer.from_str(text)
            except Exception as e:
                raise ModelError(f"cannot read {path}: {why(e)}") from None
            tok.no_padding()
            tok.no_truncation()
            return tok

    elif vocab_files and all((folder / f).is_file() for f in _VOCAB_FILES[vocab_files][0]):
        files, make = _VOCAB_FILES[vocab_files]
        for name in files:
            inside(folder, name, "tokenizer file")

        def build() -> Any:
            tok = make(folder, config)
            tok.no_padding()
            tok.no_truncation()
            return tok

    else:
        other = f" or {vocab_files}" if vocab_files else ""
        raise ModelError(f"no tokenizer in {folder}: need tokenizer.json{other}")
    return ContainedTokenizer(build, f"the tokenizer of {folder}")
