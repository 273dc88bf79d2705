"""Build the golden encoder-decoder folders of tests/models/golden/: tiny random BART, T5, mT5 and Marian models.

Run with the reference environment, torch==2.13.0 and transformers==5.23.0 (attn itself never needs them;
the environment tools/reference.py makes, checked when run):

    ref/bin/python tools/golden_seq2seq.py            # writes tests/models/golden/<family>/

Each folder is what `save_pretrained` writes (config.json, model.safetensors) plus a word-level
tokenizer.json built with `tokenizers` (with the family's special tokens: BART <s> A </s>, T5 and
Marian A </s>), pairs.json (two source/target sentence pairs, "short" and "long"), texts.json (their
sources, the layout of tools/golden_decoders.py, so the encoder is checked like every family) and
reference.npz: for each case the source's ids `<case>_ids`, `<case>_labels` (the tokenizer's ids of
the target), `<case>_decoder_ids` (what transformers feeds the decoder when given labels: the
decoder start token, then the labels without their last) and transformers' eager attentions, every
layer and head, float32: `<case>` (the encoder's) [L_enc, h, n_src, n_src], `<case>_decoder`
[L_dec, h, n_tgt, n_tgt] and `<case>_cross` [L_dec, h, n_tgt, n_src]. The tests compare attn against them.

`t5-large-scores` is the T5 folder with initializer_factor 3: scores of 300 to 550, where one float32 ulp
of a score (3e-5 to 6e-5) moves a weight by up to its size times w(1 - w), so two correct float32 runs
differ by ~1e-4 after one layer. Its reference.npz also holds `<case>_f64`, `<case>_decoder_f64`,
`<case>_cross_f64`: transformers' attentions with the same weights in float64, the truth both float32 runs
approximate. It goes under tests/models/conditioning/ (tests/models/test_seq2seq.py holds attn as close to
the float64 truth as transformers' float32 run is); the golden folders stay within 1e-5 of transformers.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

PAIRS = {
    "short": ("the cat sat on the mat", "le chat est assis sur le tapis"),
    "long": (
        "the quick brown fox jumps over the lazy dog while time flies like an arrow",
        "le renard brun rapide saute par-dessus le chien paresseux pendant que le temps file comme une flèche",
    ),
}
SIZES = dict(d_model=32, layers=2, heads=4, ff=64, positions=64)
LANGUAGES = ["en_XX", "fr_XX"]  # mbart's language codes: the source's is en_XX, the target's fr_XX


def word_level(special: list[str], template: str):
    """A word-level tokenizer.json over the words of PAIRS: the special tokens first, `template` for one text."""
    from tokenizers import Tokenizer, pre_tokenizers, processors
    from tokenizers.models import WordLevel

    words = sorted({w for pair in PAIRS.values() for text in pair for w in text.split()})
    vocab = {t: i for i, t in enumerate([*special, *words])}
    tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(special)
    used = [t for t in special if t in template.split()]
    tok.post_processor = processors.TemplateProcessing(single=template, special_tokens=[(t, vocab[t]) for t in used])
    return tok


def build(family: str):
    """(model, tokenizer, the target's tokenizer) for a family: random weights from a fixed seed, sizes from SIZES;
    `t5-large-scores` is T5 with initializer_factor 3 (large, unscaled scores); `bart-heads` and `marian-heads` have
    half as many decoder heads as encoder heads (decoder d_k 16, encoder 8); `mbart` is mBART-cc25's layout
    (a source is `A </s> en_XX`, a target `A </s> fr_XX`, as MBartTokenizer with src_lang en_XX, tgt_lang fr_XX)."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    d, layers, heads, ff, pos = (SIZES[k] for k in ("d_model", "layers", "heads", "ff", "positions"))
    dec_heads = heads // 2 if family.endswith("-heads") else heads  # bart-heads, marian-heads: 4 and 2 heads
    family = family.removesuffix("-heads")
    if family in ("bart", "marian", "mbart"):
        special = ["<s>", "<pad>", "</s>", "<unk>"] if family != "marian" else ["</s>", "<unk>", "<pad>"]
        special += LANGUAGES if family == "mbart" else []
        template = {"bart": "<s> $A </s>", "marian": "$A </s>", "mbart": "$A </s> en_XX"}[family]
        tok = word_level(special, template)
        ids = {t: tok.token_to_id(t) for t in special}
        common = dict(
            vocab_size=tok.get_vocab_size(),
            d_model=d,
            encoder_layers=layers,
            decoder_layers=layers,
            encoder_attention_heads=heads,
            decoder_attention_heads=dec_heads,
            encoder_ffn_dim=ff,
            decoder_ffn_dim=ff,
            max_position_embeddings=pos,
            init_std=0.3,
            pad_token_id=ids["<pad>"],
            eos_token_id=ids["</s>"],
        )
        if family == "bart":
            config = tf.BartConfig(bos_token_id=0, decoder_start_token_id=ids["</s>"], scale_embedding=True, **common)
            return tf.BartForConditionalGeneration(config), tok, tok
        if family == "mbart":
            config = tf.MBartConfig(bos_token_id=0, scale_embedding=True, **common)
            return tf.MBartForConditionalGeneration(config), tok, word_level(special, "$A </s> fr_XX")
        config = tf.MarianConfig(
            decoder_start_token_id=ids["<pad>"], activation_function="swish", scale_embedding=True, **common
        )
        return tf.MarianMTModel(config), tok, tok
    if family in ("t5", "mt5", "t5-large-scores"):
        special = ["<pad>", "</s>", "<unk>"]
        tok = word_level(special, "$A </s>")
        config = (tf.MT5Config if family == "mt5" else tf.T5Config)(
            vocab_size=tok.get_vocab_size(),
            d_model=d,
            d_kv=8,
            d_ff=ff,
            num_layers=layers,
            num_decoder_layers=layers,
            num_heads=heads,
            relative_attention_num_buckets=8,
            relative_attention_max_distance=16,
            feed_forward_proj="gated-gelu",
            initializer_factor=3.0 if family == "t5-large-scores" else 1.0,
            pad_token_id=0,
            eos_token_id=1,
            decoder_start_token_id=0,
            tie_word_embeddings=False,
        )
        model = tf.MT5ForConditionalGeneration if family == "mt5" else tf.T5ForConditionalGeneration
        return model(config), tok, tok
    raise SystemExit(f"unknown family {family}")


def reference(model, tok, target_tok, suffix: str = "") -> dict[str, np.ndarray]:
    """For each pair: the ids, and the eager encoder, decoder and cross attentions of every layer (their keys
    ending in `suffix`); the labels are `target_tok`'s ids of the target, the decoder's input what transformers
    makes of them (`prepare_decoder_input_ids_from_labels`: mBART's wraps the last label round to the front)."""
    import torch

    out = {}
    for name, (source, target) in PAIRS.items():
        src = torch.tensor([tok.encode(source).ids])
        labels = torch.tensor([target_tok.encode(target).ids])
        with torch.no_grad():
            r = model(input_ids=src, labels=labels, output_attentions=True)
        out[f"{name}_ids"] = src[0].numpy()
        out[f"{name}_labels"] = labels[0].numpy()
        out[f"{name}_decoder_ids"] = model.prepare_decoder_input_ids_from_labels(labels=labels)[0].numpy()
        for part, key in (("encoder", name), ("decoder", f"{name}_decoder"), ("cross", f"{name}_cross")):
            out[key + suffix] = torch.stack([t[0] for t in getattr(r, f"{part}_attentions")]).numpy()
    return out


def main() -> None:
    from reference import mark_weights, random_weights, require  # tools/reference.py: the pinned environment

    require("tools/golden_seq2seq.py")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "tests/models/golden")
    parser.add_argument(
        "families",
        nargs="*",
        default=["bart", "t5", "mt5", "marian", "mbart", "bart-heads", "marian-heads", "t5-large-scores"],
    )
    args = parser.parse_args()
    for family in args.families:
        model, tok, target_tok = build(family)
        model.set_attn_implementation("eager")
        model.eval()
        conditioning = family == "t5-large-scores"
        folder = (args.out.parent / "conditioning" if conditioning else args.out) / family
        model.save_pretrained(folder, safe_serialization=True)
        (folder / "generation_config.json").unlink(missing_ok=True)
        mark_weights(folder, random_weights("tools/golden_seq2seq.py"))
        tok.save(str(folder / "tokenizer.json"))
        language = "fr_XX " if target_tok is not tok else ""  # attn takes the target's language code first
        pairs = {name: {"source": s, "target": language + t} for name, (s, t) in PAIRS.items()}
        (folder / "pairs.json").write_text(json.dumps(pairs, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        texts = {name: source for name, (source, _) in PAIRS.items()}
        (folder / "texts.json").write_text(json.dumps(texts, indent=2) + "\n", encoding="utf-8")
        ref = reference(model, tok, target_tok)
        if conditioning:  # the same weights in float64 (the ids are the same)
            ref |= reference(model.double(), tok, target_tok, "_f64")
        np.savez_compressed(folder / "reference.npz", **ref)
        print(folder, sorted(p.name for p in folder.iterdir()))


if __name__ == "__main__":
    main()
