"""The tokenizer a GGUF file describes in its `tokenizer.ggml.*` metadata, built as a `tokenizers.Tokenizer`.

Two kinds, as llama.cpp names them in `tokenizer.ggml.model`:

- `gpt2`: byte-level BPE (Radford et al. 2019), its vocabulary and merges from the file; the text is cut before
  the merges by the expressions of the pre-tokenizer `tokenizer.ggml.pre` names (PRES, as llama.cpp's
  llama-vocab.cpp lists them for each name its converter writes; no name: GPT-2's). A name attn does not know is
  refused, never guessed;
- `llama`: SentencePiece BPE (Kudo & Richardson 2018) with byte fallback (`<0x41>` tokens), "▁" for a space and,
  unless `tokenizer.ggml.add_space_prefix` is false (Gemma's files), one before the text; its merges from the
  file, or, when it has none, from the vocabulary's scores (every pair of tokens whose join is a token, the
  join's score deciding the order; for the architectures whose `Arch.merges_by_position` says so, Gemma's, the
  join's place in the vocabulary); tokens stored as plain spaces are read as the "▁"s the text becomes.

Tokens the file marks as control (type 3) are special, user-defined ones (type 4) are matched whole; BOS and
EOS are added when `tokenizer.ggml.add_bos_token` / `add_eos_token` say so (a file that does not say gets BOS
where llama.cpp adds it: a `llama` vocabulary, the llama-bpe and tekken splits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attncli.models.files.hparams import ModelError

_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
_LLAMA3 = _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_QWEN2 = _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_QWEN35 = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_UPPER, _LOWER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_TEKKEN = (
    rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+|[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_GPT4O = (
    rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+{_CONTRACTIONS}?|[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*{_CONTRACTIONS}?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"  # CJK ideographs, U+0800..U+4E00, Hangul syllables
_LATIN_GREEK_CYRILLIC = (  # DeepSeek LLM's letters: the cased scripts' ranges its tokenizer.json lists
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
    "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
    "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
    "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
    "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
    "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
    "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
    "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06"
    "\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb"
    "\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+"
)


@dataclass(frozen=True)
class Pre:
    """One `tokenizer.ggml.pre`: the regular expressions that cut a text before its merges, applied in turn
    (each cuts every piece into its matches and what lies between; none: GPT-2's own, `_GPT2`), as llama.cpp's
    `llm_tokenizer_bpe` lists them for that name (in the model's tokenizer.json spelling), and what llama.cpp
    sets with it: BOS added when the file does not say (`bos`), a piece that is a token taken whole (`whole`)."""

    splits: tuple[str, ...] = ()
    bos: bool = False
    whole: bool = False


_LLAMA3_PRE = Pre((_LLAMA3,), bos=True, whole=True)
PRES = {  # tokenizer.ggml.pre -> its Pre; a name not here is refused, never guessed
    "default": Pre(),  # no name (older files), or llama.cpp's "default": GPT-2's split, as transformers reads it
    "gpt-2": Pre(),
    "phi-2": Pre(),
    "olmo": Pre(),
    "mpt": Pre(),
    "jais": Pre(),
    "llama3": _LLAMA3_PRE,
    "llama-v3": _LLAMA3_PRE,
    "llama-bpe": _LLAMA3_PRE,
    "falcon3": _LLAMA3_PRE,
    "pixtral": _LLAMA3_PRE,
    "dbrx": Pre((_LLAMA3,)),
    "smaug-bpe": Pre((_LLAMA3,)),
    "qwen2": Pre((_QWEN2,)),
    "deepseek-r1-qwen": Pre((_QWEN2,)),
    "stablelm2": Pre((_QWEN2,)),
    "megrez": Pre((_QWEN2,)),
    "qwen35": Pre((_QWEN35,)),
    "tekken": Pre((_TEKKEN,), bos=True, whole=True),
    "gpt-4o": Pre((_GPT4O,)),
    "llama4": Pre((_GPT4O,)),
    "smollm": Pre((r"\p{N}", _GPT2)),  # each digit alone, then GPT-2's split
    "starcoder": Pre((r"\p{N}", _GPT2)),
    "refact": Pre((r"\p{N}", _GPT2)),
    "command-r": Pre((r"\p{N}", _GPT2)),
    "deepseek-llm": Pre(
        (
            "[\r\n]",
            _LATIN_GREEK_CYRILLIC,
            "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
            r"\s+$",
            _CJK,
            r"\p{N}+",
        )
    ),
    "deepseek-coder": Pre(("[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", _CJK, r"\p{N}")),
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


def tokenizer_from(meta: dict, source: str, merges_by_position: bool = False) -> Any:
    """A `tokenizers.Tokenizer` for the vocabulary of `meta` (a GGUF file's metadata), as the file describes it;
    `merges_by_position`: a SentencePiece vocabulary without merges ranks its joins by token order (Gemma's, as
    its architecture's `Arch` says), not by its scores."""
    from tokenizers import AddedToken  # late: start-up (tokenizer building)

    kind = meta.get("tokenizer.ggml.model")
    tokens = _strings(meta, "tokenizer.ggml.tokens", source)
    merges = [tuple(m.split(" ", 1)) for m in _strings(meta, "tokenizer.ggml.merges", source, required=False)]
    if any(len(m) != 2 for m in merges):
        raise ModelError(f"{source}: a merge of tokenizer.ggml.merges is not two tokens")
    if kind == "gpt2":
        pre = pre_named(meta.get("tokenizer.ggml.pre", "default"), source)
        tok = _byte_level({t: i for i, t in enumerate(tokens)}, merges, pre)
        bos = pre.bos
    elif kind == "llama":
        scores = meta.get("tokenizer.ggml.scores")  # a list, or (a vocabulary's) a NumPy view of the file
        if not merges and (not isinstance(scores, (list, np.ndarray)) or len(scores) != len(tokens)):
            raise ModelError(f"{source}: a llama vocabulary without merges needs tokenizer.ggml.scores, one per token")
        spelled = _spaces_as_metaspace(tokens)
        prefix = _flag(meta, "add_space_prefix", True, source)
        ranks = [-i for i in range(len(tokens))] if merges_by_position else scores
        tok = _sentencepiece(
            {t: i for i, t in enumerate(spelled)},
            merges or _merges_from_scores(spelled, [] if ranks is None else list(ranks)),
            prefix,
        )
        bos = True
    else:
        raise ModelError(f"{source}: tokenizer.ggml.model {kind!r} is not supported; supported: gpt2, llama")
    types = meta.get("tokenizer.ggml.token_type")  # a list, or a NumPy view: never read as a truth value
    types = [] if types is None else types
    special = [t for t, k in zip(tokens, types) if k == CONTROL]
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in special])
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t, k in zip(tokens, types) if k == USER_DEFINED])
    _ends(tok, meta, tokens, bos, source)
    return tok


