"""A GGUF file (llama.cpp, Ollama, LM Studio) read as untrusted: its metadata, and each tensor dequantized on demand.

The header, the metadata and the tensor table are parsed here, every length and count checked against the
bytes left before it is read (a string's length, an array's count, a tensor's dimensions: a file cannot make
this loop longer than its own size, nor allocate more than it holds); the data is memory-mapped, and a tensor's
bytes are touched only when that tensor is dequantized (`GGUFTensors.get_tensor`), so asking for layer 0 of a
0.5B model reads layer 0. Before any of it runs, `open_gguf` checks:

- the magic, the version (2 or 3), at most MAX_COUNT tensors and metadata keys, arrays that do not nest;
- every metadata array's count, before it is read: at most MAX_ITEMS items, an array of strings priced
  against ATTN_MAX_MEMORY (STRING_BYTES each); an array of numbers longer than LISTED stays a read-only NumPy
  view of the file (a vocabulary's scores and token types: nothing copied), a short one is a list;
- every tensor's type is one attn dequantizes (quants.py's DEQUANTIZED), at most 4 dimensions, rows of whole
  blocks of its type, and its bytes inside the file's data.

Dequantization is quants.py's: every ggml type the `gguf` package (llama.cpp's own Python library) dequantizes,
vectorized over blocks in NumPy, bit-for-bit gguf's values, one tensor (or a few rows) at a time into float32; a
type it does not read is refused by name here, before any tensor is read. (gguf's own GGUFReader is not used: it
makes two NumPy views of every string of the vocabulary, 5 s and 200 MB for SmolLM2's 49,152 tokens and 48,900
merges; this loop, 0.1 s.)
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from attncli.models.files.folder import why
from attncli.models.files.hparams import ModelError
from attncli.models.files.quants import QuantType, dequantize, quant_type
from attncli.models.files.tensorfile import fresh
from attncli.pipeline.budget import ENV, max_bytes_from
from attncli.pipeline.read import human_bytes

MAGIC = b"GGUF"
MAX_COUNT = 1 << 20  # tensors and metadata keys: a real file has hundreds of tensors and a few dozen keys
MAX_DIMS = 4  # ggml's GGML_MAX_DIMS
SCALARS = {  # GGUF value type -> struct format
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"
}  # fmt: skip
STRING, ARRAY = 8, 9
DEQUANTIZE_ROWS_BYTES = 16 * 2**20  # float32 output of one call of the dequantizer (`GGUFTensors.get_tensor`)
MAX_ITEMS = 1 << 22  # items of one metadata array: the largest vocabularies (and merges) are ~260,000
LISTED = 1024  # a number array up to this long is a list (a value per layer); longer, a read-only NumPy view
STRING_BYTES = 80  # one string of an array as Python holds it beside its characters: its object and list slot


def _priced(need: int, what: str) -> None:
    """ModelError when `need` bytes are more than ATTN_MAX_MEMORY (checked before they are allocated)."""
    budget = max_bytes_from(os.environ)
    if budget is not None and need > budget:
        raise ModelError(f"{what} needs {human_bytes(need)} to read, more than {ENV} ({human_bytes(budget)})")


class _Cursor:
    """Reads a GGUF's header from a buffer, each read checked against the bytes left (ModelError when short)."""

    def __init__(self, buf: memoryview, path: Path):
        self.buf, self.pos, self.path = buf, 0, path

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise ModelError(f"{self.path} is cut short: {what} at byte {self.pos:,} runs past its end")

    def scalar(self, fmt: str, what: str) -> Any:
        size = struct.calcsize(fmt)
        self.need(size, what)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self, what: str) -> str:
        n = self.scalar("<Q", what)
        self.need(n, what)
        raw = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("utf-8", errors="replace")  # llama.cpp keeps such tokens as bytes; so does the BPE

    def value(self, kind: int, what: str) -> Any:
        if kind in SCALARS:
            return self.scalar(SCALARS[kind], what)
        if kind == STRING:
            return self.string(what)
        if kind != ARRAY:
            raise ModelError(f"{self.path}: {what} has unknown value type {kind}")
        item, count = self.scalar("<I", what), self.scalar("<Q", what)
        if item == ARRAY:
            raise ModelError(f"{self.path}: {what} is an array of arrays, which no model's metadata is")
        if count > MAX_ITEMS:  # from the count, before a byte of it is read or a loop runs
            raise ModelError(
                f"{self.path}: {what} declares {count:,} items, more than any model's metadata holds "
                f"({MAX_ITEMS:,} at most: a vocabulary is a few hundred thousand tokens)"
            )
        smallest = 8 if item == STRING else struct.calcsize(SCALARS.get(item, "<B"))
        self.need(count * smallest, what)  # at least this many bytes follow, else it lies about its count
        if item in SCALARS and item != 7:  # numbers: one view of the map, not a loop
            dtype = np.dtype(SCALARS[item])
            view = np.frombuffer(self.buf, dtype, count, self.pos)  # read-only: the file's own bytes
            self.pos += count * dtype.itemsize
            return view.tolist() if count <= LISTED else view
        if item == STRING:
            _priced(count * STRING_BYTES, f"{self.path}: {what}, {count:,} strings,")
            return self._strings(count, what)
        return [self.value(item, what) for _ in range(count)]

    def _strings(self, count: int, what: str) -> list[str]:
        """`count` strings (a vocabulary, its merges): `string` unrolled, each length checked the same way."""
        buf, pos, end, length, out = self.buf, self.pos, len(self.buf), struct.Struct("<Q").unpack_from, []
        for _ in range(count):
            if pos + 8 > end or pos + 8 + length(buf, pos)[0] > end:
                self.pos = pos
                self.need(end - pos + 1, what)  # raises: the string runs past the end
            n = length(buf, pos)[0]
            out.append(str(buf[pos + 8 : pos + 8 + n], "utf-8", "replace"))
            pos += 8 + n
        self.pos = pos
        return out


