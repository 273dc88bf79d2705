"""attncli/models/files/quants.py against gguf.quants (llama.cpp's own Python package): every type, bit for bit.

The blocks are random bytes with their fp16 scales made finite (a block whose scale is inf or NaN is not one a
quantizer writes); the values are compared as bit patterns, so that a NaN or a -0.0 must match too. tests/models/
test_gguf.py checks the K-quants against ggml's block formulas written out, and the round trip of the legacy types.
"""

import gguf  # a dependency of attncli: a missing one fails here, never skips
import numpy as np
import pytest
from gguf import quants as reference
from hypothesis import given
from hypothesis import strategies as st

from attncli.models.files import quants
from attncli.models.files.gguf import open_gguf
from attncli.models.files.hparams import ModelError
from attncli.models.files.iq_grids import GRIDS, grid_indices
from attncli.models.files.quants import DEQUANTIZED, TYPES, dequantize, quant_type
from tests.models.gguf_files import write

BY_NAME = {t.name: t for t in TYPES.values()}
SCALES = {  # type -> the byte offsets of its fp16 scales in a block
    **dict.fromkeys(("Q4_0", "Q5_0", "Q8_0", "IQ4_NL", "IQ4_XS", "IQ2_XXS", "IQ2_XS", "IQ2_S"), (0,)),
    **dict.fromkeys(("IQ3_XXS", "IQ3_S", "IQ1_S"), (0,)),
    **dict.fromkeys(("Q4_1", "Q5_1", "Q4_K", "Q5_K"), (0, 2)),
    "Q2_K": (80, 82),
    "Q3_K": (108,),
    "Q6_K": (208,),
    "TQ1_0": (52,),
    "TQ2_0": (64,),
}


def _finite(words: np.ndarray) -> None:  # fp16 bit patterns, in place: an exponent of all ones loses its top bit
    words[(words & 0x7C00) == 0x7C00] &= np.uint16(0xBFFF)


def blocks(name: str, n: int, rng: np.random.Generator) -> np.ndarray:  # -> [n, bytes per block] uint8
    """n random blocks of type `name`, their fp16 scales finite (F16, BF16, F32 keep every pattern, NaN too)."""
    kind = BY_NAME[name]
    raw = rng.integers(0, 256, (n, kind.size), dtype=np.uint8)
    for at in SCALES.get(name, ()):
        _finite(raw[:, at : at + 2].view(np.uint16))
    if name == "IQ1_M":  # its fp16 d is the top nibbles of four words; the exponent's top bit is word 3's bit 14
        words = raw[:, 48:56].view(np.uint16)
        d = np.bitwise_or.reduce((words & 0xF000) >> np.array([12, 8, 4, 0], dtype=np.uint16), axis=1)
        words[(d & 0x7C00) == 0x7C00, 3] &= np.uint16(0xBFFF)
    return raw


def same_bits(mine: np.ndarray, theirs: np.ndarray) -> bool:
    theirs = np.asarray(theirs)
    return mine.dtype == theirs.dtype == np.float32 and np.array_equal(mine.view(np.uint32), theirs.view(np.uint32))


@pytest.mark.parametrize("name", DEQUANTIZED)
def test_every_type_is_gguf_bit_for_bit(name):
    kind, rng = BY_NAME[name], np.random.default_rng(list(BY_NAME).index(name))
    raw = blocks(name, 48, rng).reshape(6, 8 * kind.size)  # 6 rows of 8 blocks
    theirs = reference.dequantize(raw, gguf.GGMLQuantizationType(kind.id))
    assert same_bits(dequantize(raw, kind), theirs)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # gguf's MXFP4 of exponent 255: inf
@given(st.sampled_from(DEQUANTIZED), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_random_blocks_of_any_type_are_gguf_bit_for_bit(name, n, seed):
    kind, raw = BY_NAME[name], blocks(name, n, np.random.default_rng(seed))
    assert same_bits(dequantize(raw, kind), reference.dequantize(raw, gguf.GGMLQuantizationType(kind.id)))


def test_a_tensor_of_many_chunks_equals_one_chunk(monkeypatch):
    raw = blocks("Q4_K", 50, np.random.default_rng(3))
    whole = dequantize(raw, BY_NAME["Q4_K"])
    monkeypatch.setattr(quants, "CHUNK", 3 * 256)  # 17 chunks of 3 blocks, the last of 2
    assert same_bits(dequantize(raw, BY_NAME["Q4_K"]), whole)


def test_the_registry_covers_what_gguf_dequantizes_with_its_sizes():
    """Every type gguf.quants dequantizes is read here, with gguf's block sizes; no other type claims to be."""
    theirs = {t.name for t in gguf.GGMLQuantizationType if t.name in ("F32", "F16")}
    theirs |= {t.name for t in reference._type_traits}
    assert set(DEQUANTIZED) == theirs
    for kind in TYPES.values():
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind.id)] == (kind.block, kind.size), kind.name
        assert gguf.GGMLQuantizationType(kind.id).name == kind.name


GRID_TYPES = {
    "iq2xxs": "IQ2_XXS",
    "iq2xs": "IQ2_XS",
    "iq2s": "IQ2_S",
    "iq3xxs": "IQ3_XXS",
    "iq3s": "IQ3_S",
    "iq1s": "IQ1_S",
}


@pytest.mark.parametrize("name", sorted(GRIDS))
def test_the_stored_grids_are_llama_cpps(name):
    """iq_grids.py's indices, mapped to the levels, are gguf's copy of ggml-common.h's grid, row for row."""
    cls = getattr(reference, GRID_TYPES[name])
    cls.init_grid()
    assert grid_indices(name).shape == cls.grid_shape
    assert np.array_equal(quants._grid(name), cls.grid.reshape(cls.grid_shape))


def test_a_type_attn_does_not_read_is_refused_by_name():
    with pytest.raises(ModelError, match=r"^w in m.gguf is Q8_K; attn dequantizes F32, F16, .*IQ4_XS"):
        quant_type(15, "w in m.gguf")
    with pytest.raises(ModelError, match=r"^w in m.gguf has unknown ggml type 4$"):
        quant_type(4, "w in m.gguf")  # Q4_2, retired from ggml


@pytest.mark.parametrize("name", ["IQ4_XS", "TQ1_0", "MXFP4"])
def test_a_gguf_file_of_a_new_type_reads_through_open_gguf(name, tmp_path):
    kind = BY_NAME[name]
    raw = blocks(name, 8, np.random.default_rng(4)).reshape(2, 4 * kind.size)  # 2 rows of 4 blocks
    _, tensors = open_gguf(write(tmp_path / f"{name}.gguf", "llama", {}, {"w": (raw, name)}))
    assert tensors.type_name("w") == name and tensors.shape("w") == (2, 4 * kind.block)
    theirs = reference.dequantize(raw, gguf.GGMLQuantizationType(kind.id))
    assert same_bits(tensors.get_tensor("w"), theirs)
    assert same_bits(tensors.rows("w", np.array([1])), theirs[1:])
