"""Build the golden decoder folders of tests/models/golden/ with transformers, and their reference attentions.

    ref/bin/python tools/golden_decoders.py [--out OUT_DIR] [NAME ...]   (default tests/models/golden, all)

Pinned: torch==2.13.0, transformers==5.23.0, with tokenizers (never attncli's dependencies;
the environment tools/reference.py makes, checked when run). For each family it makes a
tiny random model (hidden 32, 2 layers, 4 query heads sharing 2 key/value heads where the family
has grouped-query attention, a sliding window of 8 tokens where it has one), saves it with
`save_pretrained` as safetensors next to a small byte-level BPE tokenizer.json trained on the
project's sample_texts/bpe_corpus.txt (with a BOS token for the Llama-style tokenizers), and writes
reference.npz: transformers' eager `output_attentions` for a short text and a ~40-token text
(longer than the window), [layers, heads, n, n] float32, plus the token ids. One folder
(qwen2-bf16) stores BF16 weights; its reference is transformers run in float32 on those weights.
GPT-2 and BERT (no causal mask, BOS as its only added token) get folders too, so that every
registered family is checked in CI without torch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXTS = {
    "short": "time flies like an arrow",
    "long": "attention is all you need, said the paper; the heads agreed.",
}
COMMON = {
    "vocab_size": 320,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
    "initializer_range": 0.2,
    "tie_word_embeddings": True,
}
GQA = {"num_key_value_heads": 2, "head_dim": 8}
IDS = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1}  # inside the 320-token vocabulary
# longrope's factors, one per rotated pair of dimensions (Phi-3: d_rot / 2 of them), far from 1 so that they show
SHORT, LONG = [1.0, 1.5, 2.0, 4.0], [1.0, 3.0, 8.0, 16.0]


def families() -> dict[str, tuple[str, dict, bool]]:
    """name -> (transformers config class, its arguments, whether the tokenizer adds BOS)."""
    return {
        "llama": (
            "LlamaConfig",
            {
                **COMMON,
                **GQA,
                "rope_scaling": {
                    "rope_type": "llama3",
                    "factor": 8.0,
                    "low_freq_factor": 1.0,
                    "high_freq_factor": 8.0,
                    "original_max_position_embeddings": 48,
                },
                "rope_theta": 10000.0,
            },
            True,
        ),
        "mistral": ("MistralConfig", {**COMMON, **GQA, "sliding_window": 8}, True),
        "qwen2": (
            "Qwen2Config",
            {**COMMON, **GQA, "use_sliding_window": True, "sliding_window": 8, "max_window_layers": 1},
            False,
        ),
        "qwen3": ("Qwen3Config", {**COMMON, **GQA, "rope_theta": 1000000.0}, False),
        "gemma": ("GemmaConfig", {**COMMON, **GQA}, True),
        "gemma2": (
            "Gemma2Config",
            {
                **COMMON,
                **GQA,
                "sliding_window": 8,
                "query_pre_attn_scalar": 16,
                "attn_logit_softcapping": 2.0,
            },
            True,
        ),
        # Llama's mlp_bias and YaRN (the ramp between beta_fast and beta_slow, the 0.1 ln(factor) + 1 attention factor)
        "llama-yarn": (
            "LlamaConfig",
            {
                **COMMON,
                **GQA,
                "mlp_bias": True,
                "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16},
            },
            True,
        ),
        # LongRoPE: the short factors up to original_max_position_embeddings (12: the short text), the long past it
        "qwen2-longrope": (
            "Qwen2Config",
            {
                **COMMON,
                **GQA,
                "rope_scaling": {
                    "rope_type": "longrope",
                    "short_factor": SHORT,
                    "long_factor": LONG,
                    "original_max_position_embeddings": 12,
                },
            },
            False,
        ),
        # YaRN with mscale / mscale_all_dim, untruncated, other betas
        "qwen3-yarn": (
            "Qwen3Config",
            {
                **COMMON,
                **GQA,
                "rope_scaling": {
                    "rope_type": "yarn",
                    "factor": 8.0,
                    "original_max_position_embeddings": 16,
                    "mscale": 1.0,
                    "mscale_all_dim": 0.5,
                    "beta_fast": 16,
                    "beta_slow": 2,
                    "truncate": False,
                },
            },
            False,
        ),
        "olmo2": ("Olmo2Config", {**COMMON, **IDS, "num_key_value_heads": 2}, False),
        # Phi-3.5 / Phi-4-mini: fused qkv and gate_up, LongRoPE on half of each head, a sliding window
        "phi3": (
            "Phi3Config",
            {
                **COMMON,
                **IDS,
                "num_key_value_heads": 2,
                "partial_rotary_factor": 0.5,
                "sliding_window": 8,
                "original_max_position_embeddings": 12,
                "rope_scaling": {"rope_type": "longrope", "short_factor": SHORT[:2], "long_factor": LONG[:2]},
            },
            True,
        ),
        # Gemma 3: sliding layers with their own theta, a global layer with linear scaling, q/k norms
        "gemma3_text": (
            "Gemma3TextConfig",
            {
                **COMMON,
                **GQA,
                "sliding_window": 8,
                "query_pre_attn_scalar": 16,
                "layer_types": ["sliding_attention", "full_attention"],
                "rope_parameters": {
                    "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                },
            },
            True,
        ),
        # SmolLM3: no RoPE on every no_rope_layer_interval-th layer (here layer 1)
        "smollm3": ("SmolLM3Config", {**COMMON, **GQA, **IDS, "no_rope_layer_interval": 2}, False),
        "gpt_neox": (
            "GPTNeoXConfig",
            {**COMMON, "rotary_pct": 0.5, "rotary_emb_base": 10000, "tie_word_embeddings": False},
            False,
        ),
        "qwen2-bf16": ("Qwen2Config", {**COMMON, **GQA}, False),
        "gpt2": (
            "GPT2Config",
            {"vocab_size": 320, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64, "initializer_range": 0.2},
            False,
        ),
        "gpt2-scaled": (  # GPT-2's scale_attn_by_inverse_layer_idx: layer l's scores also divided by l + 1
            "GPT2Config",
            {"vocab_size": 320, "n_embd": 32, "n_layer": 3, "n_head": 4, "n_positions": 64, "initializer_range": 0.3}
            | {"scale_attn_by_inverse_layer_idx": True},
            False,
        ),
        "bert": (
            "BertConfig",
            {k: v for k, v in COMMON.items() if k != "tie_word_embeddings"} | {"initializer_range": 0.2},
            True,
        ),
    }


def tokenizer(bos: bool):
    """A byte-level BPE of 320 tokens trained on the project's corpus; `bos` puts <s> before every text."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors, trainers
    from tokenizers.models import BPE

    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=COMMON["vocab_size"],
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = (ROOT / "sample_texts" / "bpe_corpus.txt").read_text(encoding="utf-8").splitlines()
    tok.train_from_iterator(corpus, trainer=trainer)
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def build(out: Path, name: str, config_class: str, kwargs: dict, bos: bool) -> int:
    """One folder and its reference.npz; -> the longest text's token count."""
    import numpy as np
    import torch
    import transformers
    from reference import mark_weights, random_weights  # tools/reference.py

    torch.manual_seed(sum(map(ord, name)))
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    config = getattr(transformers, config_class)(**kwargs)
    config._attn_implementation = "eager"
    auto = transformers.AutoModel if config_class == "BertConfig" else transformers.AutoModelForCausalLM
    model = auto.from_config(config, attn_implementation="eager")
    if name.endswith("-bf16"):
        model = model.to(torch.bfloat16)
    model.save_pretrained(str(folder), safe_serialization=True)
    for extra in ("generation_config.json",):
        (folder / extra).unlink(missing_ok=True)
    mark_weights(folder, random_weights("tools/golden_decoders.py"))  # what captions say the weights are
    tok = tokenizer(bos)
    tok.save(str(folder / "tokenizer.json"))
    ref = auto.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float32).eval()
    arrays = {}
    for key, text in TEXTS.items():
        ids = tok.encode(text).ids
        with torch.no_grad():
            att = ref(torch.tensor([ids]), output_attentions=True).attentions
        arrays[key] = np.stack([a[0].float().numpy() for a in att]).astype(np.float32)  # [L, h, n, n]
        arrays[key + "_ids"] = np.asarray(ids, dtype=np.int64)
    np.savez_compressed(folder / "reference.npz", **arrays)
    (folder / "texts.json").write_text(json.dumps(TEXTS, indent=2) + "\n")
    return max(len(arrays[k + "_ids"]) for k in TEXTS)


def main(argv: list[str]) -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/golden_decoders.py")
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else ROOT / "tests" / "models" / "golden"
    names = [a for a in argv if a in families()] or list(families())
    for name in names:
        config_class, kwargs, bos = families()[name]
        n = build(out, name, config_class, kwargs, bos)
        size = sum(p.stat().st_size for p in (out / name).iterdir())
        print(f"{name:12s} longest text {n} tokens, folder {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main(sys.argv[1:])
