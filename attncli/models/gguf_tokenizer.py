"""The tokenizer a GGUF file describes in its `tokenizer.ggml.*` metadata, built as a `tokenizers.Tokenizer`.

Two kinds, as llama.cpp names them in `tokenizer.ggml.model`:

- `gpt2`: byte-level BPE, its vocabulary and merges from the file; the text is split before the merges by the
  pre-tokenizer `tokenizer.ggml.pre` names (SPLITS; any other name, "smollm" and "default" among them, splits
  as GPT-2 does, which is what transformers' GGUF loading does too);
- `llama`: SentencePiece BPE with byte fallback (`<0x41>` tokens), "▁" for a space and one before the text; its
  merges from the file, or, when it has none, from the vocabulary's scores (every pair of tokens whose join is
  a token, the join's score deciding the order).

Tokens the file marks as control (type 3) are special, user-defined ones (type 4) are matched whole; BOS and
EOS are added when `tokenizer.ggml.add_bos_token` / `add_eos_token` say so (a `llama` vocabulary that does not
say adds BOS, as llama.cpp does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .hparams import ModelError

_LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
SPLITS = {  # tokenizer.ggml.pre -> the regular expression that cuts a text before its merges
    "llama3": _LLAMA3,
    "llama-v3": _LLAMA3,
    "llama-bpe": _LLAMA3,
    "smaug-bpe": _LLAMA3,
    "qwen2": _QWEN2,
    "deepseek-r1-qwen": _QWEN2,
}
CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values


def _strings(meta: dict, key: str, source: str, required: bool = True) -> list[str]:
    value = meta.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ModelError(f"{source}: {key} is not a list of strings")
    return value


def _token_id(meta: dict, key: str, size: int, source: str) -> int | None:
    value = meta.get(f"tokenizer.ggml.{key}")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
        raise ModelError(f"{source}: tokenizer.ggml.{key} {value!r} is not a token of its {size:,}")
    return value


def tokenizer_from(meta: dict, source: str) -> Any:
    """A `tokenizers.Tokenizer` for the vocabulary of `meta` (a GGUF file's metadata), as the file describes it."""
    from tokenizers import AddedToken  # late: start-up (tokenizer building)

    kind = meta.get("tokenizer.ggml.model")
    tokens = _strings(meta, "tokenizer.ggml.tokens", source)
    merges = [tuple(m.split(" ", 1)) for m in _strings(meta, "tokenizer.ggml.merges", source, required=False)]
    if any(len(m) != 2 for m in merges):
        raise ModelError(f"{source}: a merge of tokenizer.ggml.merges is not two tokens")
    vocab = {t: i for i, t in enumerate(tokens)}
    if kind == "gpt2":
        tok = _byte_level(vocab, merges, meta.get("tokenizer.ggml.pre"))
    elif kind == "llama":
        scores = meta.get("tokenizer.ggml.scores")  # a list, or (a vocabulary's) a NumPy view of the file
        if not merges and (not isinstance(scores, (list, np.ndarray)) or len(scores) != len(tokens)):
            raise ModelError(f"{source}: a llama vocabulary without merges needs tokenizer.ggml.scores, one per token")
        tok = _sentencepiece(vocab, merges or _merges_from_scores(tokens, [] if scores is None else list(scores)))
    else:
        raise ModelError(f"{source}: tokenizer.ggml.model {kind!r} is not supported; supported: gpt2, llama")
    types = meta.get("tokenizer.ggml.token_type")  # a list, or a NumPy view: never read as a truth value
    types = [] if types is None else types
    special = [t for t, k in zip(tokens, types) if k == CONTROL]
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in special])
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t, k in zip(tokens, types) if k == USER_DEFINED])
    _ends(tok, meta, tokens, kind, source)
    return tok


def _byte_level(vocab: dict[str, int], merges: list, pre: Any) -> Any:
    """GPT-2's byte-level BPE, split by the pre-tokenizer `pre` names (GPT-2's own by default)."""
    from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers  # late: start-up (tokenizer building)
    from tokenizers.models import BPE

    tok = Tokenizer(BPE(vocab, merges, fuse_unk=False))
    split = SPLITS.get(pre) if isinstance(pre, str) else None
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # GPT-2's split, then its bytes
    if split is not None:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(split), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    tok.decoder = decoders.ByteLevel()
    return tok


def _sentencepiece(vocab: dict[str, int], merges: list) -> Any:
    """SentencePiece BPE as Llama's: "▁" for spaces and before the text, bytes as <0xXX> when no token fits."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers  # late: start-up (tokenizer building)
    from tokenizers.models import BPE

    unk = "<unk>" if "<unk>" in vocab else None
    tok = Tokenizer(BPE(vocab, merges, unk_token=unk, fuse_unk=True, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    return tok


def _merges_from_scores(tokens: list[str], scores: list) -> list[tuple[str, str]]:
    """The merges a SentencePiece vocabulary implies: each split of a token into two tokens, the best-scored
    token's merges first (and of one token's, the split with the better-ranked left part first).

    >>> _merges_from_scores(["a", "b", "ab", "abb"], [0.0, 0.0, -1.0, -2.0])
    [('a', 'b'), ('ab', 'b')]
    """
    vocab = {t: i for i, t in enumerate(tokens)}
    found = []
    for token, score in zip(tokens, scores):
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in vocab and right in vocab:
                found.append((-float(score), vocab[left], vocab[right], left, right))
    return [(left, right) for *_, left, right in sorted(found)]


def _ends(tok: Any, meta: dict, tokens: list[str], kind: Any, source: str) -> None:
    """BOS before and EOS after the text, as tokenizer.ggml.add_bos_token / add_eos_token say."""
    from tokenizers import processors  # late: start-up (tokenizer building)

    bos, eos = (_token_id(meta, key, len(tokens), source) for key in ("bos_token_id", "eos_token_id"))
    add_bos = meta.get("tokenizer.ggml.add_bos_token", kind == "llama") and bos is not None
    add_eos = meta.get("tokenizer.ggml.add_eos_token", False) and eos is not None
    if not (add_bos or add_eos):
        return
    ends = [(tokens[i], i) for i, on in ((bos, add_bos), (eos, add_eos)) if on and i is not None]
    first, last = (bos is not None and add_bos), (eos is not None and add_eos)
    single = " ".join([f"{ends[0][0]}:0"] * first + ["$A:0"] + [f"{ends[-1][0]}:0"] * last)
    pair = single + " " + single.replace("$A:0", "$B:1").replace(":0", ":1")
    tok.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=ends)
