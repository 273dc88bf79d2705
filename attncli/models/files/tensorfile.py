"""A safetensors file read by hand: its header parsed once, each tensor read on demand into NumPy.

safetensors' own NumPy API cannot give BF16 tensors (NumPy has no bfloat16). The format is a
little-endian u64 header length, a JSON header {name: {dtype, shape, data_offsets}}, then the
bytes; so a tensor is one seek and one read of exactly its bytes, and nothing else of the file
is touched (a layer's tensors are read when that layer runs, never the whole checkpoint).
A tensor is read through a memory map of its bytes straight into its float32 array: one pass, no
intermediate copy (the pages of the file are the page cache's, not this process's heap).
BF16 is the top 16 bits of a float32: widening is a 16-bit shift, exact, done in that same pass.

    f = TensorFile("model.safetensors")
    f.get_slice("model.embed_tokens.weight").get_shape()     # [vocab, d_model], nothing read
    f.get_tensor("model.norm.weight")                        # float32 (BF16 widened exactly)
"""

from __future__ import annotations

import contextlib
import json
import math
import mmap
import os
import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np

_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "<u2",  # widened to float32 when read
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
_BLOCK = 2**17  # values per step of a read: a block's 512 KiB of float32 is still in L2 when it is checked finite
MAX_HEADER = 100 * 2**20  # the safetensors format's own limit on its JSON header
MAX_TENSORS = 65_536  # tensors in one file: a real shard holds a few thousand at most
_ITEMSIZE = {name: np.dtype(code).itemsize for name, code in _DTYPES.items()}


class TensorFileError(ValueError):
    """A file that is not a readable safetensors file; the message says what is wrong."""


def bf16_to_float32(raw, out=None):  # [...] uint16, out [...] float32 or None -> [...] float32
    """BF16 bit patterns to float32, exactly: each is the upper half of a float32. One pass of a shift written
    into `out` (a new array if None): the widened uint32 is never an array of its own.

    >>> bf16_to_float32(np.array([0x3F80, 0xC040, 0x7F80], dtype=np.uint16)).tolist()
    [1.0, -3.0, inf]
    """
    raw = np.asarray(raw, dtype=np.uint16)
    out = np.empty(raw.shape, np.float32) if out is None else out
    np.left_shift(raw, 16, out=out.view(np.uint32), dtype=np.uint32)
    return out


_INF_BITS = {"BF16": 0x7F80, "F16": 0x7C00, "F32": 0x7F800000}  # the exponent all ones: ±inf and NaN from there


def _finite_bits(values, dtype: str) -> bool:  # [m >= 1] floats stored as `dtype` (BF16: uint16), or float32 -> ()
    """Whether no value is ±inf or NaN, i.e. has every exponent bit set, read from its bit patterns in two SIMD
    reductions and no temporary array (np.isfinite writes a bool array first): the largest pattern read as a signed
    integer is the largest with the sign bit clear (non-finite from `inf` on) unless all are negative (then it is
    below `inf`); the largest read unsigned is the largest with the sign bit set (non-finite from sign | inf on)
    unless none is, and then it is below sign.

    >>> bf16 = np.array([0x3F80, 0xFF7F, 0x7F7F], np.uint16)  # 1, -max, +max
    >>> _finite_bits(bf16, "BF16"), _finite_bits(np.append(bf16, 0xFF80), "BF16")  # ... and -inf
    (True, False)
    >>> _finite_bits(np.float32([-3e38, 0.0, np.nan]), "F32"), _finite_bits(np.float32([-3e38, 1.0]), "F64")
    (False, True)
    """
    size, inf = values.itemsize, _INF_BITS.get(dtype, _INF_BITS["F32"])  # F64 is checked as the float32 it became
    sign = 1 << (8 * size - 1)
    return int(values.view(f"<i{size}").max()) < inf and int(values.view(f"<u{size}").max()) < sign | inf


def _mapped(fileno: int, length: int, offset: int) -> mmap.mmap:
    """A read-only map of `length` bytes of the file from `offset`; on Linux every page mapped in the one call
    (MAP_POPULATE), not page by page on first touch."""
    if hasattr(mmap, "MAP_POPULATE"):
        return mmap.mmap(fileno, length, mmap.MAP_SHARED | mmap.MAP_POPULATE, mmap.PROT_READ, offset=offset)
    return mmap.mmap(fileno, length, access=mmap.ACCESS_READ, offset=offset)


def _close(mm: mmap.mmap) -> None:
    """Close a map now, or, while an array still points into it (a frame of a traceback on its way up holds a
    slice), when the last such array goes: a BufferError here would hide the error that is being raised."""
    with contextlib.suppress(BufferError):
        mm.close()


