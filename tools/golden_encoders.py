"""Build the golden encoder folders of tests/models/golden/: tiny random models saved by transformers.

Run with the reference environment, torch==2.13.0 and transformers==5.23.0 (attn itself never needs them;
the environment tools/reference.py makes, checked when run):

    ref/bin/python tools/golden_encoders.py            # writes tests/models/golden/<family>/

Each folder is what `save_pretrained` writes (config.json, model.safetensors) plus a tokenizer.json
built with `tokenizers`, the texts (texts.json: "short" and "long", about 40 tokens; pair.json: a
sentence pair) and reference.npz, the layout of tools/golden_decoders.py: for each case its token ids
(`<case>_ids`, and for the pair `pair_type_ids`) and transformers' eager `output_attentions`, every
layer and head, as float32 [n_layer, n_head, n, n] (`<case>`). The tests compare attn against them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

CORPUS = [
    "time flies like an arrow",
    "fruit flies like a banana",
    "the cat sat on the mat",
    "attention is all you need",
    "a quick brown fox jumps over the lazy dog",
    "the quick brown fox was not amused by the lazy dog at all",
    "encoders read the whole sentence at once and every token sees every other token",
]
SHORT = "time flies like an arrow"
LONG = (
    "the quick brown fox jumps over the lazy dog while time flies like an arrow and fruit flies like a "
    "banana, because attention is all you need when every token sees every other token"
)
PAIR = ("time flies like an arrow", "fruit flies like a banana")
CASES = {"short": (SHORT, None), "long": (LONG, None), "pair": PAIR}
SIZES = dict(hidden=32, layers=2, heads=4, ff=64, positions=130)


def wordpiece(lowercase: bool = True):
    """A BERT-style WordPiece tokenizer.json trained on CORPUS: [CLS] A [SEP] (B [SEP] with type 1)."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors, trainers
    from tokenizers.models import WordPiece

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator([*CORPUS, LONG], trainers.WordPieceTrainer(vocab_size=200, special_tokens=special))
    ids = {t: tok.token_to_id(t) for t in special}
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    return tok


def byte_bpe():
    """A RoBERTa-style byte-level BPE tokenizer.json: <s> A </s></s> B </s>, <pad> = 1."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors, trainers
    from tokenizers.models import BPE

    special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator([*CORPUS, LONG], trainer)
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=False
    )
    return tok


def unigram(cls: str, sep: str, pair_sep: str, special: list[str], second: str):
    """A SentencePiece-like unigram tokenizer.json (Metaspace ▁ for spaces) with the given template.

    `second` is the type of the pair's second segment (":1", or "" for XLM-R, whose types are all 0).

    Its pieces: the special tokens, "▁word" for the words of the corpus, and every letter with and
    without ▁ (so no text is unknown); a piece's log-probability falls with its length's rarity.
    """
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import Unigram

    words = sorted({w for line in [*CORPUS, LONG] for w in line.replace(",", " ,").split()})
    letters = sorted({c for line in [*CORPUS, LONG] for c in line if not c.isspace()})
    pieces = [(t, 0.0) for t in special] + [("▁" + w, -2.0) for w in words]
    pieces += [(c, -8.0) for c in letters] + [("▁" + c, -8.0) for c in letters] + [("▁", -9.0)]
    tok = Tokenizer(Unigram(pieces, unk_id=special.index("<unk>")))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.add_special_tokens(special)
    ids = {t: tok.token_to_id(t) for t in special}
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {pair_sep} $B{second} {sep}{second}",
        special_tokens=[(t, ids[t]) for t in dict.fromkeys((cls, sep))],
    )
    return tok


def build(family: str):
    """(model, tokenizer) for a family: random weights from a fixed seed, sizes from SIZES."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    h, layers, heads, ff, pos = (SIZES[k] for k in ("hidden", "layers", "heads", "ff", "positions"))
    common = dict(
        hidden_size=h,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ff,
        max_position_embeddings=pos,
        initializer_range=0.4,
    )
    if family == "distilbert":
        tok = wordpiece()
        config = tf.DistilBertConfig(
            vocab_size=tok.get_vocab_size(),
            dim=h,
            n_layers=layers,
            n_heads=heads,
            hidden_dim=ff,
            max_position_embeddings=pos,
            sinusoidal_pos_embds=True,
            pad_token_id=0,
            initializer_range=0.4,
        )
        return tf.DistilBertForMaskedLM(config), tok
    if family == "roberta":
        tok = byte_bpe()
        config = tf.RobertaConfig(
            vocab_size=tok.get_vocab_size(),
            type_vocab_size=1,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            **common,
        )
        return tf.RobertaForMaskedLM(config), tok
    if family == "xlm-roberta":
        tok = unigram("<s>", "</s>", "</s> </s>", ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], "")
        config = tf.XLMRobertaConfig(
            vocab_size=tok.get_vocab_size(),
            type_vocab_size=1,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            **common,
        )
        return tf.XLMRobertaForMaskedLM(config), tok
    if family == "camembert":  # RoBERTa's layers, a SentencePiece vocabulary and <s> A </s></s> B </s>
        tok = unigram("<s>", "</s>", "</s> </s>", ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], "")
        config = tf.CamembertConfig(
            vocab_size=tok.get_vocab_size(),
            type_vocab_size=1,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            **common,
        )
        return tf.CamembertForMaskedLM(config), tok
    if family == "mpnet":  # RoBERTa's tokens and positions, T5's relative position bias, no token types
        tok = byte_bpe()
        config = tf.MPNetConfig(
            vocab_size=tok.get_vocab_size(), pad_token_id=1, bos_token_id=0, eos_token_id=2, **common
        )
        return tf.MPNetForMaskedLM(config), tok
    if family == "modernbert":  # a global layer, then a local one (window 8 tokens), RoPE, GeGLU, no token types
        tok = wordpiece()
        config = tf.ModernBertConfig(
            vocab_size=tok.get_vocab_size(),
            hidden_size=h,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=ff,
            max_position_embeddings=pos,
            local_attention=8,
            global_attn_every_n_layers=2,
            pad_token_id=0,
            cls_token_id=2,
            sep_token_id=3,
            bos_token_id=2,
            eos_token_id=3,
            initializer_range=0.4,
        )
        return tf.ModernBertForMaskedLM(config), tok
    if family in ("deberta-v3", "deberta-v2"):
        # v3's layout (shared keys, normalised relative embeddings, no absolute positions, log buckets past 4 of 32),
        # and v2's (own position projections, absolute positions, token types, plain offsets up to 16)
        tok = unigram("[CLS]", "[SEP]", "[SEP]", ["[PAD]", "[CLS]", "[SEP]", "<unk>", "[MASK]"], ":1")
        v3 = family == "deberta-v3"
        config = tf.DebertaV2Config(
            vocab_size=tok.get_vocab_size(),
            relative_attention=True,
            pos_att_type="p2c|c2p" if v3 else ["c2p", "p2c"],
            position_buckets=8 if v3 else -1,
            max_relative_positions=32 if v3 else 16,
            share_att_key=v3,
            norm_rel_ebd="layer_norm" if v3 else "none",
            position_biased_input=not v3,
            type_vocab_size=0 if v3 else 2,
            **common,
        )
        return tf.DebertaV2ForMaskedLM(config), tok
    if family == "electra":
        tok = wordpiece()
        config = tf.ElectraConfig(vocab_size=tok.get_vocab_size(), embedding_size=16, **common)
        return tf.ElectraForPreTraining(config), tok
    if family == "albert":
        tok = unigram("[CLS]", "[SEP]", "[SEP]", ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], ":1")
        config = tf.AlbertConfig(
            vocab_size=tok.get_vocab_size(), embedding_size=16, hidden_act="gelu_new", pad_token_id=0, **common
        )
        return tf.AlbertForMaskedLM(config), tok
    raise SystemExit(f"unknown family {family}")


