"""A GGUF file's metadata and tensor names as the config.json and tensor names the family registry reads.

llama.cpp's converter (convert_hf_to_gguf.py) renames a Hugging Face checkpoint and changes a few tensors;
this module undoes that, so that a GGUF model runs through the same `FAMILIES` entry as its safetensors:

- ARCHITECTURES, the registry of GGUF architectures (`general.architecture`) attn reads: each entry's
  config.json `model_type` and what llama.cpp's converter did to its tensors; the `{arch}.*` metadata becomes
  the config keys (CONFIG_KEYS);
- a tensor name the family asks for (`layers.0.self_attn.q_proj.weight`) becomes its GGUF name
  (`blk.0.attn_q.weight`) through gguf's own TensorNameMap, llama.cpp's table of those renames;
- what the converter changed is undone (`Names.undo`): the rows of Q and K that `LlamaModel` permutes (its
  RoPE pairs adjacent dimensions, Hugging Face's the two halves of a head), Gemma's RMSNorm weights stored as
  1 + w, GPT-2's transposed Conv1D weights; Llama 3.1's RoPE scaling, kept as a tensor of factors
  (rope_freqs.weight), is `gguf_model`'s.

An architecture enters the registry with a test that converts a golden folder as llama.cpp does and runs it
(tests/models/test_gguf.py): llama.cpp's converters reorder some fused tensors (GPT-NeoX's QKV, for one), so an
architecture not checked that way is refused rather than guessed, as are mixture-of-experts files
(`{arch}.expert_count`) and vision and audio towers (`general.type` mmproj, `clip.*` keys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from attncli.models.files.hparams import ModelError
from attncli.models.network.families import out_of_scope


@dataclass(frozen=True)
class Arch:
    """One GGUF architecture: the family's model_type, and what llama.cpp's converter did to its tensors."""

    model_type: str
    permuted: bool = False  # converted by llama.cpp's LlamaModel: Q and K rows interleaved for its RoPE
    norm_plus_one: bool = False  # RMSNorm weights stored as 1 + w (Gemma's converters)
    transposed: tuple[str, ...] = ()  # tensors stored transposed (GPT-2's Conv1D weights), without "blk.N."
    # the layer count of the one size whose scores llama.cpp scales by 1/√(d_model / n_head), not 1/√d_k (no key
    # says so: Gemma 2 and 3 27B, whose query_pre_attn_scalar is d_model / n_head)
    wide_scale_layers: int = 0
    # a SentencePiece vocabulary without merges merges in the order of its tokens, not of its scores (Gemma's
    # scores do not follow its merge order; transformers' GGUF loading reads Gemma's so)
    merges_by_position: bool = False


ARCHITECTURES = {
    "llama": Arch("llama", permuted=True),  # Llama 1-3, Mistral (written as llama), SmolLM 1/2, TinyLlama
    "qwen2": Arch("qwen2"),
    "qwen3": Arch("qwen3"),
    "gemma": Arch("gemma", norm_plus_one=True, merges_by_position=True),
    "gemma2": Arch("gemma2", norm_plus_one=True, wide_scale_layers=46, merges_by_position=True),
    "olmo2": Arch("olmo2"),  # its post-norms and whole-projection q/k norms under their llama.cpp names
    "gemma3": Arch(
        "gemma3_text", norm_plus_one=True, wide_scale_layers=62, merges_by_position=True
    ),  # q/k norms too; sliding layers by their pattern
    "smollm3": Arch("smollm3", permuted=True),  # llama.cpp fixes its RoPE-less layers at every 4th, the default
    "phi3": Arch("phi3"),  # fused qkv and gate_up kept as they are; LongRoPE's factors as two tensors
    "gpt2": Arch("gpt2", transposed=("attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight")),
}
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
    "rope.freq_base_swa": ("rope_local_base_freq",),  # Gemma 3's sliding layers
    "rope.scaling.original_context_length": ("original_max_position_embeddings",),
}
PREFIXES = ("model.", "transformer.", "gpt_neox.", "")  # in front of a family's names in a Hugging Face checkpoint
_LAYER = re.compile(r"^blk\.(\d+)\.")


def architecture(meta: dict, source: str) -> str:
    """`general.architecture`, or ModelError when the file is a mixture of experts, a vision/audio tower, or an
    architecture not in ARCHITECTURES."""
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ModelError(f"{source} has no general.architecture: not a model file")
    if meta.get("general.type") in ("mmproj", "adapter") or arch == "clip" or any(k.startswith("clip.") for k in meta):
        raise ModelError(
            f"{source} is a {meta.get('general.type', 'clip')} file (a vision/audio tower or an adapter), not a "
            "language model: attn reads the text model's attention, so give it the model's own GGUF"
        )
    why = out_of_scope({"num_local_experts": meta.get(f"{arch}.expert_count")})  # the registry's own reasons
    if why is not None:
        raise ModelError(f"{source} ({arch}) is {why}")
    if arch not in ARCHITECTURES:
        raise ModelError(
            f"{source} is a GGUF of architecture {arch!r}; attn reads {', '.join(ARCHITECTURES)} from GGUF (those "
            "whose conversion by llama.cpp it undoes and checks): use the model's safetensors folder"
        )
    return arch


def config_of(meta: dict, arch: str, rows: dict[str, tuple[int, ...]]) -> dict:
    """The config.json a family reader expects, from the `{arch}.*` metadata and the tensors' shapes."""
    c: dict[str, Any] = {"model_type": ARCHITECTURES[arch].model_type}
    for key, names in CONFIG_KEYS.items():
        value = meta.get(f"{arch}.{key}")
        if isinstance(value, list):
            raise ModelError(f"{arch}.{key} differs per layer in this file ({value[:4]}...): not supported")
        if value is not None:
            c |= dict.fromkeys(names, value)
    wide = ARCHITECTURES[arch].wide_scale_layers
    if wide and c.get("num_hidden_layers") == wide and isinstance(c.get("hidden_size"), int):
        c["query_pre_attn_scalar"] = c["hidden_size"] // max(c.get("num_attention_heads") or 1, 1)
    pattern = meta.get(f"{arch}.attention.sliding_window_pattern")  # a period, or per layer whether it slides
    if isinstance(pattern, list):
        c["layer_types"] = ["sliding_attention" if p else "full_attention" for p in pattern]
    elif pattern is not None:
        c["sliding_window_pattern"] = pattern
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
    return c