def _widen(raw, dtype: str, out):  # [...] stored dtype, out [...] float32 -> out
    """A stored float tensor as float32 in `out`: BF16 by the shift, F16 exactly, F64 rounded (as astype)."""
    if dtype == "BF16":
        return bf16_to_float32(raw, out)
    with np.errstate(over="ignore"):  # an F64 beyond float32's range becomes inf, which the finite check reports
        np.copyto(out, raw, casting="same_kind")
    return out


class TensorSlice:
    """One tensor's dtype and shape, and its leading-axis rows read on demand (`table.rows(ids)`)."""

    def __init__(self, file: TensorFile, name: str):
        entry = file.entries[name]
        self._file, self._name, self._dtype, self._shape = file, name, entry["dtype"], tuple(entry["shape"])
        self._begin, self._end = entry["data_offsets"]

    def get_dtype(self) -> str:
        return self._dtype

    def get_shape(self) -> list[int]:
        return list(self._shape)

    def rows(self, ids) -> np.ndarray:  # [k] row indices of [n, ...] -> [k, ...]
        """Rows `ids` (in range, any order, repeats allowed) through a memory map of the tensor's bytes, made once
        and kept by the file (`TensorFile.table`): only the pages they sit in are read, and the file is neither
        opened once a row nor mapped once a text (a map cost MiniLM's 10-token forward 3% of its time)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if not self._shape or (ids.size and (ids.min() < 0 or ids.max() >= self._shape[0])):
            raise TensorFileError("row indices outside the tensor")
        if ids.size == 0 or 0 in self._shape:  # nothing to map (a map of 0 bytes is an error)
            out = np.empty((ids.size, *self._shape[1:]), _DTYPES[self._dtype])
        else:
            out = self._file.table(self._name)[ids].view(np.ndarray)  # fancy indexing copied the rows
        return bf16_to_float32(out) if self._dtype == "BF16" else out

    def read(self) -> np.ndarray:  # -> the whole tensor, its shape
        """The tensor: float32 for every float dtype (BF16 and F16 exactly), else its own dtype."""
        return self.read_checked()[0]

    def read_checked(self) -> tuple[np.ndarray, bool]:  # -> the whole tensor, whether every value is finite
        """`read()`, and whether every value is finite, found in the same pass (each block checked while cached)."""
        float_kind = self._dtype in ("BF16", "F16", "F32", "F64")
        out = fresh(self._shape, np.float32 if float_kind else np.dtype(_DTYPES[self._dtype]))
        ok = self._file.read_into(self._dtype, self._begin, out.reshape(-1))
        return out, ok


_MAPPED = 4 * 2**20  # bytes from which `fresh` maps memory of its own (NumPy's threshold for huge pages)


def fresh(shape: tuple[int, ...], dtype) -> np.ndarray:  # -> [shape] of dtype, writable, uninitialised
    """An array for a tensor that is kept: np.empty, or from 4 MiB an anonymous private map of 4 KiB pages.

    NumPy advises huge pages for arrays of 4 MiB or more; where transparent huge pages compact memory on the
    first touch (defrag=madvise, as on the VM this was measured on), filling 1.4 GB of weights cost 0.7-1.8 s of
    system time against 0.5 s with 4 KiB pages (torch's allocator asks for none either).
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < _MAPPED or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dtype)
    buffer = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return np.frombuffer(buffer, dtype).reshape(shape)


def header_bytes(fh: BinaryIO) -> bytes:
    """The JSON header of the safetensors file open in `fh`, unparsed, once its length (MAX_HEADER, safetensors'
    own limit) and its count of entries were checked: each tensor's entry takes 4 colons ("name": {"dtype": ..,
    "shape": .., "data_offsets": ..}), counted before the JSON is parsed, whose objects would take 10 to 20 times
    the header's bytes (a header of 10^6 empty entries took 14.5 s and 978 MB in safetensors' own parser)."""
    head = fh.read(8)
    if len(head) < 8:
        raise TensorFileError("too short for a safetensors header")
    (size,) = struct.unpack("<Q", head)
    if size > MAX_HEADER:
        raise TensorFileError(f"header of {size:,} bytes is larger than safetensors allows ({MAX_HEADER:,})")
    blob = fh.read(size)
    if len(blob) < size:
        raise TensorFileError("the header is cut short")
    if blob.count(b":") > 4 * MAX_TENSORS + 4096:
        raise TensorFileError(f"the header holds more entries than {MAX_TENSORS:,} tensors would")
    return blob