def reference(model, tok) -> dict[str, np.ndarray]:
    """For each case: ids, type ids, and the eager attentions of every layer [L, h, n, n]."""
    import torch

    out = {}
    for name, (a, b) in CASES.items():
        enc = tok.encode(a, b) if b is not None else tok.encode(a)
        ids = torch.tensor([enc.ids])
        types = torch.tensor([enc.type_ids])
        no_types = ("distilbert", "mpnet", "modernbert")  # DeBERTa-v3's type_vocab_size 0: all 0 (its ids unused)
        kwargs = {} if model.config.model_type in no_types else {"token_type_ids": types}
        with torch.no_grad():
            attentions = model(input_ids=ids, output_attentions=True, **kwargs).attentions
        out[f"{name}_ids"] = np.array(enc.ids, dtype=np.int64)
        if b is not None:
            out[f"{name}_type_ids"] = np.array(enc.type_ids, dtype=np.int64)
        out[name] = torch.stack([t[0] for t in attentions]).numpy().astype(np.float32)
    return out


def main() -> None:
    from reference import mark_weights, random_weights, require  # tools/reference.py: the pinned environment

    require("tools/golden_encoders.py")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "tests/models/golden")
    parser.add_argument(
        "families",
        nargs="*",
        default=[
            "distilbert",
            "roberta",
            "xlm-roberta",
            "camembert",
            "mpnet",
            "modernbert",
            "deberta-v3",
            "deberta-v2",
            "electra",
            "albert",
        ],
    )
    args = parser.parse_args()
    for family in args.families:
        model, tok = build(family)
        model.set_attn_implementation("eager")
        model.eval()
        folder = args.out / family
        model.save_pretrained(folder, safe_serialization=True)
        mark_weights(folder, random_weights("tools/golden_encoders.py"))
        tok.save(str(folder / "tokenizer.json"))
        texts = {"short": SHORT, "long": LONG}
        (folder / "texts.json").write_text(json.dumps(texts, indent=2) + "\n", encoding="utf-8")
        (folder / "pair.json").write_text(json.dumps(list(PAIR)) + "\n", encoding="utf-8")
        np.savez_compressed(folder / "reference.npz", **reference(model, tok))
        config = json.loads((folder / "config.json").read_text())
        size = sum(p.stat().st_size for p in folder.iterdir())
        print(f"{family}: {config['architectures']}, {size // 1024} KB in {folder}")


if __name__ == "__main__":
    main()
