"""A GGUF file as the parts `load.py` builds a `Model` from: config, family, tensors (with their names as the
family asks for them) and tokenizer, every declared size checked before anything is allocated (and priced by
load.py, once the tables are known).

    parts = gguf_parts(Path("SmolLM2-135M-Instruct.Q4_1.gguf"))
    parts.config["model_type"]                                 # "llama"
    parts.sources["layers.0.self_attn.q_proj.weight"]          # (its handle, "blk.0.attn_q.weight")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attncli.models.files.folder import Header, check_declared, float32_bytes
from attncli.models.files.gguf import GGUFTensors, open_gguf
from attncli.models.files.hparams import ModelError
from attncli.models.network.families import Family, family_of
from attncli.models.opening.gguf_arch import ARCHITECTURES, Names, architecture, config_of
from attncli.models.text.chat import ChatTemplate, gguf_template
from attncli.models.text.gguf_tokenizer import tokenizer_from


def _rope_factors(tensors: GGUFTensors, hp: dict, source: str) -> None:
    """Each RoPE's frequencies divided by the file's rope_freqs [d_rot / 2], in `hp`: llama.cpp's converter stores
    Llama 3.1's scaling as one factor per frequency (1 for the high ones, `factor` for the low,
    1 / ((1 - s) / factor + s) between), so θ_i / rope_freqs_i is transformers' llama3 frequency, to float32's
    rounding of the factor."""
    ropes = list({id(r): r for r in hp.get("ropes") or [] if r is not None}.values())  # each distinct one once
    if not ropes:
        raise ModelError(f"{source} has rope_freqs.weight, but its family has no RoPE")
    factors = tensors.get_tensor("rope_freqs.weight")
    if not (np.isfinite(factors).all() and (factors > 0).all()):
        raise ModelError(f"rope_freqs.weight in {source} holds a factor that is not a positive number")
    for r in ropes:
        if factors.shape != r["inv_freq"].shape:
            raise ModelError(
                f"rope_freqs.weight in {source} has shape {list(factors.shape)}, not one factor per RoPE frequency "
                f"({r['inv_freq'].shape[0]})"
            )
        r["inv_freq"] = (r["inv_freq"] / factors).astype(np.float32)


def _longrope(tensors: GGUFTensors, meta: dict, arch: str, source: str) -> dict:
    """config.json's rope_scaling of a LongRoPE model from rope_factors_long / rope_factors_short [d_rot / 2] and
    the metadata's original length and attention factor (when the file gives one; else the family's default,
    √(1 + ln(factor) / ln(original length)), which is also how llama.cpp's converter computes it)."""
    if "rope_factors_short.weight" not in tensors.names():
        raise ModelError(f"{source} has rope_factors_long.weight but no rope_factors_short.weight")
    long, short = (tensors.get_tensor(f"rope_factors_{k}.weight").reshape(-1) for k in ("long", "short"))
    scaling = {"rope_type": "longrope", "long_factor": long.tolist(), "short_factor": short.tolist()}
    attention = meta.get(f"{arch}.rope.scaling.attn_factor")
    return scaling | ({"attention_factor": attention} if attention is not None else {})


class GGUFHandle:
    """The file's tensors as `Weights` reads a safetensors file (`get_slice(name)`: its shape, its rows, the whole
    tensor checked finite), in Hugging Face's form: llama.cpp's conversion undone (`Names.undo`)."""

    # quants.py dequantizes a chunk of blocks at a time in NumPy passes, which leave the GIL to the pass: read ahead
    overlaps = True

    def __init__(self, tensors: GGUFTensors, names: Names):
        self.tensors, self.names = tensors, names

    def get_slice(self, name: str) -> _Slice:
        return _Slice(self, name)