class TensorFile:
    """A safetensors file: `keys()`, `get_slice(name)`, `get_tensor(name)` (float32 for BF16)."""

    overlaps = True  # a read is a few NumPy passes over 512 KiB blocks, which leave the GIL to other threads

    def __init__(self, path: str | Path):
        self.path = Path(path)
        with open(self.path, "rb") as fh:
            blob = header_bytes(fh)
            size = len(blob)
            fh.seek(0, 2)
            file_size = fh.tell()
        try:
            header = json.loads(blob.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise TensorFileError(f"the header is not JSON: {e}") from None
        if not isinstance(header, dict):
            raise TensorFileError("the header is not a JSON object")
        if len(header) > MAX_TENSORS + 1:
            raise TensorFileError(f"the header holds {len(header):,} entries, more than {MAX_TENSORS:,} tensors")
        self._data = 8 + size
        self._tables: dict[str, np.memmap] = {}  # `table`'s maps, by tensor name
        self.entries: dict[str, dict] = {}
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            self.entries[name] = self._checked(name, entry, file_size - self._data)

    @staticmethod
    def _checked(name: str, entry, data_size: int) -> dict:
        """The entry if it is a known dtype, an integer shape and offsets inside the file that fit it."""
        try:
            dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
            ok = all(isinstance(v, int) and v >= 0 for v in (*shape, begin, end))
        except (TypeError, KeyError, ValueError):
            ok = False
        if not ok:
            raise TensorFileError(f"tensor {name} has a malformed entry in the header")
        if dtype not in _DTYPES:
            raise TensorFileError(f"tensor {name} has unknown dtype {dtype}")
        if end - begin != math.prod(shape) * _ITEMSIZE[dtype] or end > data_size:
            raise TensorFileError(f"tensor {name}: its offsets do not fit its shape or the file")
        return entry

    def __enter__(self) -> TensorFile:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def keys(self) -> list[str]:
        return list(self.entries)

    def table(self, name: str) -> np.memmap:  # -> [shape] the tensor's stored values (BF16 as uint16), read-only
        """A memory map of one tensor's bytes, made on first use and kept with the file (its rows are read through
        it); the tensor is known to hold bytes (`TensorSlice.rows` maps no empty tensor)."""
        if name not in self._tables:
            entry = self.entries[name]
            offset, dtype, shape = self.offset(entry["data_offsets"][0]), _DTYPES[entry["dtype"]], tuple(entry["shape"])
            self._tables[name] = np.memmap(self.path, dtype=dtype, mode="r", offset=offset, shape=shape)
        return self._tables[name]

    def get_slice(self, name: str) -> TensorSlice:
        return TensorSlice(self, name)

    def get_tensor(self, name: str) -> np.ndarray:
        return self.get_slice(name).read()

    def offset(self, begin: int) -> int:
        """The file position of a tensor whose data_offsets start at `begin`."""
        return self._data + begin

    def read_into(self, dtype: str, begin: int, out: np.ndarray) -> bool:  # out [count] contiguous -> all finite
        """The first `out.size` elements of the tensor whose bytes start at `begin`, written into `out` (float32
        for a float dtype, else the stored dtype) through a memory map of exactly those bytes, `_BLOCK` values at a
        time, each block checked finite while it is in cache. True when every value is finite (or not a float)."""
        raw_dtype = np.dtype(_DTYPES[dtype])
        start, size = self._data + begin, out.size * raw_dtype.itemsize
        if size == 0:  # nothing to map (a map of 0 bytes is an error)
            return True
        base = start - start % mmap.ALLOCATIONGRANULARITY  # a map begins on a page boundary
        ok = True
        with open(self.path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size < start + size:
                raise TensorFileError(f"{self.path.name} is cut short")
            mm = _mapped(fh.fileno(), start + size - base, base)
            try:
                raw = np.frombuffer(mm, raw_dtype, out.size, offset=start - base)
                try:
                    for at in range(0, out.size, _BLOCK):
                        block = out[at : at + _BLOCK]
                        if out.dtype == raw_dtype:
                            np.copyto(block, raw[at : at + _BLOCK])
                        else:
                            _widen(raw[at : at + _BLOCK], dtype, block)
                        if ok and block.dtype.kind == "f":  # the stored bits (F64: the float32 ones, may be inf)
                            ok = _finite_bits(raw[at : at + _BLOCK] if dtype in _INF_BITS else block, dtype)
                finally:
                    del raw  # the map closes only once no array points into it
            finally:
                _close(mm)
        return ok
