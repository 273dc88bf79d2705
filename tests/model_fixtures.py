"""Tiny random BERT and GPT-2 folders on disk, with Hugging Face's file layout and tensor names.

Used by tests/test_models.py; nothing is downloaded. Weights are seeded random float32 written
with safetensors' NumPy API; tokenizers are built with `tokenizers` (WordPiece for BERT,
byte-level BPE trained on a few sentences for GPT-2).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CORPUS = [
    "time flies like an arrow",
    "fruit flies like a banana",
    "the cat sat on the mat",
    "attention is all you need",
    "a quick brown fox jumps over the lazy dog",
]
BERT_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
BERT_WORDS = [*sorted({w for line in CORPUS for w in line.split()}), "##s", "##ing", "fly", "time", "."]


def bert_vocab() -> list[str]:
    """[PAD] [UNK] [CLS] [SEP] [MASK], the corpus words, a few ## pieces and the letters a-z."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    seen: dict[str, None] = dict.fromkeys(BERT_SPECIAL + BERT_WORDS + letters + ["##" + c for c in letters])
    return list(seen)


def bert_tokenizer(lowercase: bool = True):
    """A WordPiece tokenizer.json like bert-base-uncased's: BertNormalizer, [CLS] $A [SEP]."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {t: i for i, t in enumerate(bert_vocab())}
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.add_special_tokens(BERT_SPECIAL)
    return tok


def gpt2_tokenizer():
    """A byte-level BPE tokenizer.json trained on CORPUS, configured as GPT-2's."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors, trainers
    from tokenizers.models import BPE

    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 3, trainer=trainer)
    return tok


