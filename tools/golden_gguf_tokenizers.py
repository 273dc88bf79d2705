"""tests/models/gguf_tokenizers.json: tokenizers described by GGUF metadata, and the ids transformers gives.

    ref/bin/python tools/golden_gguf_tokenizers.py

Pinned: torch==2.13.0, transformers==5.23.0, gguf==0.19.0, tokenizers==0.23.3 (never attncli's dependencies;
the environment tools/reference.py makes, checked when run). Two vocabularies:
a SentencePiece BPE (the `llama` kind: "▁" for spaces, <0xXX> byte tokens for byte fallback) trained here on
sample_texts/bpe_corpus.txt, written once with its merges and once without (merges then come from the scores);
and the byte-level BPE of tests/models/golden/qwen2 (the `gpt2` kind) under three pre-tokenizer names. Each is
written as a GGUF (tests/models/gguf_files.py) and read by transformers' `AutoTokenizer.from_pretrained(dir,
gguf_file=...)`; the JSON keeps the vocabularies and, per case, the ids of each text.
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
]


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


def main() -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/golden_gguf_tokenizers.py", gguf="0.19.0", tokenizers="0.23.3")
    from transformers import AutoTokenizer

    from tests.models.gguf_files import GOLDEN, tokenizer_cases, tokenizer_meta, write

    spm, bpe = sentencepiece(), tokenizer_meta(GOLDEN / "qwen2", True)
    ids = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, meta in tokenizer_cases(spm, bpe).items():
            path = write(Path(tmp) / f"{name}.gguf", "llama", {}, {"w": (np.zeros((1, 32), np.float32), "F32")}, meta)
            tok = AutoTokenizer.from_pretrained(tmp, gguf_file=path.name)
            ids[name] = [tok(text)["input_ids"] for text in TEXTS]
    out = ROOT / "tests" / "models" / "gguf_tokenizers.json"
    out.write_text(json.dumps({"texts": TEXTS, "sentencepiece": spm, "ids": ids}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
