"""A GGUF file (llama.cpp, Ollama, LM Studio) read as untrusted: its metadata, and each tensor dequantized on demand.

The file is parsed by the `gguf` package (llama.cpp's own reader, `pip install "attncli[gguf]"`), which
memory-maps it: opening a file reads its header and metadata, and a tensor's bytes are touched only when
that tensor is dequantized (`GGUFTensors.get_tensor`), so asking for layer 0 of a 0.5B model reads layer 0.
Before that, what the file declares is checked against the file itself (`open_gguf`):

- the magic, the version, at most MAX_COUNT tensors and metadata keys (read by hand, before the parser loops);
- every tensor's type is one attn dequantizes (DEQUANTIZED), its rows are whole blocks of that type, and its
  bytes lie inside the file.

Dequantization is llama.cpp's block formulas as `gguf.quants` implements them in NumPy (F32, F16, BF16, Q8_0,
Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K), one tensor at a time into float32; tests/models/test_gguf.py checks
each type against a reference derived from the formulas.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

from .folder import why
from .hparams import ModelError

MAGIC = b"GGUF"
MAX_COUNT = 1 << 20  # tensors and metadata keys: a real file has hundreds of tensors and a few dozen keys
DEQUANTIZED = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")


def _head(path: Path) -> tuple[int, int, int]:
    """(version, tensor count, metadata key count) from the first 24 bytes, checked before the parser loops."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:4] != MAGIC:
        raise ModelError(
            f"{path} is not a GGUF file (no GGUF magic at its start); --model takes a folder or a GGUF file"
        )
    version, tensors, keys = struct.unpack("<IQQ", head[4:])
    if version not in (2, 3):
        raise ModelError(f"{path} is GGUF version {version}; attn reads versions 2 and 3")
    for what, count in (("tensors", tensors), ("metadata keys", keys)):
        if count > MAX_COUNT:
            raise ModelError(f"{path} declares {count:,} {what}, more than any model has ({MAX_COUNT:,} at most)")
    return version, tensors, keys


class GGUFTensors:
    """The tensors of one GGUF file, by their GGUF names: shapes from the header, float32 values on demand.

    `shape(name)` is NumPy's order (rows first: [out, in] for a linear layer, as in a safetensors file);
    `get_tensor(name)` dequantizes the whole tensor, `rows(name, ids)` only those rows (an embedding table).
    """

    def __init__(self, path: Path, reader: Any):
        self.path = path
        self._tensors = {t.name: t for t in reader.tensors}

    def names(self) -> list[str]:
        return list(self._tensors)

    def type_name(self, name: str) -> str:
        return self._tensors[name].tensor_type.name

    def shape(self, name: str) -> tuple[int, ...]:  # -> [rows, ..., cols]
        return tuple(int(n) for n in reversed(self._tensors[name].shape.tolist()))

    def get_tensor(self, name: str) -> np.ndarray:  # -> shape(name), float32
        t = self._tensors[name]
        return _dequantized(t.data, t.tensor_type).reshape(self.shape(name))

    def rows(self, name: str, ids: np.ndarray) -> np.ndarray:  # [k] -> [k, cols]
        """Rows `ids` of a 2-D tensor: only their blocks are read and dequantized."""
        t = self._tensors[name]
        rows = self.shape(name)[0]
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(self.shape(name)) != 2 or (ids.size and (ids.min() < 0 or ids.max() >= rows)):
            raise ModelError(f"row indices outside {name} of {self.path}")
        data = np.asarray(t.data).reshape(rows, -1)[ids]
        return _dequantized(data, t.tensor_type).reshape(ids.size, self.shape(name)[1])


def _dequantized(data: np.ndarray, qtype: Any) -> np.ndarray:  # [rows, bytes (or elements) per row] -> float32
    from gguf import quants  # (the gguf package is imported by GGUF runs only)

    return np.asarray(quants.dequantize(np.asarray(data), qtype), dtype=np.float32)


def open_gguf(path: Path) -> tuple[dict[str, Any], GGUFTensors]:
    """The metadata (key -> value; arrays of strings as lists) and the tensors of a GGUF file, every tensor's
    type, block structure and byte range checked against the file."""
    _head(path)
    try:
        from gguf import GGML_QUANT_SIZES, GGUFReader  # (a GGUF run only: the package loads in ~0.4 s)
    except ImportError:
        raise ModelError(
            f'{path} is a GGUF file: reading it needs the gguf package (pip install "attncli[gguf]")'
        ) from None
    try:
        reader = GGUFReader(path, "r")
    except Exception as e:  # the parser's own errors on a damaged file: IndexError, ValueError, struct.error...
        raise ModelError(f"cannot read {path} as GGUF: {why(e)}") from None
    size = path.stat().st_size
    for t in reader.tensors:
        kind = t.tensor_type.name
        if kind not in DEQUANTIZED:
            raise ModelError(
                f"{t.name} in {path} is {kind}; attn dequantizes {', '.join(DEQUANTIZED)} (re-quantize the model, "
                "e.g. with llama.cpp's llama-quantize, to one of them)"
            )
        block, block_bytes = GGML_QUANT_SIZES[t.tensor_type]
        shape = [int(n) for n in t.shape.tolist()]
        if not shape or any(n <= 0 for n in shape) or shape[0] % block:
            raise ModelError(f"{t.name} in {path} has shape {shape}: its rows are not whole {kind} blocks of {block}")
        need = int(np.prod(shape, dtype=np.int64)) // block * block_bytes
        if t.data_offset + need > size or int(t.n_bytes) != need:
            raise ModelError(f"{t.name} in {path} declares {need:,} bytes that do not fit in the file ({size:,} bytes)")
    return {key: _value(field) for key, field in reader.fields.items()}, GGUFTensors(path, reader)


def _value(field: Any) -> Any:
    """A metadata field as Python: a number, a string, or a list of them."""
    try:
        return field.contents()
    except Exception as e:
        raise ModelError(f"metadata {field.name} is damaged: {why(e)}") from None