def pre_named(name: Any, source: str) -> Pre:
    """The Pre of `tokenizer.ggml.pre` `name`, or ModelError naming it: a pre-tokenizer attn does not know would
    cut the text in places the merges never saw, so it is refused rather than guessed."""
    pre = PRES.get(name) if isinstance(name, str) else None
    if pre is None:
        shown = repr(name) if len(repr(name)) <= 80 else f"{repr(name)[:60]}… ({len(repr(name)):,} characters)"
        raise ModelError(
            f"{source}: tokenizer.ggml.pre {shown} is a pre-tokenizer attn does not know "
            f"(known: {', '.join(sorted(PRES))})"
        )
    return pre


def _flag(meta: dict, key: str, default: bool, source: str) -> bool:
    value = meta.get(f"tokenizer.ggml.{key}", default)
    if not isinstance(value, bool):
        raise ModelError(f"{source}: tokenizer.ggml.{key} is {value!r}, not a boolean")
    return value


def _byte_level(vocab: dict[str, int], merges: list, pre: Pre) -> Any:
    """GPT-2's byte-level BPE, the text cut first by `pre`'s expressions (GPT-2's own when it has none)."""
    from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers  # late: start-up (tokenizer building)
    from tokenizers.models import BPE

    tok = Tokenizer(BPE(vocab, merges, fuse_unk=False, ignore_merges=pre.whole))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # GPT-2's split, then its bytes
    if pre.splits:
        cuts = [pre_tokenizers.Split(Regex(split), behavior="isolated") for split in pre.splits]
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [*cuts, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
        )
    tok.decoder = decoders.ByteLevel()
    return tok


def _spaces_as_metaspace(tokens: list[str]) -> list[str]:
    """A SentencePiece vocabulary's tokens, those stored as plain spaces (Gemma's "  ", "   " ...) spelled with
    "▁" as the text will be (a space never reaches the merges: it became "▁"), unless that spelling is taken.

    >>> _spaces_as_metaspace(["▁", " ", "  ", "a"])
    ['▁', ' ', '▁▁', 'a']
    """
    taken = set(tokens)
    return [
        "▁" * len(t) if t and not t.strip(" ") and "▁" * len(t) not in taken else t  # only spaces: "▁" each
        for t in tokens
    ]


def _sentencepiece(vocab: dict[str, int], merges: list, prefix: bool) -> Any:
    """SentencePiece BPE as Llama's: "▁" for spaces, bytes as <0xXX> when no token fits, and a "▁" before the
    text when `prefix` (`tokenizer.ggml.add_space_prefix`, true unless the file says false, as Gemma's do)."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers  # late: start-up (tokenizer building)
    from tokenizers.models import BPE

    unk = "<unk>" if "<unk>" in vocab else None
    tok = Tokenizer(BPE(vocab, merges, unk_token=unk, fuse_unk=True, byte_fallback=True))
    scheme = "first" if prefix else "never"
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme, split=False)
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    tok.decoder = decoders.Sequence(steps + [decoders.Strip(" ", 1, 0)] * prefix)
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


def _ends(tok: Any, meta: dict, tokens: list[str], bos_default: bool, source: str) -> None:
    """BOS before and EOS after the text, as tokenizer.ggml.add_bos_token / add_eos_token say (when the file
    does not say: BOS as llama.cpp adds it for the vocabulary's kind or pre-tokenizer, `bos_default`; no EOS)."""
    from tokenizers import processors  # late: start-up (tokenizer building)

    bos, eos = (_token_id(meta, key, len(tokens), source) for key in ("bos_token_id", "eos_token_id"))
    add_bos = _flag(meta, "add_bos_token", bos_default, source) and bos is not None
    add_eos = _flag(meta, "add_eos_token", False, source) and eos is not None
    if not (add_bos or add_eos):
        return
    ends = [(tokens[i], i) for i, on in ((bos, add_bos), (eos, add_eos)) if on and i is not None]
    first, last = (bos is not None and add_bos), (eos is not None and add_eos)
    single = " ".join([f"{ends[0][0]}:0"] * first + ["$A:0"] + [f"{ends[-1][0]}:0"] * last)
    pair = single + " " + single.replace("$A:0", "$B:1").replace(":0", ":1")
    tok.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=ends)
