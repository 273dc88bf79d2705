"""A GGUF file's metadata and tensor names as the config.json and tensor names the family registry reads.

llama.cpp's converter (convert_hf_to_gguf.py) renames a Hugging Face checkpoint and changes a few tensors;
this module undoes that, so that a GGUF model runs through the same `FAMILIES` entry as its safetensors:

- the architecture `general.architecture` becomes a config.json `model_type` (MODEL_TYPES: gemma3 is
  `gemma3_text`; the other names are the same), and the `{arch}.*` keys its config keys (CONFIG_KEYS);
- a tensor name the family asks for (`layers.0.self_attn.q_proj.weight`) becomes its GGUF name
  (`blk.0.attn_q.weight`) through gguf's own TensorNameMap, llama.cpp's table of those renames;
- rotary families that llama.cpp converts with `LlamaModel` have the rows of Q and K permuted (its RoPE pairs
  adjacent dimensions, Hugging Face's the two halves of a head): PERMUTED undoes it per head;
- Gemma's RMSNorm weights are stored as 1 + w (NORM_PLUS_ONE); GPT-2's Conv1D weights transposed (TRANSPOSED);
  Llama 3.1's RoPE scaling as a tensor of factors, rope_freqs.weight (`gguf_model`).

What attn does not run is refused in one line: mixture-of-experts files (`{arch}.expert_count`), vision and
audio towers (`general.type` mmproj, `clip.*` keys), and architectures no family serves.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .hparams import ModelError

MODEL_TYPES = {"gemma3": "gemma3_text", "gptneox": "gpt_neox"}  # GGUF architecture -> model_type, when they differ
CONFIG_KEYS = {  # {arch}.KEY -> the config.json keys it sets (each family reads its own spelling)
    "block_count": ("num_hidden_layers", "n_layer"),
    "context_length": ("max_position_embeddings", "n_positions"),
    "embedding_length": ("hidden_size", "n_embd"),
    "feed_forward_length": ("intermediate_size", "n_inner"),
    "attention.head_count": ("num_attention_heads", "n_head"),
    "attention.head_count_kv": ("num_key_value_heads",),
    "attention.key_length": ("head_dim", "query_pre_attn_scalar"),
    "attention.layer_norm_rms_epsilon": ("rms_norm_eps",),
    "attention.layer_norm_epsilon": ("layer_norm_epsilon", "layer_norm_eps"),
    "attention.sliding_window": ("sliding_window",),
    "attn_logit_softcapping": ("attn_logit_softcapping",),
    "final_logit_softcapping": ("final_logit_softcapping",),
    "rope.freq_base": ("rope_theta",),
}
PERMUTED = ("llama", "smollm3")  # converted by llama.cpp's LlamaModel: Q and K rows interleaved for its RoPE
NORM_PLUS_ONE = ("gemma", "gemma2", "gemma3")  # Gemma's converters store its RMSNorm weights as 1 + w
TRANSPOSED = {"gpt2": ("attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight")}
PREFIXES = ("model.", "transformer.", "gpt_neox.", "")  # in front of a family's names in a Hugging Face checkpoint
_LAYER = re.compile(r"^blk\.(\d+)\.")


def architecture(meta: dict, source: str) -> str:
    """`general.architecture`, or ModelError when the file is a mixture of experts or a vision/audio tower."""
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ModelError(f"{source} has no general.architecture: not a model file")
    if meta.get("general.type") in ("mmproj", "adapter") or arch == "clip" or any(k.startswith("clip.") for k in meta):
        raise ModelError(
            f"{source} is a {meta.get('general.type', 'clip')} file (a vision/audio tower or an adapter), not a "
            "language model: attn reads the text model's attention, so give it the model's own GGUF"
        )
    experts = meta.get(f"{arch}.expert_count")
    if isinstance(experts, int) and experts > 0:
        raise ModelError(
            f"{source} is a mixture-of-experts model ({arch}, {experts} experts per layer): attn runs dense models "
            "only, expert routing is not supported"
        )
    return arch


def config_of(meta: dict, arch: str, rows: dict[str, tuple[int, ...]]) -> dict:
    """The config.json a family reader expects, from the `{arch}.*` metadata and the tensors' shapes."""
    c: dict[str, Any] = {"model_type": MODEL_TYPES.get(arch, arch)}
    for key, names in CONFIG_KEYS.items():
        value = meta.get(f"{arch}.{key}")
        if isinstance(value, list):
            raise ModelError(f"{arch}.{key} differs per layer in this file ({value[:4]}...): not supported")
        if value is not None:
            c |= dict.fromkeys(names, value)
    if "token_embd.weight" in rows:
        c["vocab_size"] = rows["token_embd.weight"][0]
    if "blk.0.attn_q.bias" in rows:
        c["attention_bias"] = True
    d_rot, d_k = meta.get(f"{arch}.rope.dimension_count"), c.get("head_dim")
    if d_k is None and isinstance(c.get("hidden_size"), int) and isinstance(c.get("num_attention_heads"), int):
        d_k = c["hidden_size"] // max(c["num_attention_heads"], 1)
    if isinstance(d_rot, int) and isinstance(d_k, int) and 0 < d_rot < d_k:
        c["partial_rotary_factor"] = d_rot / d_k
    kind = meta.get(f"{arch}.rope.scaling.type")
    if isinstance(kind, str) and kind != "none":
        c["rope_scaling"] = {"rope_type": kind, "factor": meta.get(f"{arch}.rope.scaling.factor")}
        original = meta.get(f"{arch}.rope.scaling.original_context_length")
        if original is not None:
            c["rope_scaling"]["original_max_position_embeddings"] = original
    return c


