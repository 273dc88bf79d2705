"""A model's weights: the tensors its family asks for, read on first use from the safetensors files.

`open_weights` matches the names a family wants against a checkpoint's (whatever prefix it puts in front) and
checks each shape and dtype; `Weights` reads each tensor lazily (tensorfile.py, one tensor at a time, kept once
read; F32, F16, BF16 and F64 all become float32), the word embedding table row by row.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .folder import Header, check_budget, finite, why
from .hparams import ModelError
from .tensorfile import TensorFile, TensorFileError


class Weights:
    """The tensors a model needs, by their prefix-free names (`encoder.layer.0.attention.self.query.weight`).

    Each tensor is read from its safetensors file on first use, as float32, and kept; the word
    embedding table is read row by row (`rows`), so a short text never reads the whole table.
    """

    def __init__(self, sources: dict[str, tuple[Any, str]], nbytes: int = 0):
        self._sources = sources  # name -> (its TensorFile, name stored in the file)
        self.nbytes = nbytes  # all of them as float32, as priced against ATTN_MAX_MEMORY
        self._cache: dict[str, np.ndarray] = {}
        self._made: dict[tuple, Any] = {}  # what `made` built from the tensors, by its key

    def __getitem__(self, name: str) -> np.ndarray:  # -> the tensor, float32
        if name not in self._cache:
            handle, stored = self._sources[name]
            tensor, all_finite = handle.get_slice(stored).read_checked()  # float32, checked in the reading pass
            self._cache[name] = tensor if all_finite else finite(tensor, stored, "the weights")
        return self._cache[name]

    def joined(self, names: tuple[str, ...]) -> np.ndarray:  # [out_i, in] each -> [in, Σ out_i]; [d_i] -> [Σ d_i]
        """nn.Linear weights (or biases) side by side, transposed to [in, out], in one C-contiguous array made on
        first use and kept instead of its parts: projections that read one input become one product."""
        key = "joined " + " + ".join(names)  # never a tensor's name
        if key not in self._cache:
            parts = [self[name] for name in names]
            joined = np.empty((*parts[0].shape[1:][::-1], sum(len(p) for p in parts)), np.float32)
            at = 0
            for part in parts:  # each part transposed into its columns: one copy, no concatenated array between
                joined[..., at : at + len(part)] = part.T
                at += len(part)
            self._cache[key] = joined
            for name in names:
                del self._cache[name]  # kept once, in the joined array
        return self._cache[key]

    def made(self, key: tuple, make: Callable[[], Any]) -> Any:
        """make(), built on first use and kept under `key`: what a block derives from the tensors once per model
        (a layer's projections) rather than once per forward pass. Never to be changed by its readers."""
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    def shape(self, name: str) -> tuple[int, ...]:
        handle, stored = self._sources[name]
        return tuple(handle.get_slice(stored).get_shape())

    def rows(self, name: str, ids: np.ndarray) -> np.ndarray:  # [n] -> [n, d]
        """Rows `ids` of a 2-D tensor, reading only those rows unless the tensor is already loaded."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if name in self._cache:
            return self._cache[name][ids]
        handle, stored = self._sources[name]
        return finite(_float32(handle.get_slice(stored).rows(ids)), stored, "the weights")


def _float32(a: np.ndarray) -> np.ndarray:  # any float dtype -> float32 (no copy if already float32)
    return a.astype(np.float32, copy=False)


def open_weights(folder: Path, tensors: Header, wanted: dict[str, tuple[int | None, ...]], anchor: str) -> Weights:
    """Open the checkpoint and check that every wanted tensor is there with the wanted shape.

    Names are matched after removing the prefix found in front of `anchor` (`bert.`,
    `transformer.`, or none); everything else in the file (pooler, heads, int64 position_ids,
    GPT-2's attn.bias masks) is never read. `None` in a wanted shape accepts any size.
    """
    files = {name: path for name, (path, _, _) in tensors.items()}
    prefixes = [name[: -len(anchor)] for name in files if name.endswith(anchor)]
    if not prefixes:
        raise ModelError(f"the weights in {folder} have no {anchor}: not a checkpoint of this model type")
    prefix = min(prefixes, key=len)  # "" before "bert."
    names = {name[len(prefix) :]: name for name in files if name.startswith(prefix)}
    names.update({k[:-6] + ".weight": v for k, v in names.items() if k.endswith("LayerNorm.gamma")})
    names.update({k[:-5] + ".bias": v for k, v in names.items() if k.endswith("LayerNorm.beta")})
    handles: dict[Path, Any] = {}
    sources = {}
    for name, shape in wanted.items():
        if name not in names:
            raise ModelError(f"the weights in {folder} lack {prefix + name}")
        path = files[names[name]]
        if path not in handles:
            try:
                handles[path] = TensorFile(path)
            except (OSError, TensorFileError) as e:
                raise ModelError(f"cannot read {path}: {why(e)}") from None
        sliced = handles[path].get_slice(names[name])
        dtype, got = sliced.get_dtype(), tuple(sliced.get_shape())
        if dtype not in ("F32", "F16", "BF16", "F64"):
            raise ModelError(f"{prefix + name} is {dtype}; only F32, F16, BF16 and F64 weights are supported")
        if len(got) != len(shape) or any(w is not None and w != g for w, g in zip(shape, got)):
            want = "[" + ", ".join("*" if w is None else str(w) for w in shape) + "]"
            raise ModelError(f"{prefix + name} has shape {list(got)}, config.json implies {want}")
        sources[name] = (handles[path], names[name])
    return Weights(sources, check_budget(tensors, [names[n] for n in wanted], str(folder)))
