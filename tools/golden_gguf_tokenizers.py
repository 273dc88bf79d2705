"""tests/models/gguf_tokenizers.json: tokenizers described by GGUF metadata, and the ids each should give.

    ref/bin/python tools/golden_gguf_tokenizers.py

Pinned: torch==2.13.0, transformers==5.23.0, gguf==0.19.0, tokenizers==0.23.3 (never attncli's dependencies;
the environment tools/reference.py makes, checked when run). Two vocabularies:
a SentencePiece BPE (the `llama` kind: "▁" for spaces, <0xXX> byte tokens for byte fallback) trained here on
sample_texts/bpe_corpus.txt, and a byte-level BPE (the `gpt2` kind) trained here across every boundary, each written
with the settings of `tests/models/gguf_files.py`'s `tokenizer_cases` (merges or scores, add_space_prefix,
add_bos_token, add_eos_token, every tokenizer.ggml.pre of BPE_PRES) as a GGUF and read by transformers'
`AutoTokenizer.from_pretrained(dir, gguf_file=...)`; the JSON keeps the vocabulary, the texts and, per case,
the ids of each text and where they came from (`reference`).

Where transformers' GGUF reading ignores a setting, the reference is llama.cpp's documented behaviour instead,
built here from the `tokenizers` pieces the model's own tokenizer.json uses (of attncli only DeepSeek LLM's long
list of letter ranges, which tests/models/test_gguf.py checks against the scripts it names):

- `tokenizer.ggml.pre` names transformers does not know are split as GPT-2's: for `smollm` and `starcoder`
  (SmolLM's and StarCoder's tokenizer.json: each digit alone, then GPT-2's split), `deepseek-coder`
  (DeepSeek-Coder's: newlines, letters, punctuation, CJK, each digit) and `deepseek-llm` (llama.cpp's list
  for it, from DeepSeek LLM's tokenizer.json) the split is replaced by theirs;
- add_space_prefix = false: transformers drops the "▁" before the text only for the Gemma architectures, so those
  cases are written as `gemma3` (transformers then also reads two plain spaces as "▁▁", and merges a vocabulary
  without merges in the order of its tokens rather than its scores, as Gemma's files need: a case with scores
  out of that order is written both as `llama` and as `gemma3`);
- BOS for a byte-level vocabulary that does not say (llama.cpp adds it for llama-bpe and tekken) is not a case
  here: every byte-level case says (tests/models/test_gguf.py checks the default).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TEXTS = [
    "time flies like an arrow",
    "Hello, world! It's 12345 o'clock.\n\nNew   line",
    "naïve café 東京 ü",
    "  two leading spaces and I'll've",
    "   three, then\ttab\t\tand  two",
    "line one\nline two\r\n\n    indented\n",
    "digits 1234567 and 3.14159 in 2026",
    "東京タワーは333メートル。한국어 텍스트",
    "emoji 🙂👍🏽 and ☕!",
    "def f(x):\n    return x**2  # square\n",
    "Hello WORLD, CamelCase and DON'T shout's",
    "x</s>y <s> z",
    "नमस्ते and cafe\u0301",
    "a<think>b</think> c",
]
CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"


def sentencepiece() -> dict:
    """A SentencePiece BPE vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then the trained pieces."""
    from tokenizers import SentencePieceBPETokenizer

    tok = SentencePieceBPETokenizer()
    tok.train([str(ROOT / "sample_texts" / "bpe_corpus.txt")], vocab_size=300, min_frequency=2, show_progress=False)
    model = json.loads(tok.to_str())["model"]
    pieces = [p for p, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1]) if p != "<unk>"]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces
    types = [2, 3, 3] + [6] * 256 + [1] * len(pieces)  # UNKNOWN, CONTROL, BYTE, NORMAL
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return {"tokens": tokens, "token_type": types, "scores": [-float(i) for i in range(len(tokens))], "merges": merges}


def byte_level() -> dict:
    """A byte-level BPE vocabulary as llama.cpp writes one (`gpt2` kind), trained here on
    sample_texts/bpe_corpus.txt and the texts with no split before its merges, so that its tokens cross every
    boundary a pre-tokenizer may draw (digits, spaces, newlines, letters and punctuation, scripts) and each
    tokenizer.ggml.pre shows in the ids."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    trainer = trainers.BpeTrainer(
        vocab_size=900, special_tokens=["<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    corpus = (ROOT / "sample_texts" / "bpe_corpus.txt").read_text(encoding="utf-8").splitlines() + TEXTS * 40
    tok.train_from_iterator(corpus, trainer)
    model = json.loads(tok.to_str())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return {"tokens": tokens, "token_type": [3, 3] + [1] * (len(tokens) - 2), "merges": merges}


def llama_cpp_splits() -> dict:
    """tokenizer.ggml.pre -> the pre-tokenizer llama.cpp gives that name where transformers splits as GPT-2."""
    from tokenizers import Regex
    from tokenizers.pre_tokenizers import ByteLevel, Digits, Sequence, Split

    from attncli.models.text.gguf_tokenizer import _LATIN_GREEK_CYRILLIC  # the one range list too long to write twice

    def cut(*regexes: str) -> list:
        return [Split(Regex(r), behavior="isolated") for r in regexes]

    digits_then_gpt2 = Sequence([Digits(individual_digits=True), ByteLevel(add_prefix_space=False)])
    bytes_only = ByteLevel(add_prefix_space=False, use_regex=False)
    punctuation = "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+"
    return {
        "smollm": digits_then_gpt2,
        "starcoder": digits_then_gpt2,
        "deepseek-coder": Sequence(
            [*cut("[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", CJK), Digits(individual_digits=True), bytes_only]
        ),
        "deepseek-llm": Sequence(
            [
                *cut("[\r\n]", _LATIN_GREEK_CYRILLIC, punctuation, r"\s+$", CJK),
                Digits(individual_digits=False),
                bytes_only,
            ]
        ),
    }


def main() -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/golden_gguf_tokenizers.py", gguf="0.19.0", tokenizers="0.23.3")
    from transformers import AutoTokenizer

    from tests.models.gguf_files import ARCHITECTURE, tokenizer_cases, write

    spm, bpe = sentencepiece(), byte_level()
    theirs = llama_cpp_splits()
    ids, reference = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, meta in tokenizer_cases(spm, bpe).items():
            arch = ARCHITECTURE.get(name, "llama")
            path = write(Path(tmp) / f"{name}.gguf", arch, {}, {"w": (np.zeros((1, 32), np.float32), "F32")}, meta)
            tok = AutoTokenizer.from_pretrained(tmp, gguf_file=path.name)
            pre = meta.get("tokenizer.ggml.pre")
            reference[name] = "transformers"
            if pre in theirs:
                tok.backend_tokenizer.pre_tokenizer = theirs[pre]
                reference[name] = f"llama.cpp's {pre} split (transformers splits as GPT-2)"
            ids[name] = [tok(text)["input_ids"] for text in TEXTS]
    out = ROOT / "tests" / "models" / "gguf_tokenizers.json"
    document = {"texts": TEXTS, "sentencepiece": spm, "bytelevel": bpe, "reference": reference, "ids": ids}
    out.write_text(json.dumps(document, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
