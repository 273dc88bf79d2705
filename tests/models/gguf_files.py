"""Tiny GGUF files written in the tests with gguf's own GGUFWriter, as llama.cpp's converter would write them.

`from_folder` turns a golden safetensors folder (tests/models/golden/) into a GGUF: the config as `{arch}.*`
metadata, the tensors renamed by gguf's TensorNameMap, Q and K rows permuted for the `llama` architecture,
Gemma's norms stored as 1 + w, the byte-level BPE tokenizer.json as `tokenizer.ggml.*` (model gpt2).
`write` writes any metadata and tensors (float arrays in a given type, or raw blocks of a quantized type).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).parent / "golden"
LLAMA_MODELS = ("llama", "smollm3")  # written by llama.cpp's LlamaModel or a subclass: Q and K rows permuted
KEYS = {  # config.json key -> {arch}.KEY, as llama.cpp's converter writes them
    "num_hidden_layers": "block_count",
    "max_position_embeddings": "context_length",
    "hidden_size": "embedding_length",
    "intermediate_size": "feed_forward_length",
    "num_attention_heads": "attention.head_count",
    "num_key_value_heads": "attention.head_count_kv",
    "head_dim": "attention.key_length",
    "rms_norm_eps": "attention.layer_norm_rms_epsilon",
    "sliding_window": "attention.sliding_window",
    "attn_logit_softcapping": "attn_logit_softcapping",
    "final_logit_softcapping": "final_logit_softcapping",
}


def write(path: Path, arch: str, meta: dict, tensors: dict, tokens: dict | None = None) -> Path:
    """A GGUF at `path`: `meta` keys (int, float, str, bool, list), `tensors` name -> (array, type name): a float
    array is quantized by gguf.quants (or stored as F32/F16), a uint8 array is taken as raw blocks of that type."""
    import gguf

    w = gguf.GGUFWriter(str(path), arch)
    for key, value in {**meta, **(tokens or {})}.items():
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        else:
            w.add_array(key, value)
    for name, (array, kind) in tensors.items():
        qtype = gguf.GGMLQuantizationType[kind]
        if array.dtype == np.uint8:
            w.add_tensor(name, array, raw_dtype=qtype)
        elif kind in ("F32", "F16"):
            w.add_tensor(name, array.astype(np.float32 if kind == "F32" else np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(array.astype(np.float32), qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def permute(w: np.ndarray, n_head: int) -> np.ndarray:  # llama.cpp's convert_hf_to_gguf.py LlamaModel.permute
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def tokenizer_meta(folder: Path, add_bos: bool) -> dict:
    """A byte-level BPE tokenizer.json as llama.cpp's `tokenizer.ggml.*` keys."""
    t = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = dict(t["model"]["vocab"])
    for added in t["added_tokens"]:
        vocab[added["content"]] = added["id"]
    tokens = [tok for tok, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    special = {a["content"] for a in t["added_tokens"] if a["special"]}
    merges = [m if isinstance(m, str) else " ".join(m) for m in t["model"]["merges"]]
    meta = {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": [3 if tok in special else 1 for tok in tokens],
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.add_bos_token": add_bos,
    }
    if "<s>" in vocab:
        meta |= {"tokenizer.ggml.bos_token_id": vocab["<s>"], "tokenizer.ggml.eos_token_id": vocab["</s>"]}
    return meta


def from_folder(
    folder: Path,
    path: Path,
    arch: str,
    kind: str = "F32",
    add_bos: bool = False,
    permuted: bool = True,
    head: np.ndarray | None = None,
) -> Path:
    """The golden `folder` written as a GGUF of architecture `arch` (weights in `kind`, norms in F32); `permuted`
    False leaves a llama file's Q and K rows as Hugging Face has them (a wrong file, for a test); `head` [vocab,
    d_model]: an untied output.weight."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    meta = {f"{arch}.{KEYS[k]}": v for k, v in config.items() if k in KEYS and v is not None}
    meta[f"{arch}.rope.freq_base"] = float(config.get("rope_parameters", {}).get("rope_theta", 10000.0))
    if config.get("layer_types"):  # llama.cpp writes which layers slide as a list of booleans
        meta[f"{arch}.attention.sliding_window_pattern"] = [t == "sliding_attention" for t in config["layer_types"]]
    params = config.get("rope_parameters") or {}
    if isinstance(params.get("sliding_attention"), dict):  # Gemma 3: one RoPE per layer type
        meta[f"{arch}.rope.freq_base"] = float(params["full_attention"]["rope_theta"])
        meta[f"{arch}.rope.freq_base_swa"] = float(params["sliding_attention"]["rope_theta"])
        if params["full_attention"].get("rope_type") == "linear":
            meta[f"{arch}.rope.scaling.type"] = "linear"
            meta[f"{arch}.rope.scaling.factor"] = float(params["full_attention"]["factor"])
    if params.get("rope_type") == "yarn":  # as llama.cpp's converters write YaRN: its type, factor, original length
        meta[f"{arch}.rope.scaling.type"] = "yarn"
        meta[f"{arch}.rope.scaling.factor"] = float(params["factor"])
        meta[f"{arch}.rope.scaling.original_context_length"] = params["original_max_position_embeddings"]
    if params.get("rope_type") == "longrope":  # Phi-3: the factors as tensors, the original length as metadata
        meta[f"{arch}.rope.scaling.original_context_length"] = params["original_max_position_embeddings"]
        d_k = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        meta[f"{arch}.rope.dimension_count"] = int(d_k * params["partial_rotary_factor"])
    if arch == "gpt2":
        config |= {"num_hidden_layers": config["n_layer"], "num_attention_heads": config["n_head"]}
        meta = {
            "gpt2.block_count": config["n_layer"],
            "gpt2.context_length": config["n_positions"],
            "gpt2.embedding_length": config["n_embd"],
            "gpt2.feed_forward_length": config.get("n_inner") or 4 * config["n_embd"],
            "gpt2.attention.head_count": config["n_head"],
            "gpt2.attention.layer_norm_epsilon": config["layer_norm_epsilon"],
        }
    if config.get("head_dim"):
        meta[f"{arch}.rope.dimension_count"] = config["head_dim"]
    names = gguf.get_tensor_name_map(
        {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}[arch], config["num_hidden_layers"]
    )
    n_head, n_kv = config["num_attention_heads"], config.get("num_key_value_heads") or config["num_attention_heads"]
    tensors = {}
    for name, w in load_file(str(folder / "model.safetensors")).items():
        stored = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if stored is None or stored == "output.weight":
            continue
        w = w.astype(np.float32)
        if arch in LLAMA_MODELS and permuted and stored.endswith(("attn_q.weight", "attn_k.weight")):
            w = permute(w, n_head if "attn_q" in stored else n_kv)
        if arch == "gpt2" and stored.endswith(
            ("attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight")
        ):
            w = w.T  # GPT-2's Conv1D weights are [in, out]; llama.cpp stores them [out, in]
        if arch.startswith("gemma") and stored.endswith("norm.weight"):
            w = w + np.float32(1)
        tensors[stored] = (w, kind if w.ndim == 2 else "F32")
    scaling = config.get("rope_parameters") or {}
    if scaling.get("rope_type") == "longrope":
        for key in ("long", "short"):
            tensors[f"rope_factors_{key}.weight"] = (np.array(scaling[f"{key}_factor"], dtype=np.float32), "F32")
    if scaling.get("rope_type") == "llama3":
        tensors["rope_freqs.weight"] = (llama3_factors(config["head_dim"], scaling), "F32")
    if head is not None:
        tensors["output.weight"] = (head, kind)
    return write(path, arch, meta, tensors, tokenizer_meta(folder, add_bos))


def llama3_factors(d: int, s: dict) -> np.ndarray:  # -> [d / 2]: llama.cpp's rope_freqs of a Llama 3.1 config
    """The factor llama.cpp's converter stores per RoPE frequency: 1 above the high band, `factor` below the low,
    1 / ((1 - smooth) / factor + smooth) between (written from its LlamaModel.generate_extra_tensors)."""
    base, factor = s.get("rope_theta", 10000.0), s["factor"]
    low, high, old = s["low_freq_factor"], s["high_freq_factor"], s["original_max_position_embeddings"]
    out = []
    for freq in 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d):
        wavelen = 2 * np.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


TRANSFORMERS_PRES = ("default", "gpt-2", "olmo", "llama-bpe", "dbrx", "qwen2", "deepseek-r1-qwen", "qwen35", "tekken")
TRANSFORMERS_PRES += ("gpt-4o", "llama4")  # the tokenizer.ggml.pre names transformers reads itself
BPE_PRES = (*TRANSFORMERS_PRES, "smollm", "starcoder", "deepseek-llm", "deepseek-coder")  # these it splits as GPT-2
ARCHITECTURE = {
    "spm-no-prefix": "gemma3",
    "spm-gemma-scrambled": "gemma3",
}  # a case's general.architecture when not "llama"


def tokenizer_cases(spm: dict, byte_level: dict) -> dict[str, dict]:
    """name -> the tokenizer.ggml.* metadata of each case of tests/models/gguf_tokenizers.json (written by
    tools/golden_gguf_tokenizers.py): a SentencePiece vocabulary with and without merges, with and without the
    space before the text (as Gemma's: two real spaces stored as one token, as Gemma's are), without BOS, with
    EOS, with user-defined tokens; a byte-level one under each pre-tokenizer name of BPE_PRES, with EOS added,
    without BOS, with user-defined tokens."""
    common = {"tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.unknown_token_id": 0}
    llama = {
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": spm["tokens"],
        "tokenizer.ggml.token_type": spm["token_type"],
        "tokenizer.ggml.scores": spm["scores"],
        **common,
    }
    bpe = {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": byte_level["tokens"],
        "tokenizer.ggml.token_type": byte_level["token_type"],
        "tokenizer.ggml.merges": byte_level["merges"],
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.bos_token_id": 0,
        "tokenizer.ggml.eos_token_id": 1,
    }
    gemma = {
        **llama,
        "tokenizer.ggml.tokens": spm["tokens"] + ["  "],
        "tokenizer.ggml.token_type": spm["token_type"] + [1],
        "tokenizer.ggml.scores": spm["scores"] + [-float(len(spm["tokens"]))],
        "tokenizer.ggml.add_space_prefix": False,
    }
    scrambled = [-float((i * 7919) % len(spm["tokens"])) for i in range(len(spm["tokens"]))]  # not the order
    out = {
        "spm-merges": {**llama, "tokenizer.ggml.merges": spm["merges"]},
        "spm-scrambled": {**llama, "tokenizer.ggml.scores": scrambled},  # merges by score
        "spm-phi3": llama,  # transformers' Phi-3 builder: a normalizer's "▁", read as Metaspace's
        "spm-gemma-scrambled": {  # Gemma's merge by position
            **llama,
            "tokenizer.ggml.scores": scrambled,
            "tokenizer.ggml.add_space_prefix": False,
        },
        "spm-scores": llama,
        "spm-prefix": {**llama, "tokenizer.ggml.add_space_prefix": True},
        "spm-no-prefix": gemma,
        "spm-no-bos": {**llama, "tokenizer.ggml.add_bos_token": False},
        "spm-eos": {**llama, "tokenizer.ggml.add_eos_token": True},
    }
    user = ["<think>", "</think>"]  # user-defined tokens (type 4), matched whole in the text
    out["spm-user-defined"] = {
        **llama,
        "tokenizer.ggml.tokens": spm["tokens"] + user,
        "tokenizer.ggml.token_type": spm["token_type"] + [4, 4],
        "tokenizer.ggml.scores": spm["scores"] + [0.0, 0.0],
    }
    out["bpe-user-defined"] = {
        **bpe,
        "tokenizer.ggml.tokens": bpe["tokenizer.ggml.tokens"] + user,
        "tokenizer.ggml.token_type": bpe["tokenizer.ggml.token_type"] + [4, 4],
    }
    for pre in BPE_PRES:
        out[f"bpe-{pre}"] = {**bpe, "tokenizer.ggml.pre": pre}
    out["bpe-eos"] = {**bpe, "tokenizer.ggml.add_eos_token": True, "tokenizer.ggml.eos_token_id": 1}
    out["bpe-no-bos"] = {**bpe, "tokenizer.ggml.pre": "llama-bpe", "tokenizer.ggml.add_bos_token": False}
    return out