class Names:
    """The GGUF name of each tensor a family asks for, and what undoes llama.cpp's conversion of it."""

    def __init__(self, arch: str, n_layer: int, config: dict):
        import gguf  # (a GGUF run only)

        kinds = {name: kind for kind, name in gguf.MODEL_ARCH_NAMES.items()}
        if arch not in kinds:
            raise ModelError(f"GGUF architecture {arch!r} is unknown to the gguf package")
        self._map = gguf.get_tensor_name_map(kinds[arch], n_layer)
        self.arch, self.config = arch, config

    def gguf_name(self, name: str) -> str | None:  # "layers.0.self_attn.q_proj.weight" -> "blk.0.attn_q.weight"
        for prefix in PREFIXES:
            found = self._map.get_name(prefix + name, try_suffixes=(".weight", ".bias"))
            if found is not None:
                return found
        return None

    def shape(self, gguf_name: str, stored: tuple[int, ...]) -> tuple[int, ...]:  # the stored shape -> the HF one
        return stored[::-1] if self._transposed(gguf_name) else stored

    def _transposed(self, gguf_name: str) -> bool:
        return _LAYER.sub("", gguf_name) in TRANSPOSED.get(self.arch, ())

    def undo(self, gguf_name: str, w: np.ndarray) -> np.ndarray:  # the stored tensor -> the Hugging Face one
        """What llama.cpp's converter did to this tensor, undone: Q/K row order, Gemma's 1 + w, GPT-2's transpose."""
        base = _LAYER.sub("", gguf_name)
        if self.arch in PERMUTED and base in ("attn_q.weight", "attn_k.weight", "attn_q.bias", "attn_k.bias"):
            heads = self.config["num_attention_heads"] if base.startswith("attn_q") else self._kv_heads()
            w = unpermute(w, heads)
        if self.arch in NORM_PLUS_ONE and base.endswith("norm.weight"):
            w = w - np.float32(1)
        if self._transposed(gguf_name):
            w = np.ascontiguousarray(w.T)
        return w

    def _kv_heads(self) -> int:
        return self.config.get("num_key_value_heads") or self.config["num_attention_heads"]


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:  # [n_head * d_k, ...] -> the same, rows reordered
    """Undo llama.cpp's `permute` of Q or K rows: in each head, rows (0, 2, 4, ..., 1, 3, 5, ...) of the file
    are Hugging Face's (first half, second half).

    >>> unpermute(np.array([0, 2, 1, 3, 4, 6, 5, 7]), 2).tolist()  # 2 heads of 4 rows, as llama.cpp stores them
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    rows = w.shape[0]
    if rows % (2 * n_head):
        raise ModelError(f"{rows} rows of Q or K do not split into {n_head} heads of pairs")
    half = rows // n_head // 2
    return w.reshape(n_head, half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