class _Slice:
    def __init__(self, handle: GGUFHandle, name: str):
        self.handle, self.name = handle, name

    def get_shape(self) -> list[int]:
        return list(self.handle.names.shape(self.name, self.handle.tensors.shape(self.name)))

    def read_checked(self) -> tuple[np.ndarray, bool]:  # -> the Hugging Face tensor, float32; whether all finite
        w = self.handle.names.undo(self.name, self.handle.tensors.get_tensor(self.name))
        return w, bool(np.isfinite(w).all())

    def rows(self, ids) -> np.ndarray:  # [k] -> [k, d]: an embedding table's rows (stored as Hugging Face's)
        return self.handle.tensors.rows(self.name, ids)


@dataclass(frozen=True)
class GGUFParts:
    config: dict  # as config.json would say it
    family: Family
    sources: dict[str, tuple[GGUFHandle, str]]  # the family's tensor name -> (handle, GGUF name); its head's too
    nbytes: int  # the wanted tensors as float32
    hp: dict
    tokenizer: Callable[[], Any]  # builds the tokenizers.Tokenizer
    chat_template: ChatTemplate | None  # tokenizer.chat_template, if the file has one


def gguf_parts(path: Path) -> GGUFParts:
    """Read `path`'s metadata, map it onto a family, check the tensors the family needs (names, shapes, budget)."""
    meta, tensors = open_gguf(path)
    source = str(path)
    arch = architecture(meta, source)
    stored: Header = {n: (path, tensors.type_name(n), tensors.shape(n)) for n in tensors.names()}
    config = config_of(meta, arch, {n: s for n, (_, _, s) in stored.items()})
    if "rope_factors_long.weight" in stored:  # Phi-3's LongRoPE: llama.cpp keeps its factors as two tensors
        config["rope_scaling"] = _longrope(tensors, meta, arch, source)
    family = family_of(config["model_type"])
    assert family is not None  # every ARCHITECTURES entry names a model_type a family serves (test_gguf.py)
    check_declared(config, stored, source)  # before the reader builds anything for those sizes
    try:
        hp, wanted = family.read_config(config)
    except ModelError as e:  # its messages name config.json keys: say where they came from
        raise ModelError(
            f"{source}: its {arch}.* metadata as config.json: {str(e).removeprefix('config.json: ')}"
        ) from None
    if "rope_freqs.weight" in stored:  # Llama 3.1+: llama.cpp keeps its llama3 RoPE scaling as this tensor
        _rope_factors(tensors, hp, source)
    names = Names(arch, hp["n_layer"], config)
    handle = GGUFHandle(tensors, names)
    sources: dict[str, tuple[GGUFHandle, str]] = {}
    for name, shape in wanted.items():
        stored_name = names.gguf_name(name)
        if stored_name is None or stored_name not in stored:
            raise ModelError(f"{source} lacks {stored_name or name} (the {name} of a {config['model_type']} model)")
        got = names.shape(stored_name, stored[stored_name][2])
        if len(got) != len(shape) or any(w is not None and w != g for w, g in zip(shape, got)):
            want = "[" + ", ".join("*" if w is None else str(w) for w in shape) + "]"
            raise ModelError(f"{stored_name} in {source} has shape {list(got)}, its metadata implies {want}")
        sources[name] = (handle, stored_name)
    if family.head is not None and "output.weight" in stored:  # llama.cpp's untied head (else the word table)
        got = names.shape("output.weight", stored["output.weight"][2])
        if len(got) != 2 or got[1] != hp["d_model"]:
            raise ModelError(
                f"output.weight in {source} has shape {list(got)}, its metadata implies [*, {hp['d_model']}]"
            )
        sources[family.head[0]] = (handle, "output.weight")
    nbytes = float32_bytes(stored, [s for _, s in sources.values()])  # the untied head too (priced by load.py)

    def build() -> Any:
        return tokenizer_from(meta, source, merges_by_position=ARCHITECTURES[arch].merges_by_position)

    return GGUFParts(config, family, sources, nbytes, hp, build, gguf_template(meta, source))