def _save(folder: Path, config: dict, tensors: dict[str, np.ndarray], shards: int) -> None:
    """config.json and model.safetensors, or `shards` files and model.safetensors.index.json."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    if shards <= 1:
        save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
        return
    names, weight_map = sorted(tensors), {}
    for s in range(shards):
        part = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        chunk = names[s::shards]
        save_file({k: tensors[k] for k in chunk}, str(folder / part), metadata={"format": "pt"})
        weight_map |= dict.fromkeys(chunk, part)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def _randn(rng: np.random.Generator, *shape: int, std: float = 0.3) -> np.ndarray:  # -> [*shape] float32
    return (rng.standard_normal(shape) * std).astype(np.float32)


def make_bert(
    folder: Path,
    *,
    prefix: str = "bert.",
    tokenizer: str = "json",
    lowercase: bool = True,
    n_layer: int = 2,
    n_head: int = 2,
    d_model: int = 16,
    d_ff: int = 32,
    max_positions: int = 32,
    seed: int = 0,
    shards: int = 1,
    config: dict | None = None,
) -> Path:
    """A random BertModel folder. tokenizer: "json" (tokenizer.json), "vocab" (vocab.txt only) or "none"."""
    rng = np.random.default_rng(seed)
    vocab = bert_vocab()
    cfg = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": d_model,
        "num_attention_heads": n_head,
        "num_hidden_layers": n_layer,
        "intermediate_size": d_ff,
        "max_position_embeddings": max_positions,
        "type_vocab_size": 2,
        "vocab_size": len(vocab),
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute",
    } | (config or {})
    t = {
        "embeddings.word_embeddings.weight": _randn(rng, len(vocab), d_model, std=1.0),
        "embeddings.position_embeddings.weight": _randn(rng, max_positions, d_model),
        "embeddings.token_type_embeddings.weight": _randn(rng, 2, d_model),
        "embeddings.LayerNorm.weight": 1 + _randn(rng, d_model, std=0.1),
        "embeddings.LayerNorm.bias": _randn(rng, d_model, std=0.1),
        "embeddings.position_ids": np.arange(max_positions, dtype=np.int64)[None],
    }  # a buffer, not a weight
    for l in range(n_layer):
        p = f"encoder.layer.{l}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            t[p + name + ".weight"], t[p + name + ".bias"] = _randn(rng, d_model, d_model), _randn(rng, d_model)
        t[p + "intermediate.dense.weight"] = _randn(rng, d_ff, d_model)  # nn.Linear: [out, in]
        t[p + "intermediate.dense.bias"] = _randn(rng, d_ff)
        t[p + "output.dense.weight"], t[p + "output.dense.bias"] = _randn(rng, d_model, d_ff), _randn(rng, d_model)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + name + ".weight"] = 1 + _randn(rng, d_model, std=0.1)
            t[p + name + ".bias"] = _randn(rng, d_model, std=0.1)
    t |= {"pooler.dense.weight": _randn(rng, d_model, d_model), "pooler.dense.bias": _randn(rng, d_model)}
    _save(folder, cfg, {prefix + k: v for k, v in t.items()}, shards)
    if tokenizer == "json":
        bert_tokenizer(lowercase).save(str(folder / "tokenizer.json"))
    if tokenizer == "vocab":
        (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
        (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lowercase}))
    return folder


def make_gpt2(
    folder: Path,
    *,
    prefix: str = "transformer.",
    tokenizer: str = "json",
    n_layer: int = 2,
    n_head: int = 2,
    d_model: int = 16,
    max_positions: int = 32,
    seed: int = 0,
    shards: int = 1,
    config: dict | None = None,
) -> Path:
    """A random GPT2LMHeadModel folder. tokenizer: "json", "bpe" (vocab.json + merges.txt) or "none"."""
    rng = np.random.default_rng(seed)
    tok = gpt2_tokenizer()
    n_vocab = tok.get_vocab_size()
    cfg = {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "n_embd": d_model,
        "n_head": n_head,
        "n_layer": n_layer,
        "n_positions": max_positions,
        "vocab_size": n_vocab,
        "activation_function": "gelu_new",
        "layer_norm_epsilon": 1e-5,
    } | (config or {})
    d, ff = d_model, 4 * d_model
    t = {
        "wte.weight": _randn(rng, n_vocab, d, std=1.0),
        "wpe.weight": _randn(rng, max_positions, d),
        "ln_f.weight": 1 + _randn(rng, d, std=0.1),
        "ln_f.bias": _randn(rng, d, std=0.1),
    }
    for l in range(n_layer):
        p = f"h.{l}."
        t |= {
            p + "ln_1.weight": 1 + _randn(rng, d, std=0.1),
            p + "ln_1.bias": _randn(rng, d, std=0.1),
            p + "ln_2.weight": 1 + _randn(rng, d, std=0.1),
            p + "ln_2.bias": _randn(rng, d, std=0.1),
            p + "attn.c_attn.weight": _randn(rng, d, 3 * d, std=0.5),
            p + "attn.c_attn.bias": _randn(rng, 3 * d),
            p + "attn.c_proj.weight": _randn(rng, d, d),
            p + "attn.c_proj.bias": _randn(rng, d),
            p + "mlp.c_fc.weight": _randn(rng, d, ff),
            p + "mlp.c_fc.bias": _randn(rng, ff),
            p + "mlp.c_proj.weight": _randn(rng, ff, d),
            p + "mlp.c_proj.bias": _randn(rng, d),
            # buffers of old checkpoints, not weights: the causal mask and its fill value
            p + "attn.bias": np.tril(np.ones((max_positions, max_positions), np.float32))[None, None],
            p + "attn.masked_bias": np.array(-1e4, dtype=np.float32),
        }
    tensors = {prefix + k: v for k, v in t.items()}
    if prefix:
        tensors["lm_head.weight"] = t["wte.weight"].copy()
    _save(folder, cfg, tensors, shards)
    if tokenizer == "json":
        tok.save(str(folder / "tokenizer.json"))
    if tokenizer == "bpe":
        tok.model.save(str(folder))  # vocab.json, merges.txt
    return folder
