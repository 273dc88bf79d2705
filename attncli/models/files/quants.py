"""The ggml tensor types of a GGUF file, one registry: type id -> name, values per block, bytes per block, dequantizer.

Each dequantizer turns whole blocks into float32 with llama.cpp's formulas (ggml-quants.c's `dequantize_row_*`;
the block layouts of ggml-common.h), vectorized over every block of a chunk at once: NumPy's shifts, masks,
table look-ups and products, which release the GIL, so that the read-ahead thread (readahead.py) dequantizes the
next layer while the pass computes. The float operations are the ones the `gguf` package's
`gguf.quants.dequantize` does (llama.cpp's reference formulas), in the same order (a scale times a quant, then
minus a minimum: two roundings, never fused), so the values are bit-for-bit its; tests/models/test_quants.py
checks every type on random blocks against it. (Only the look-up tables differ in form: a table of values
indexed by the quants where gguf converts, masks and compares; each entry is the same float32.)

The types and their formulas (d, m: fp16 scales; q: the quants; sc, mn: a sub-block's scale and minimum):

- F32, F16, BF16: the value itself, widened exactly.
- Q4_0, Q5_0, Q8_0: d·q, q signed (4, 5 or 8 bits); Q4_1, Q5_1: d·q + m. Blocks of 32.
- Q2_K, Q4_K, Q5_K: (d·sc)·q − dmin·mn; Q3_K, Q6_K: (d·sc)·q, sc signed. Super-blocks of 256 (ggml PR #1684).
- TQ1_0, TQ2_0: d·t, t ∈ {−1, 0, 1} ("ternary", BitNet b1.58: Ma et al. 2024), base-3 or 2-bit packed.
- MXFP4: 2^(e−127)·v, v an E2M1 value (OCP Microscaling Formats v1.0), blocks of 32 with one E8M0 exponent e
  (as ggml: the table holds 2v, the scale is halved); NVFP4: blocks of 16 with an unsigned E4M3 scale, four to a
  block of 64.
- IQ4_NL, IQ4_XS: d·k[q], k a non-linear 16-value table; IQ4_XS with 6-bit sub-block scales.
- IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: a sub-block scale × a row of a lattice grid (8 or 4 values) × signs
  ("QuIP#", Tseng et al. 2024, E8 lattice codebooks); IQ1_S, IQ1_M: scale × (grid row ± 1/8). The grids are
  llama.cpp's (ggml-common.h), kept as data in iq_grids.py.

Any other type (Q8_1, Q8_K, the integer types, F64, Q1_0 ...) is refused by name (`quant_type`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from attncli.models.files.hparams import ModelError
from attncli.models.files.iq_grids import grid_indices

F32 = np.float32
CHUNK = 1 << 16  # values dequantized at once: the temporaries of a chunk (a few MB) stay in cache

Blocks = np.ndarray  # [n, bytes per block] uint8
Dequantizer = Callable[[Blocks], np.ndarray]  # [n, bytes per block] uint8 -> [n, values per block] float32


@dataclass(frozen=True)
class QuantType:
    """One ggml type: `block` values stored in `size` bytes; `dequantize` None when attn cannot read it."""

    id: int
    name: str
    block: int
    size: int
    dequantize: Dequantizer | None


def _f16(b: Blocks, at: int) -> np.ndarray:  # [n, bytes] -> [n, 1] float32: the fp16 at byte `at` of each block
    return b[:, at : at + 2].view(np.float16).astype(F32)


def _bits(b: np.ndarray, shifts: tuple[int, ...], mask: int) -> np.ndarray:  # [..., k] -> [..., len(shifts), k]
    """(b >> s) & mask for each shift s, stacked before the last axis (a byte's fields, lowest first).

    >>> _bits(np.array([[0x21]], np.uint8), (0, 4), 0xF).tolist()
    [[[1], [2]]]
    """
    s = np.array(shifts, dtype=b.dtype).reshape(len(shifts), 1)
    return (b[..., None, :] >> s) & b.dtype.type(mask)


# the legacy types: blocks of 32 (ggml-common.h block_q4_0 ... block_q8_0)


def _q4_0(b: Blocks) -> np.ndarray:  # [n, 18] -> [n, 32]
    q = _bits(b[:, 2:], (0, 4), 0xF).reshape(len(b), 32)  # low nibbles are values 0-15, high ones 16-31
    return _f16(b, 0) * (q.view(np.int8) - np.int8(8)).astype(F32)


def _q4_1(b: Blocks) -> np.ndarray:  # [n, 20] -> [n, 32]
    q = _bits(b[:, 4:], (0, 4), 0xF).reshape(len(b), 32)
    return _f16(b, 0) * q.astype(F32) + _f16(b, 2)


def _fifth_bits(qh: np.ndarray) -> np.ndarray:  # [n, 4] uint8 -> [n, 32] uint8: bit j of the little-endian u32, << 4
    return (np.unpackbits(qh, axis=-1, bitorder="little") << np.uint8(4)).astype(np.uint8)


def _q5_0(b: Blocks) -> np.ndarray:  # [n, 22] -> [n, 32]
    q = _bits(b[:, 6:], (0, 4), 0xF).reshape(len(b), 32) | _fifth_bits(b[:, 2:6])
    return _f16(b, 0) * (q.view(np.int8) - np.int8(16)).astype(F32)


def _q5_1(b: Blocks) -> np.ndarray:  # [n, 24] -> [n, 32]
    q = _bits(b[:, 8:], (0, 4), 0xF).reshape(len(b), 32) | _fifth_bits(b[:, 4:8])
    return _f16(b, 0) * q.astype(F32) + _f16(b, 2)


def _q8_0(b: Blocks) -> np.ndarray:  # [n, 34] -> [n, 32]
    return b[:, 2:].view(np.int8).astype(F32) * _f16(b, 0)


# the K-quants: super-blocks of 256 (ggml-common.h block_q2_K ... block_q6_K)


def _q2_k(b: Blocks) -> np.ndarray:  # [n, 84] -> [n, 256]
    n, sc = len(b), b[:, :16]
    dl = (_f16(b, 80) * (sc & np.uint8(0xF)).astype(F32)).reshape(n, 16, 1)
    ml = (_f16(b, 82) * (sc >> np.uint8(4)).astype(F32)).reshape(n, 16, 1)
    q = _bits(b[:, 16:80].reshape(n, 2, 32), (0, 2, 4, 6), 3).reshape(n, 16, 16)  # [half, shift, 32]
    return (dl * q.astype(F32) - ml).reshape(n, 256)


def _q3_k(b: Blocks) -> np.ndarray:  # [n, 110] -> [n, 256]
    n, sc = len(b), b[:, 96:108]
    low = _bits(sc[:, :8], (0, 4), 0xF).reshape(n, 16)  # 6-bit scales: 4 low bits, then 2 high bits
    high = _bits(sc[:, 8:], (0, 2, 4, 6), 3).reshape(n, 16)
    scale = ((low | (high << np.uint8(4))).view(np.int8) - np.int8(32)).astype(F32)
    dl = (_f16(b, 108) * scale).reshape(n, 16, 1)
    q = _bits(b[:, 32:96].reshape(n, 2, 32), (0, 2, 4, 6), 3).reshape(n, 16, 16)
    hmask = _bits(b[:, :32], tuple(range(8)), 1).reshape(n, 16, 16)  # a clear bit subtracts 4
    q = q.view(np.int8) - ((hmask ^ np.uint8(1)) << np.uint8(2)).view(np.int8)
    return (dl * q.astype(F32)).reshape(n, 256)


def _scale_min_k4(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # [n, 12] -> ([n, 8], [n, 8]) uint8, 6 bits each
    """Q4_K's and Q5_K's eight 6-bit scales and minimums (ggml-quants.c get_scale_min_k4)."""
    d, m, both = s[:, 0:4], s[:, 4:8], s[:, 8:12]
    six, top = np.uint8(0x3F), np.uint8(0x30)
    scales = np.concatenate([d & six, (both & np.uint8(0xF)) | ((d >> np.uint8(2)) & top)], axis=1)
    mins = np.concatenate([m & six, (both >> np.uint8(4)) | ((m >> np.uint8(2)) & top)], axis=1)
    return scales, mins


def _q4_k(b: Blocks) -> np.ndarray:  # [n, 144] -> [n, 256]
    n = len(b)
    sc, mn = _scale_min_k4(b[:, 4:16])
    dl = (_f16(b, 0) * sc.astype(F32)).reshape(n, 8, 1)
    ml = (_f16(b, 2) * mn.astype(F32)).reshape(n, 8, 1)
    q = _bits(b[:, 16:].reshape(n, 4, 32), (0, 4), 0xF).reshape(n, 8, 32)
    return (dl * q.astype(F32) - ml).reshape(n, 256)


def _q5_k(b: Blocks) -> np.ndarray:  # [n, 176] -> [n, 256]
    n = len(b)
    sc, mn = _scale_min_k4(b[:, 4:16])
    dl = (_f16(b, 0) * sc.astype(F32)).reshape(n, 8, 1)
    ml = (_f16(b, 2) * mn.astype(F32)).reshape(n, 8, 1)
    q = _bits(b[:, 48:].reshape(n, 4, 32), (0, 4), 0xF).reshape(n, 8, 32)
    q |= _bits(b[:, 16:48], tuple(range(8)), 1).reshape(n, 8, 32) << np.uint8(4)
    return (dl * q.astype(F32) - ml).reshape(n, 256)


def _q6_k(b: Blocks) -> np.ndarray:  # [n, 210] -> [n, 256]
    n = len(b)
    dl = (_f16(b, 208) * b[:, 192:208].view(np.int8).astype(F32)).reshape(n, 16, 1)
    low = _bits(b[:, :128].reshape(n, 2, 64), (0, 4), 0xF).reshape(n, 8, 32)  # [half, nibble, 64]
    high = _bits(b[:, 128:192].reshape(n, 2, 32), (0, 2, 4, 6), 3).reshape(n, 8, 32)  # [half, shift, 32]
    q = (low | (high << np.uint8(4))).view(np.int8) - np.int8(32)
    return (dl * q.reshape(n, 16, 16).astype(F32)).reshape(n, 256)


# ternary types (ggml-common.h block_tq1_0, block_tq2_0)


def _tq1_0(b: Blocks) -> np.ndarray:  # [n, 54] -> [n, 256]
    """Five trits a byte as a fixed-point fraction of 3⁵ = 243: trit i is the integer part of 3·(byte·3ⁱ mod 256)."""
    n = len(b)
    five = np.array([1, 3, 9, 27, 81], dtype=np.uint8).reshape(5, 1)
    parts = [
        (b[:, :32, None].transpose(0, 2, 1) * five).reshape(n, 160),  # uint8 products wrap: the mod 256
        (b[:, 32:48, None].transpose(0, 2, 1) * five).reshape(n, 80),
        (b[:, 48:52, None].transpose(0, 2, 1) * five[:4]).reshape(n, 16),
    ]
    t = ((np.concatenate(parts, axis=1).astype(np.uint16) * np.uint16(3)) >> np.uint16(8)).astype(np.int8)
    return _f16(b, 52) * (t - np.int8(1)).astype(F32)


def _tq2_0(b: Blocks) -> np.ndarray:  # [n, 66] -> [n, 256]
    n = len(b)
    t = _bits(b[:, :64].reshape(n, 2, 32), (0, 2, 4, 6), 3).reshape(n, 256).view(np.int8)
    return _f16(b, 64) * (t - np.int8(1)).astype(F32)


# 4-bit floats (OCP MX v1.0; NVIDIA's NVFP4)

E2M1 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=F32)  # E2M1's values, doubled


def _mxfp4(b: Blocks) -> np.ndarray:  # [n, 17] -> [n, 32]
    e = b[:, :1].astype(np.uint32)
    bits = np.where(e < 2, np.uint32(0x00200000) << e, (e - np.uint32(1)) << np.uint32(23))  # 2^(e-127) / 2
    return bits.view(F32) * E2M1[_bits(b[:, 1:], (0, 4), 0xF).reshape(len(b), 32)]


@cache
def _ue4m3() -> np.ndarray:  # [256] float32: an unsigned E4M3 byte's value, halved (E2M1 above is doubled); 0x7F is 0
    x = np.arange(256)
    exp, man = (x >> 3) & 0xF, (x & 7).astype(np.float64)
    value = np.where(exp == 0, man * 2.0**-9, (1 + man / 8) * 2.0 ** (exp - 7.0)) * 0.5  # exact in float32
    return np.where((x == 0) | (x == 0x7F), 0.0, value).astype(F32)


def _nvfp4(b: Blocks) -> np.ndarray:  # [n, 36] -> [n, 64]
    n = len(b)
    d = _ue4m3()[b[:, :4]].reshape(n, 4, 1)
    q = _bits(b[:, 4:].reshape(n, 4, 8), (0, 4), 0xF).reshape(n, 4, 16)
    return (d * E2M1[q]).reshape(n, 64)


# the i-quants (ggml-common.h block_iq*; their grids in iq_grids.py)

IQ4 = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=F32)  # kvalues_iq4nl


def _iq4_nl(b: Blocks) -> np.ndarray:  # [n, 18] -> [n, 32]
    return _f16(b, 0) * IQ4[_bits(b[:, 2:], (0, 4), 0xF).reshape(len(b), 32)]


def _iq4_xs(b: Blocks) -> np.ndarray:  # [n, 136] -> [n, 256]
    n = len(b)
    low = _bits(b[:, 4:8], (0, 4), 0xF).transpose(0, 2, 1).reshape(n, 8)  # sub-block 2i: byte i's low nibble
    high = _bits(b[:, 2:4].view(np.uint16), tuple(range(0, 16, 2)), 3).reshape(n, 8).astype(np.uint8)
    scale = ((low | (high << np.uint8(4))).view(np.int8) - np.int8(32)).astype(F32)
    dl = (_f16(b, 0) * scale).reshape(n, 8, 1)
    q = _bits(b[:, 8:].reshape(n, 8, 16), (0, 4), 0xF).reshape(n, 8, 32)
    return (dl * IQ4[q]).reshape(n, 256)


@cache
def _ksigns() -> np.ndarray:  # [128, 8] float32: ggml-common.h ksigns_iq2xs as signs, 7 bits and their parity
    i = np.arange(128)
    parity = np.bitwise_count(i.astype(np.uint8)) & 1
    byte = (i | (parity << 7)).astype(np.uint8)
    return np.where(np.unpackbits(byte[:, None], axis=1, bitorder="little"), F32(-1), F32(1))


@cache
def _grid(name: str) -> np.ndarray:  # -> [rows, 8 or 4] float32: a grid's values (iq_grids.py's indices, mapped)
    levels = {
        "iq2xxs": (8, 25, 43),
        "iq2xs": (8, 25, 43),
        "iq2s": (8, 25, 43),
        "iq3xxs": (4, 12, 20, 28, 36, 44, 52, 62),
        "iq3s": (1, 3, 5, 7, 9, 11, 13, 15),
        "iq1s": (-1, 0, 1),
    }[name]
    return np.array(levels, dtype=F32)[grid_indices(name)]


def _half_scales(d: np.ndarray, s: np.ndarray) -> np.ndarray:  # [n, 1], [n, k] 4-bit -> [n, k]: d·(1/2 + s)·1/4
    return d * (F32(0.5) + s.astype(F32)) * F32(0.25)


def _iq2_xxs(b: Blocks) -> np.ndarray:  # [n, 66] -> [n, 256]
    n = len(b)
    aux = b[:, 2:].view(np.uint32).reshape(n, 8, 2)  # per 32 values: four grid rows, then 4 × 7 sign bits and a scale
    db = _half_scales(_f16(b, 0), aux[:, :, 1] >> np.uint32(28)).reshape(n, 8, 1, 1)
    grid = _grid("iq2xxs")[b[:, 2:].reshape(n, 8, 8)[:, :, :4]]  # [n, 8, 4, 8]
    signs = _ksigns()[(aux[:, :, 1:] >> np.array([0, 7, 14, 21], dtype=np.uint32)) & np.uint32(127)]
    return (db * grid * signs).reshape(n, 256)


def _iq2_xs(b: Blocks) -> np.ndarray:  # [n, 74] -> [n, 256]
    n = len(b)
    qs = b[:, 2:66].view(np.uint16)  # [n, 32]: 9 bits of grid row, 7 bits of signs
    db = _half_scales(_f16(b, 0), _bits(b[:, 66:74], (0, 4), 0xF).transpose(0, 2, 1).reshape(n, 16))
    grid = _grid("iq2xs")[qs & np.uint16(511)].reshape(n, 16, 2, 8)
    signs = _ksigns()[qs >> np.uint16(9)].reshape(n, 16, 2, 8)
    return (db.reshape(n, 16, 1, 1) * grid * signs).reshape(n, 256)


def _sign_bits(s: np.ndarray) -> np.ndarray:  # [n, k] uint8 -> [n, 8k] float32: bit j of byte i -> ±1 at 8i + j
    return np.where(np.unpackbits(s, axis=-1, bitorder="little"), F32(-1), F32(1))


def _iq2_s(b: Blocks) -> np.ndarray:  # [n, 82] -> [n, 256]
    n = len(b)
    high = _bits(b[:, 66:74], (0, 2, 4, 6), 3).transpose(0, 2, 1).reshape(n, 32).astype(np.uint16)
    idx = b[:, 2:34].astype(np.uint16) | (high << np.uint16(8))
    db = _half_scales(_f16(b, 0), _bits(b[:, 74:82], (0, 4), 0xF).transpose(0, 2, 1).reshape(n, 16))
    grid = _grid("iq2s")[idx].reshape(n, 16, 2, 8)
    signs = _sign_bits(b[:, 34:66]).reshape(n, 16, 2, 8)
    return (db.reshape(n, 16, 1, 1) * grid * signs).reshape(n, 256)


def _iq3_xxs(b: Blocks) -> np.ndarray:  # [n, 98] -> [n, 256]
    n = len(b)
    aux = b[:, 66:98].view(np.uint32)  # [n, 8]: 4 × 7 sign bits and a 4-bit scale per 32 values
    db = (_f16(b, 0) * (F32(0.5) + (aux >> np.uint32(28)).astype(F32)) * F32(0.5)).reshape(n, 8, 1, 1)
    grid = _grid("iq3xxs")[b[:, 2:66]].reshape(n, 8, 4, 8)
    signs = _ksigns()[(aux[:, :, None] >> np.array([0, 7, 14, 21], dtype=np.uint32)) & np.uint32(127)]
    return (db * grid * signs).reshape(n, 256)


def _iq3_s(b: Blocks) -> np.ndarray:  # [n, 110] -> [n, 256]
    n = len(b)
    high = np.unpackbits(b[:, 66:74], axis=-1, bitorder="little").astype(np.uint16)  # [n, 64]: a 9th index bit
    idx = b[:, 2:66].astype(np.uint16) | (high << np.uint16(8))
    s = _bits(b[:, 106:110], (0, 4), 0xF).transpose(0, 2, 1).reshape(n, 8)
    db = (_f16(b, 0) * (np.uint8(1) + np.uint8(2) * s)).reshape(n, 8, 1, 1)
    grid = _grid("iq3s")[idx].reshape(n, 8, 4, 8)
    signs = _sign_bits(b[:, 74:106]).reshape(n, 8, 4, 8)
    return (db * grid * signs).reshape(n, 256)


IQ1_DELTA = F32(0.125)  # ggml-common.h IQ1S_DELTA


def _iq1_s(b: Blocks) -> np.ndarray:  # [n, 50] -> [n, 256]
    n = len(b)
    qh = b[:, 34:50].view(np.uint16)  # [n, 8]: per 32 values 4 × 3 index bits, a 3-bit scale, the delta's sign
    dl = (_f16(b, 0) * (np.uint16(2) * ((qh >> np.uint16(12)) & np.uint16(7)) + np.uint16(1))).reshape(n, 8, 1, 1)
    delta = np.where(qh & np.uint16(0x8000), -IQ1_DELTA, IQ1_DELTA).reshape(n, 8, 1, 1)
    high = (qh[:, :, None] >> np.array([0, 3, 6, 9], dtype=np.uint16)) & np.uint16(7)
    idx = b[:, 2:34].astype(np.uint16) | (high.reshape(n, 32) << np.uint16(8))
    return (dl * (_grid("iq1s")[idx].reshape(n, 8, 4, 8) + delta)).reshape(n, 256)


def _iq1_m(b: Blocks) -> np.ndarray:  # [n, 56] -> [n, 256]
    """IQ1_S with a scale per 16 values; the fp16 d is spread over the top nibbles of the four scale words."""
    n = len(b)
    sc = b[:, 48:56].view(np.uint16)  # [n, 4]
    top = (sc & np.uint16(0xF000)) >> np.array([12, 8, 4, 0], dtype=np.uint16)
    d = np.bitwise_or.reduce(top, axis=1).view(np.float16).astype(F32).reshape(n, 1)
    s = ((sc[:, :, None] >> np.array([0, 3, 6, 9], dtype=np.uint16)) & np.uint16(7)).reshape(n, 16)
    dl = (d * (np.uint16(2) * s + np.uint16(1))).reshape(n, 8, 2, 1, 1)
    qh = _bits(b[:, 32:48], (0, 4), 0xF).transpose(0, 2, 1).reshape(n, 32)  # per 8 values: 3 index bits, a sign
    idx = b[:, :32].astype(np.uint16) | ((qh & np.uint8(7)).astype(np.uint16) << np.uint16(8))
    delta = np.where(qh & np.uint8(8), -IQ1_DELTA, IQ1_DELTA).reshape(n, 8, 2, 2, 1)
    return (dl * (_grid("iq1s")[idx].reshape(n, 8, 2, 2, 8) + delta)).reshape(n, 256)


def _f32(b: Blocks) -> np.ndarray:  # [n, 4] -> [n, 1]
    return b.view(F32)


def _f16_values(b: Blocks) -> np.ndarray:  # [n, 2] -> [n, 1]
    return b.view(np.float16).astype(F32)


def _bf16(b: Blocks) -> np.ndarray:  # [n, 2] -> [n, 1]: the upper half of a float32
    return (b.view(np.uint16).astype(np.uint32) << np.uint32(16)).view(F32)


_TYPES = (  # ggml.h's enum ggml_type (ids 4, 5, 31-33, 36-38 are retired); sizes as ggml-common.h's blocks
    QuantType(0, "F32", 1, 4, _f32),
    QuantType(1, "F16", 1, 2, _f16_values),
    QuantType(2, "Q4_0", 32, 18, _q4_0),
    QuantType(3, "Q4_1", 32, 20, _q4_1),
    QuantType(6, "Q5_0", 32, 22, _q5_0),
    QuantType(7, "Q5_1", 32, 24, _q5_1),
    QuantType(8, "Q8_0", 32, 34, _q8_0),
    QuantType(9, "Q8_1", 32, 40, None),  # an activation type: never a stored weight
    QuantType(10, "Q2_K", 256, 84, _q2_k),
    QuantType(11, "Q3_K", 256, 110, _q3_k),
    QuantType(12, "Q4_K", 256, 144, _q4_k),
    QuantType(13, "Q5_K", 256, 176, _q5_k),
    QuantType(14, "Q6_K", 256, 210, _q6_k),
    QuantType(15, "Q8_K", 256, 292, None),  # an activation type: never a stored weight
    QuantType(16, "IQ2_XXS", 256, 66, _iq2_xxs),
    QuantType(17, "IQ2_XS", 256, 74, _iq2_xs),
    QuantType(18, "IQ3_XXS", 256, 98, _iq3_xxs),
    QuantType(19, "IQ1_S", 256, 50, _iq1_s),
    QuantType(20, "IQ4_NL", 32, 18, _iq4_nl),
    QuantType(21, "IQ3_S", 256, 110, _iq3_s),
    QuantType(22, "IQ2_S", 256, 82, _iq2_s),
    QuantType(23, "IQ4_XS", 256, 136, _iq4_xs),
    QuantType(24, "I8", 1, 1, None),
    QuantType(25, "I16", 1, 2, None),
    QuantType(26, "I32", 1, 4, None),
    QuantType(27, "I64", 1, 8, None),
    QuantType(28, "F64", 1, 8, None),
    QuantType(29, "IQ1_M", 256, 56, _iq1_m),
    QuantType(30, "BF16", 1, 2, _bf16),
    QuantType(34, "TQ1_0", 256, 54, _tq1_0),
    QuantType(35, "TQ2_0", 256, 66, _tq2_0),
    QuantType(39, "MXFP4", 32, 17, _mxfp4),
    QuantType(40, "NVFP4", 64, 36, _nvfp4),
    QuantType(41, "Q1_0", 128, 18, None),
)
TYPES = {t.id: t for t in _TYPES}
DEQUANTIZED = tuple(t.name for t in _TYPES if t.dequantize is not None)


def quant_type(type_id: int, what: str) -> QuantType:
    """The type of tensor `what` (its name and file); ModelError naming it when attn cannot dequantize it."""
    kind = TYPES.get(type_id)
    if kind is None:
        raise ModelError(f"{what} has unknown ggml type {type_id}")
    if kind.dequantize is None:
        raise ModelError(
            f"{what} is {kind.name}; attn dequantizes {', '.join(DEQUANTIZED)} (re-quantize the model, e.g. with "
            "llama.cpp's llama-quantize, to one of them)"
        )
    return kind


def dequantize(data: np.ndarray, kind: QuantType) -> np.ndarray:  # [rows, bytes per row] uint8 -> [rows, cols] f32
    """Whole rows of `kind`'s blocks as float32, a chunk of blocks at a time (bounded temporaries, GIL released).

    >>> q8 = np.array([[0, 0x3C] + [1, 2, 0xFF] + [0] * 29], dtype=np.uint8)  # d = 1.0 (fp16 0x3C00); 1, 2, -1
    >>> dequantize(q8, TYPES[8])[0, :4].tolist()
    [1.0, 2.0, -1.0, 0.0]
    """
    assert kind.dequantize is not None  # quant_type let only readable types into a file's table
    rows = data.shape[0]
    blocks = np.ascontiguousarray(data).reshape(-1, kind.size)
    if kind.block == 1:  # F32, F16, BF16: one NumPy pass, no temporaries (F32 stays a view of the file)
        return kind.dequantize(blocks).reshape(rows, -1)
    out = np.empty((len(blocks), kind.block), dtype=F32)
    step = max(CHUNK // kind.block, 1)
    with np.errstate(all="ignore"):  # an inf or NaN scale is the file's: the reader's finiteness check names it
        for start in range(0, len(blocks), step):
            out[start : start + step] = kind.dequantize(blocks[start : start + step])
    return out.reshape(rows, -1)