def _head(path: Path, cur: _Cursor) -> tuple[int, int]:
    """(tensor count, metadata key count) from the first 24 bytes, checked before anything loops over them."""
    if len(cur.buf) < 24 or bytes(cur.buf[:4]) != MAGIC:
        raise ModelError(f"{path} is not a folder, and not a GGUF file (no GGUF magic at its start)")
    cur.pos = 4
    version, tensors, keys = cur.scalar("<I", "version"), cur.scalar("<Q", "count"), cur.scalar("<Q", "count")
    if version not in (2, 3):
        raise ModelError(f"{path} is GGUF version {version}; attn reads versions 2 and 3")
    for what, count in (("tensors", tensors), ("metadata keys", keys)):
        if count > MAX_COUNT:
            raise ModelError(f"{path} declares {count:,} {what}, more than any model has ({MAX_COUNT:,} at most)")
    return tensors, keys


class GGUFTensors:
    """The tensors of one GGUF file, by their GGUF names: shapes from the header, float32 values on demand.

    `shape(name)` is NumPy's order (rows first: [out, in] for a linear layer, as in a safetensors file);
    `get_tensor(name)` dequantizes the whole tensor, `rows(name, ids)` only those rows (an embedding table).
    """

    def __init__(self, path: Path, data: np.ndarray, table: dict[str, tuple[QuantType, tuple[int, ...], int, int]]):
        self.path, self._data = path, data  # the whole file, memory-mapped read-only
        self._table = table  # name -> (ggml type, NumPy shape, first byte, bytes)

    def names(self) -> list[str]:
        return list(self._table)

    def type_name(self, name: str) -> str:
        return self._table[name][0].name

    def shape(self, name: str) -> tuple[int, ...]:  # -> [rows, ..., cols]
        return self._table[name][1]

    def _raw(self, name: str) -> np.ndarray:  # -> [rows, bytes per row] uint8, a view of the map
        _, shape, begin, size = self._table[name]
        rows = int(np.prod(shape[:-1], dtype=np.int64))
        return self._data[begin : begin + size].reshape(rows, size // max(rows, 1))

    def get_tensor(self, name: str) -> np.ndarray:  # -> shape(name), float32
        """The whole tensor, dequantized DEQUANTIZE_ROWS_BYTES of output at a time into its one array (a block's
        values depend on its bytes alone, so the chunks give the bits of one call), so that the dequantizer's own
        arrays stay small beside a 235 MB matrix of an 8B model."""
        raw, kind = self._raw(name), self._table[name][0]
        shape = self.shape(name)
        out = fresh((len(raw), math.prod(shape) // max(len(raw), 1)), np.float32)
        step = max(1, DEQUANTIZE_ROWS_BYTES // max(4 * out.shape[1], 1))
        for a in range(0, len(raw), step):
            out[a : a + step] = dequantize(raw[a : a + step], kind)
        return out.reshape(shape)

    def rows(self, name: str, ids: np.ndarray) -> np.ndarray:  # [k] -> [k, cols]
        """Rows `ids` of a 2-D tensor: only their blocks are read and dequantized."""
        shape = self.shape(name)
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(shape) != 2 or (ids.size and (ids.min() < 0 or ids.max() >= shape[0])):
            raise ModelError(f"row indices outside {name} of {self.path}")
        return dequantize(self._raw(name)[ids], self._table[name][0]).reshape(ids.size, shape[1])


def open_gguf(path: Path) -> tuple[dict[str, Any], GGUFTensors]:
    """The metadata (key -> value; arrays as lists, long arrays of numbers as NumPy views) and the tensors of a
    GGUF file, every tensor's type, block structure and byte range checked against the file."""
    try:
        data = np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size else np.zeros(0, np.uint8)
    except (OSError, ValueError) as e:
        raise ModelError(f"cannot read {path}: {why(e)}") from None
    cur = _Cursor(data.data, path)
    n_tensors, n_keys = _head(path, cur)
    meta: dict[str, Any] = {}
    for _ in range(n_keys):
        key = cur.string("a metadata key")
        meta[key] = cur.value(cur.scalar("<I", key), key)
    infos = []
    for _ in range(n_tensors):
        name = cur.string("a tensor name")
        dims = cur.scalar("<I", name)
        if not 1 <= dims <= MAX_DIMS:
            raise ModelError(f"{name} in {path} has {dims} dimensions; ggml tensors have 1 to {MAX_DIMS}")
        shape = [cur.scalar("<Q", name) for _ in range(dims)]
        infos.append((name, shape, cur.scalar("<I", name), cur.scalar("<Q", name)))
    align = meta.get("general.alignment", 32)
    if not isinstance(align, int) or align <= 0 or align & (align - 1) or align > 1 << 16:
        raise ModelError(f"{path}: general.alignment {align!r} is not a power of two")
    start = -(-cur.pos // align) * align
    table = {}
    for name, shape, kind_id, offset in infos:
        kind = quant_type(kind_id, f"{name} in {path}")
        block, block_bytes = kind.block, kind.size
        if any(n <= 0 for n in shape) or shape[0] % block:
            raise ModelError(f"{name} in {path} has shape {shape}: not whole {kind.name} blocks of {block} in the file")
        size = math.prod(shape) // block * block_bytes
        if start + offset + size > len(data):
            raise ModelError(
                f"{name} in {path} declares {size:,} bytes that do not fit in the file ({len(data):,} bytes)"
            )
        table[name] = (kind, tuple(reversed(shape)), start + offset, size)
    return meta, GGUFTensors(path, data, table)