class Names:
    """The GGUF name of each tensor a family asks for, and what undoes llama.cpp's conversion of it."""

    def __init__(self, arch: str, n_layer: int, config: dict):
        try:
            import gguf  # late: optional (gguf, the gguf extra: GGUF runs only, for its TensorNameMap)
        except ImportError:
            raise ModelError('a GGUF model needs the gguf package (pip install "attncli[gguf]")') from None

        kinds = {name: kind for kind, name in gguf.MODEL_ARCH_NAMES.items()}
        if arch not in kinds:
            raise ModelError(f"GGUF architecture {arch!r} is unknown to the gguf package")
        self._map = gguf.get_tensor_name_map(kinds[arch], n_layer)
        self.arch, self.config = ARCHITECTURES[arch], config

    def gguf_name(self, name: str) -> str | None:  # "layers.0.self_attn.q_proj.weight" -> "blk.0.attn_q.weight"
        for prefix in PREFIXES:
            found = self._map.get_name(prefix + name, try_suffixes=(".weight", ".bias"))
            if found is not None:
                return found
        return None

    def shape(self, gguf_name: str, stored: tuple[int, ...]) -> tuple[int, ...]:  # the stored shape -> the HF one
        return stored[::-1] if self._transposed(gguf_name) else stored

    def _transposed(self, gguf_name: str) -> bool:
        return _LAYER.sub("", gguf_name) in self.arch.transposed

    def undo(self, gguf_name: str, w: np.ndarray) -> np.ndarray:  # the stored tensor -> the Hugging Face one
        """What llama.cpp's converter did to this tensor, undone: Q/K row order, Gemma's 1 + w, GPT-2's transpose."""
        base = _LAYER.sub("", gguf_name)
        if self.arch.permuted and base in ("attn_q.weight", "attn_k.weight", "attn_q.bias", "attn_k.bias"):
            heads = self.config["num_attention_heads"] if base.startswith("attn_q") else self._kv_heads()
            w = unpermute(w, heads)
        if self.arch.norm_plus_one and base.endswith("norm.weight"):
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
