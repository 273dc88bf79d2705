"""GGUF files: attn's dequantized, un-permuted, renamed tensors run the golden families exactly as their
safetensors do; every quantization type equals llama.cpp's block formulas; damaged files end in one line.

The files are written here with gguf's GGUFWriter (tests/models/gguf_files.py), as llama.cpp converts a
Hugging Face folder. The real SmolLM2 is in tests/models/test_smollm2.py.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attncli.models import ModelError, encode, forward, load_model
from attncli.models.files.gguf import open_gguf
from tests.models.gguf_files import GOLDEN, from_folder, write

TOLERANCE = 1e-5  # the golden folders' own bound against transformers (tests/models/test_golden.py)
CONVERTED = {  # golden folder -> (GGUF architecture, whether its tokenizer adds BOS)
    "qwen2": ("qwen2", False),
    "qwen3": ("qwen3", False),
    "mistral": ("llama", True),  # llama.cpp writes Mistral as llama: Q/K permuted
    "gpt2": ("gpt2", False),  # Conv1D weights transposed, learned positions
    "gemma": ("gemma", True),  # RMSNorm weights stored as 1 + w
    "gemma2": ("gemma2", True),  # and its sandwich norms under their llama.cpp names
    "olmo2": ("olmo2", False),  # norms after the blocks, q/k norms over the whole projection
    "gemma3_text": ("gemma3", True),  # 1 + w norms (q/k too), sliding and global layers each with its RoPE
    "phi3": ("phi3", True),  # fused qkv and gate_up, partial RoPE, LongRoPE's factors as tensors
    "smollm3": ("smollm3", False),  # Q/K permuted as Llama's; its RoPE-less layers every 4th (llama.cpp's only)
}
NORM_ROUNDING = 1e-6  # Gemma's (1 + w) - 1 in float32 moves a norm weight by an ulp of 1 (1.2e-7), no more


def _windowless(name: str, tmp_path: Path) -> Path:
    """The golden folder as a GGUF can say it: no sliding window (llama.cpp's llama and qwen2 attend to every
    token), Gemma 2/3's score scale by the head width, SmolLM3's RoPE-less layers every 4th."""
    folder = tmp_path / name
    shutil.copytree(GOLDEN / name, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.pop("sliding_window", None)
    config["use_sliding_window"] = False
    if "query_pre_attn_scalar" in config:  # llama.cpp's gemma2 scales scores by its head width: no key for it
        config["query_pre_attn_scalar"] = config["head_dim"]
    if "no_rope_layers" in config:  # a GGUF has no key for them: llama.cpp drops RoPE on every 4th layer
        config["no_rope_layers"] = [int((l + 1) % 4 != 0) for l in range(config["num_hidden_layers"])]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


@pytest.mark.parametrize("name", sorted(CONVERTED))
def test_a_converted_golden_folder_runs_as_its_safetensors(name, tmp_path):
    """The same float32 weights, read from GGUF (renamed, un-permuted, transposed back) or from safetensors,
    give the same attention, bit for bit (Gemma's: to the rounding of its norms' 1 + w); the GGUF tokenizer
    gives the same ids."""
    arch, bos = CONVERTED[name]
    folder = _windowless(name, tmp_path)
    model, same = load_model(from_folder(folder, tmp_path / f"{name}.gguf", arch, add_bos=bos)), load_model(folder)
    for text in json.loads((folder / "texts.json").read_text(encoding="utf-8")).values():
        tokens = encode(model, text)
        assert tokens.ids == encode(same, text).ids
        got, want = np.stack(forward(model, tokens.ids).weights), np.stack(forward(same, tokens.ids).weights)
        assert np.abs(got - want).max() <= (NORM_ROUNDING if arch.startswith("gemma") else 0)


@pytest.mark.parametrize("name", ["gpt2", "qwen3", "llama", "llama-yarn", "gemma", "olmo2", "phi3"])
def test_a_converted_golden_folder_equals_transformers(name, tmp_path):
    """llama: its llama3 RoPE scaling stored as llama.cpp stores it, one factor per frequency (rope_freqs);
    llama-yarn: YaRN as its type, factor and original length (the long text runs past that length)."""
    arch, bos = CONVERTED.get(name, ("llama", True))
    folder = GOLDEN / name
    model, reference = (
        load_model(from_folder(folder, tmp_path / "m.gguf", arch, add_bos=bos)),
        np.load(folder / "reference.npz"),
    )
    for key, text in json.loads((folder / "texts.json").read_text(encoding="utf-8")).items():
        tokens = encode(model, text)
        assert list(tokens.ids) == reference[f"{key}_ids"].tolist()
        assert np.abs(np.stack(forward(model, tokens.ids).weights) - reference[key]).max() <= TOLERANCE


def test_the_llama_permutation_is_undone(tmp_path):
    """A llama file whose Q and K rows were not permuted by the converter runs differently: the undo is real."""
    folder = _windowless("mistral", tmp_path)
    right = load_model(from_folder(folder, tmp_path / "a.gguf", "llama", add_bos=True))
    wrong = load_model(from_folder(folder, tmp_path / "b.gguf", "llama", add_bos=True, permuted=False))
    ids = encode(right, "time flies like an arrow").ids
    assert np.abs(forward(right, ids).weights[1] - forward(wrong, ids).weights[1]).max() > 1e-3


# ---- dequantization: each type against llama.cpp's block formulas ----------------------------------------

ROUND_TRIP = {  # type -> (levels: the block's step is amax / levels, or (max - min) / levels when it has a minimum)
    "Q8_0": (127, False),
    "Q4_0": (8, False),
    "Q5_0": (16, False),
    "Q4_1": (15, True),
    "Q5_1": (31, True),
}


def _read_back(tmp_path: Path, array: np.ndarray, kind: str) -> np.ndarray:
    path = write(tmp_path / f"{kind}.gguf", "llama", {}, {"w": (array, kind)})
    _, tensors = open_gguf(path)
    assert tensors.type_name("w") == kind
    return tensors.get_tensor("w")


@pytest.mark.parametrize("kind", sorted(ROUND_TRIP))
def test_a_quantized_tensor_reads_back_within_one_step_of_its_block(kind, tmp_path):
    """gguf's quantizer, then attn's reader: each value within one step of its block (a half step of rounding,
    up to a full one where Q4_0/Q5_0 clip the end opposite the largest value), plus the fp16 rounding of the
    block's scale and minimum (2^-11 relative, times at most 32 levels)."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((8, 256)) * rng.uniform(0.01, 10, (8, 1))).astype(np.float32)
    got = _read_back(tmp_path, x, kind)
    levels, offset = ROUND_TRIP[kind]
    blocks = x.reshape(-1, 32).astype(np.float64)
    step = (blocks.max(1) - blocks.min(1)) / levels if offset else np.abs(blocks).max(1) / levels
    bound = step * (1 + 32 * 2**-11) + np.abs(blocks.min(1)) * 2**-11 * offset
    error = np.abs(got.reshape(-1, 32) - blocks).max(1)
    assert got.shape == x.shape and (error <= bound).all()


def test_f16_and_bf16_read_back_exactly(tmp_path):
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    assert np.array_equal(_read_back(tmp_path, x, "F16"), x.astype(np.float16).astype(np.float32))
    bits = x.view(np.uint32).astype(np.uint64)
    nearest_even = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
    assert np.array_equal(_read_back(tmp_path, x, "BF16"), nearest_even)


def _f16(raw: np.ndarray, at: int) -> float:
    return float(raw[at : at + 2].view(np.float16)[0])


def _scale_min_k4(j: int, q: np.ndarray) -> tuple[int, int]:  # ggml's get_scale_min_k4
    if j < 4:
        return int(q[j]) & 63, int(q[j + 4]) & 63
    return (int(q[j + 4]) & 0xF) | ((int(q[j - 4]) >> 6) << 4), (int(q[j + 4]) >> 4) | ((int(q[j]) >> 6) << 4)


def _q2_k(b):  # 84 bytes: scales[16], qs[64], d, dmin
    d, dmin, y, i = _f16(b, 80), _f16(b, 82), [], 0
    for n in (0, 32):
        for shift in (0, 2, 4, 6):
            for half in (0, 16):
                sc = int(b[i])
                i += 1
                y += [d * (sc & 0xF) * ((int(b[16 + n + half + l]) >> shift) & 3) - dmin * (sc >> 4) for l in range(16)]
    return y


def _q3_k(b):  # 110 bytes: hmask[32], qs[64], scales[12], d
    d, raw = _f16(b, 108), [int(v) for v in b[96:108]]
    sc = [0] * 16
    for j in range(16):
        low = (raw[j] & 0xF) if j < 8 else (raw[j - 8] >> 4)
        sc[j] = (low | (((raw[8 + j % 4] >> (2 * (j // 4))) & 3) << 4)) - 32
    y, i, m = [], 0, 1
    for n in (0, 32):
        for shift in (0, 2, 4, 6):
            for half in (0, 16):
                q = [(int(b[32 + n + half + l]) >> shift) & 3 for l in range(16)]
                h = [0 if int(b[half + l]) & m else 4 for l in range(16)]
                y += [d * sc[i] * (q[l] - h[l]) for l in range(16)]
                i += 1
            m <<= 1
    return y


def _q4_k(b):  # 144 bytes: d, dmin, scales[12], qs[128]
    d, dmin, y = _f16(b, 0), _f16(b, 2), []
    for j in range(4):
        (s1, m1), (s2, m2) = _scale_min_k4(2 * j, b[4:16]), _scale_min_k4(2 * j + 1, b[4:16])
        q = [int(v) for v in b[16 + 32 * j : 48 + 32 * j]]
        y += [d * s1 * (v & 0xF) - dmin * m1 for v in q] + [d * s2 * (v >> 4) - dmin * m2 for v in q]
    return y


def _q5_k(b):  # 176 bytes: d, dmin, scales[12], qh[32], qs[128]
    d, dmin, y = _f16(b, 0), _f16(b, 2), []
    for j in range(4):
        (s1, m1), (s2, m2) = _scale_min_k4(2 * j, b[4:16]), _scale_min_k4(2 * j + 1, b[4:16])
        q, h = [int(v) for v in b[48 + 32 * j : 80 + 32 * j]], [int(v) for v in b[16:48]]
        y += [d * s1 * ((v & 0xF) + 16 * bool(h[l] & (1 << 2 * j))) - dmin * m1 for l, v in enumerate(q)]
        y += [d * s2 * ((v >> 4) + 16 * bool(h[l] & (2 << 2 * j))) - dmin * m2 for l, v in enumerate(q)]
    return y


def _q6_k(b):  # 210 bytes: ql[128], qh[64], scales[16] (int8), d
    d, sc, y = _f16(b, 208), b[192:208].view(np.int8).astype(int), [0.0] * 256
    for n in (0, 1):
        ql, qh, s = b[64 * n : 64 * n + 64].astype(int), b[128 + 32 * n : 160 + 32 * n].astype(int), sc[8 * n :]
        for l in range(32):
            i = l // 16
            y[128 * n + l] = d * s[i] * (((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32)
            y[128 * n + l + 32] = d * s[i + 2] * (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32)
            y[128 * n + l + 64] = d * s[i + 4] * (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32)
            y[128 * n + l + 96] = d * s[i + 6] * (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32)
    return y


K_QUANTS = {  # type -> (bytes per block of 256, where its fp16 scales are, the block formula)
    "Q2_K": (84, (80, 82), _q2_k),
    "Q3_K": (110, (108,), _q3_k),
    "Q4_K": (144, (0, 2), _q4_k),
    "Q5_K": (176, (0, 2), _q5_k),
    "Q6_K": (210, (208,), _q6_k),
}


@pytest.mark.parametrize("kind", sorted(K_QUANTS))
def test_a_k_quant_equals_the_block_formula(kind, tmp_path):
    """Random blocks (random quants, scales and minimums; fp16 super-block scales of 0.01..1) read by attn equal
    ggml's dequantize_row_* written out above, in float64, to float32's rounding of a few products."""
    size, scales, formula = K_QUANTS[kind]
    rng = np.random.default_rng(2)
    raw = rng.integers(0, 256, (4, 2 * size), dtype=np.uint8)  # 4 rows of 2 blocks of 256 values
    for block in raw.reshape(-1, size):
        for at in scales:
            block[at : at + 2] = np.array([rng.uniform(0.01, 1)], dtype=np.float16).view(np.uint8)
    got = _read_back(tmp_path, raw, kind).astype(np.float64)
    want = np.array([formula(block) for block in raw.reshape(-1, size)]).reshape(got.shape)
    assert got.shape == (4, 512)
    assert np.abs(got - want).max() <= 4 * 2**-24 * np.abs(want).max()


# ---- damaged and refused files: one line each -------------------------------------------------------------


def _tiny(tmp_path: Path, name: str = "m.gguf", **meta) -> Path:
    return from_folder(GOLDEN / "qwen3", tmp_path / name, "qwen3") if not meta else _with(tmp_path, name, meta)


def _with(tmp_path: Path, name: str, meta: dict) -> Path:
    """The qwen3 golden as GGUF with `meta` added to its metadata."""
    import gguf

    path = from_folder(GOLDEN / "qwen3", tmp_path / "base.gguf", "qwen3")
    base, _ = open_gguf(path)
    reader = gguf.GGUFReader(path)
    arrays = {t.name: (np.array(t.data), t.tensor_type.name) for t in reader.tensors}
    kept = {k: v for k, v in base.items() if not k.startswith(("GGUF.", "general.architecture"))}
    return write(tmp_path / name, "qwen3", {**kept, **meta}, arrays)


def _count(n: int):
    """The vocabulary's array count set to `n` (its key, then the array's value type and item type, then it)."""

    def change(b: bytes) -> bytes:
        at = b.index(b"tokenizer.ggml.tokens") + len("tokenizer.ggml.tokens") + 8
        return b[:at] + struct.pack("<Q", n) + b[at + 8 :]

    return change


@pytest.mark.parametrize(
    ("cut", "says"),
    [
        (lambda b: b"GGUX" + b[4:], "not a GGUF file"),
        (lambda b: b[:20], "not a GGUF file"),
        (lambda b: b[:4] + struct.pack("<I", 7) + b[8:], "version 7"),
        (lambda b: b[:8] + struct.pack("<Q", 2**40) + b[16:], "tensors, more than any model"),
        (lambda b: b[: len(b) - 4096], "declares .* bytes that do not fit in the file"),
        (lambda b: b[:2000], "is cut short: .* runs past its end"),
        (_count(2**50), "tokenizer.ggml.tokens declares 1,125,899,906,842,624 items, more than any model's"),
        (_count(2**21), "is cut short: tokenizer.ggml.tokens at byte .* runs past its end"),
    ],
)
def test_a_damaged_file_is_one_line(cut, says, tmp_path):
    path = _tiny(tmp_path)
    path.write_bytes(cut(path.read_bytes()))
    with pytest.raises(ModelError, match=says) as e:
        load_model(path)
    assert "\n" not in str(e.value)


def _array_file(path: Path, item: int, count: int, size: int) -> Path:
    """A GGUF of one metadata key `scores`, an array of `count` items of GGUF type `item`, as a sparse file of
    `size` bytes (its items all zero bytes: nothing big is written to the disk)."""
    key = b"scores"
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key
    with path.open("wb") as f:
        f.write(head + struct.pack("<IIQ", 9, item, count))
        f.truncate(size)
    return path


@pytest.mark.parametrize(
    ("item", "count", "says"),
    [  # hostile round IV, 5 and 6: 10^8 float scores peaked at 4.25 GB; 10^9 empty strings still parsed at 90 s
        (6, 10**8, "scores declares 100,000,000 items, more than any model's metadata holds"),
        (8, 10**9, "scores declares 1,000,000,000 items, more than any model's metadata holds"),
        (7, 10**8, "scores declares 100,000,000 items"),
    ],
)
def test_a_metadata_array_is_refused_from_its_count(item, count, says, tmp_path):
    path = _array_file(tmp_path / "big.gguf", item, count, 8 * count + 64)
    with pytest.raises(ModelError, match=says) as e:
        open_gguf(path)
    assert "\n" not in str(e.value)


def test_an_array_of_strings_is_priced_before_it_is_read(tmp_path, monkeypatch):
    from attncli.models.files.gguf import STRING_BYTES

    path = _array_file(tmp_path / "vocab.gguf", 8, 10**6, 8 * 10**6 + 64)  # a million empty strings
    monkeypatch.setenv("ATTN_MAX_MEMORY", "64M")
    assert STRING_BYTES * 10**6 > 64 * 2**20
    with pytest.raises(ModelError, match=r"scores, 1,000,000 strings, needs .* to read, more than ATTN_MAX_MEMORY"):
        open_gguf(path)
    monkeypatch.setenv("ATTN_MAX_MEMORY", "1G")
    assert open_gguf(path)[0]["scores"] == [""] * 10**6


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_a_long_array_of_numbers_is_a_view_of_the_file_not_a_list(tmp_path):
    """4·10^6 float32 scores (a sparse 16 MB file) read under an address-space limit 64 MiB above what the process
    had mapped: the map takes 16 MB, a list of them would take ~128 MB (a float object and a slot each)."""
    path = _array_file(tmp_path / "scores.gguf", 6, 4 * 10**6, 16 * 10**6 + 64)
    child = f"""
import re, resource
import numpy as np
from attncli.models.files.gguf import open_gguf
import gguf
vm = int(re.search(r"VmSize:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + 64 * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
scores = open_gguf(__import__("pathlib").Path({str(path)!r}))[0]["scores"]
assert isinstance(scores, np.ndarray) and scores.shape == (4 * 10**6,) and not scores.flags.writeable
print(float(scores.sum()))
"""
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "0.0", run.stderr[-2000:]


@pytest.mark.parametrize(
    ("meta", "says"),
    [
        ({"qwen3.embedding_length": "big"}, r"qwen3\.\* metadata as config.json: hidden_size must be a positive"),
        ({"qwen3.block_count": 10**9}, "declares 1,000,000,000 layers"),
        ({"tokenizer.ggml.merges": ["zz qq"]}, "Token `zz` out of vocabulary"),
        ({"tokenizer.ggml.token_type": 5}, "the tokenizer of"),
        ({"tokenizer.ggml.tokens": [1, 2]}, "tokenizer.ggml.tokens is not a list of strings"),
        ({"tokenizer.ggml.bos_token_id": 99999}, "bos_token_id 99999 is not a token of its 320"),
    ],
)
def test_lying_metadata_is_one_line(meta, says, tmp_path):
    from attncli.errors import DataError

    with pytest.raises(DataError, match=says) as e:
        load_model(_tiny(tmp_path, "lies.gguf", **meta))
    assert "\n" not in str(e.value)


def test_mixture_of_experts_and_vision_towers_are_refused_in_one_line(tmp_path):
    with pytest.raises(
        ModelError, match=r"\(qwen3\) is a mixture-of-experts model \(num_local_experts 8: .*out of its scope"
    ):
        load_model(_tiny(tmp_path, "moe.gguf", **{"qwen3.expert_count": 8}))
    with pytest.raises(ModelError, match="a mmproj file \\(a vision/audio tower"):
        load_model(_tiny(tmp_path, "mmproj.gguf", **{"general.type": "mmproj"}))


def test_every_gguf_architecture_is_served_and_converted_here():
    from attncli.models.network.families import family_of
    from attncli.models.opening.gguf_arch import ARCHITECTURES

    assert all(family_of(a.model_type) is not None for a in ARCHITECTURES.values())
    assert {a for a, _ in CONVERTED.values()} == set(ARCHITECTURES)  # each one checked by a conversion above


def test_gemma_27b_scales_scores_as_llama_cpp_does():
    """llama.cpp scales Gemma 2/3 27B's scores by d_model / n_head (their query_pre_attn_scalar), the others' by
    the head width: the layer count is the only sign of the size a file carries."""
    from attncli.models.opening.gguf_arch import config_of

    meta = {"gemma2.block_count": 46, "gemma2.embedding_length": 4608, "gemma2.attention.head_count": 32}
    assert config_of(meta | {"gemma2.attention.key_length": 128}, "gemma2", {})["query_pre_attn_scalar"] == 144
    meta["gemma2.block_count"] = 42  # 9B: the head width, 256
    assert config_of(meta | {"gemma2.attention.key_length": 256}, "gemma2", {})["query_pre_attn_scalar"] == 256


def test_an_architecture_not_checked_from_gguf_is_refused(tmp_path):
    path = write(tmp_path / "neox.gguf", "gptneox", {}, {"w": (np.zeros((1, 32), np.float32), "F32")})
    with pytest.raises(ModelError, match=r"architecture 'gptneox'; attn reads llama, qwen2, .* from GGUF"):
        load_model(path)


def test_an_unsupported_type_names_it(tmp_path):
    raw = np.zeros((4, 292), dtype=np.uint8)  # Q8_K: 292 bytes per block of 256, a type attn does not read
    path = write(tmp_path / "q8k.gguf", "llama", {}, {"w": (raw, "Q8_K")})
    with pytest.raises(ModelError, match=r"w in .* is Q8_K; attn dequantizes F32, F16"):
        open_gguf(path)


def test_the_weights_are_priced_before_they_are_read(tmp_path, monkeypatch):
    # (its vocabulary of 320 strings is priced first, at ~25 KiB: under this budget, which its weights exceed)
    monkeypatch.setenv("ATTN_MAX_MEMORY", "64K")
    with pytest.raises(ModelError, match=r"needs .* for its weights as float32, more than ATTN_MAX_MEMORY"):
        load_model(_tiny(tmp_path))


def test_only_the_layers_run_are_dequantized(tmp_path, monkeypatch):
    from attncli.models.files import gguf as reader

    seen: list[int] = []
    real = reader.dequantize
    monkeypatch.setattr(reader, "dequantize", lambda data, kind: seen.append(data.size) or real(data, kind))
    model = load_model(_tiny(tmp_path))
    forward(model, encode(model, "time flies").ids, upto_layer=0)
    one = len(seen)
    forward(model, encode(model, "time flies").ids)
    assert 0 < one < len(seen)  # layer 0's attention first; the rest only when asked for


def test_a_cold_gguf_forward_reads_ahead_with_the_bits_of_one_thread(tmp_path, monkeypatch):
    """quants.py leaves the GIL, so a GGUF model's next layer is dequantized on the reader thread (readahead.py);
    the attention and hidden states are those of a pass that reads every tensor itself."""
    from attncli.models.network import readahead
    from attncli.models.network.forward import _forward

    plans: list[list] = []
    read = readahead.ReadAhead._read
    monkeypatch.setattr(readahead.ReadAhead, "_read", lambda self, plan: plans.append(plan) or read(self, plan))
    path = _tiny(tmp_path)
    model = load_model(path)
    ids = encode(model, "time flies like an arrow").ids
    run = forward(model, ids)
    assert model.weights.overlaps and plans and {layer for layer, _ in plans[0]} == {1}
    alone = load_model(path)
    same = _forward(alone, np.asarray(ids), None, None, None, ahead=False)
    for a, b in zip(run.weights + run.hidden, same.weights + same.hidden, strict=True):
        assert np.array_equal(a, b)


# ---- names: Ollama, LM Studio, a Hugging Face cache repo of GGUF files --------------------------------------


def _ollama(tmp_path: Path, blob: Path, name: str = "tiny", tag: str = "latest", digest: str | None = None) -> Path:
    import hashlib

    store = tmp_path / "ollama"
    hexdigest = hashlib.sha256(blob.read_bytes()).hexdigest()
    (store / "blobs").mkdir(parents=True, exist_ok=True)
    shutil.copy(blob, store / "blobs" / f"sha256-{hexdigest}")
    manifest = store / "manifests" / "registry.ollama.ai" / "library" / name / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layers = [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64},
        {"mediaType": "application/vnd.ollama.image.model", "digest": digest or f"sha256:{hexdigest}"},
    ]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}), encoding="utf-8")
    return store


def test_an_ollama_name_is_its_blob(tmp_path, monkeypatch):
    blob = _tiny(tmp_path)
    monkeypatch.setenv("OLLAMA_MODELS", str(_ollama(tmp_path, blob, tag="0.6b")))
    model = load_model("tiny:0.6b")
    assert model.name == "tiny:0.6b" and model.model_type == "qwen3"
    _ollama(tmp_path, blob)
    assert load_model("tiny").path.name.startswith("sha256-")  # NAME alone: tag latest
    with pytest.raises(ModelError, match=r"neither a folder nor in the Hugging Face cache .* the Ollama store"):
        load_model("absent:1b")


@pytest.mark.parametrize("digest", ["sha256:../../../etc/passwd", "/etc/passwd", "sha256:" + "a" * 63])
def test_an_ollama_manifest_cannot_leave_its_store(digest, tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(_ollama(tmp_path, _tiny(tmp_path), digest=digest)))
    with pytest.raises(ModelError, match="not sha256:<64 hex digits>"):
        load_model("tiny")


def test_an_ollama_blob_linked_out_of_its_store_is_refused(tmp_path, monkeypatch):
    blob = _tiny(tmp_path)
    store = _ollama(tmp_path, blob)
    for path in (store / "blobs").glob("sha256-*"):
        path.unlink()
        path.symlink_to(blob)
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    with pytest.raises(ModelError, match="outside the Ollama store"):
        load_model("tiny")


def test_an_lmstudio_folder_and_a_gguf_file_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / ".lmstudio" / "models" / "org" / "tiny-GGUF"
    folder.mkdir(parents=True)
    _tiny(folder, "tiny-F32.gguf")
    (folder / "mmproj-tiny.gguf").write_bytes(b"GGUF")  # a vision tower beside it is not the model
    assert load_model("org/tiny-GGUF").path.name == "tiny-F32.gguf"
    shutil.copy(folder / "tiny-F32.gguf", folder / "tiny-Q8_0.gguf")
    with pytest.raises(ModelError, match=r"holds 2 GGUF files .*: choose one with --gguf-file NAME"):
        load_model("org/tiny-GGUF")
    assert load_model("org/tiny-GGUF", gguf_file="tiny-Q8_0.gguf").path.name == "tiny-Q8_0.gguf"
    with pytest.raises(ModelError, match="leaves the model folder"):
        load_model("org/tiny-GGUF", gguf_file="../x.gguf")


def _out_of_store(e: pytest.ExceptionInfo, real: Path) -> None:
    """A refused link: one line saying where it leads and that --model PATH opens that file directly."""
    said = str(e.value)
    assert "\n" not in said and f"leads to {real}" in said and f"--model {real}" in said, said


def test_an_lmstudio_gguf_picked_automatically_is_held_inside_the_store(tmp_path, monkeypatch):
    """Hostile round IV, 1: the only .gguf of the folder, a link out of the store, was loaded."""
    monkeypatch.setenv("HOME", str(tmp_path))
    outside = _tiny(tmp_path, "outside.gguf")
    folder = tmp_path / ".lmstudio" / "models" / "org" / "tiny-GGUF"
    folder.mkdir(parents=True)
    (folder / "tiny.gguf").symlink_to(outside)
    with pytest.raises(ModelError, match="outside the model folder") as e:
        load_model("org/tiny-GGUF")
    _out_of_store(e, outside)
    assert load_model(outside).model_type == "qwen3"  # the file itself, by its path


def test_an_lmstudio_folder_that_is_a_link_out_of_the_store_is_refused(tmp_path, monkeypatch):
    """Hostile round IV, 3: the model folder itself a link out of ~/.lmstudio/models; the store's own root may be
    a link."""
    monkeypatch.setenv("HOME", str(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _tiny(elsewhere, "tiny.gguf")
    (tmp_path / ".lmstudio" / "models" / "org").mkdir(parents=True)
    (tmp_path / ".lmstudio" / "models" / "org" / "tiny-GGUF").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ModelError, match="outside LM Studio's store") as e:
        load_model("org/tiny-GGUF")
    _out_of_store(e, elsewhere)
    real_store = tmp_path / "disk" / "models"
    (real_store / "org").mkdir(parents=True)
    shutil.move(elsewhere, real_store / "org" / "tiny-GGUF")
    shutil.rmtree(tmp_path / ".lmstudio")
    (tmp_path / ".lmstudio").mkdir()
    (tmp_path / ".lmstudio" / "models").symlink_to(real_store, target_is_directory=True)
    assert load_model("org/tiny-GGUF").model_type == "qwen3"


@pytest.mark.parametrize("tag", ["latest", "tokenizer.json", "model.safetensors.index.json"])
def test_an_ollama_manifest_has_its_own_small_cap_whatever_its_tag(tag, tmp_path, monkeypatch):
    """Hostile round IV, 4: tag `tokenizer.json` was read under 256 MiB and then parsed with no price; a manifest
    is capped at MANIFEST_BYTES before it is parsed (a sparse file: nothing big is written)."""
    from attncli.models.opening.stores import MANIFEST_BYTES

    store = _ollama(tmp_path, _tiny(tmp_path), tag=tag)
    manifest = store / "manifests" / "registry.ollama.ai" / "library" / "tiny" / tag
    with manifest.open("r+b") as f:
        f.truncate(40 * 2**20)  # 40 MB of NUL bytes after the JSON, none of them on the disk
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    from attncli.errors import DataError

    assert MANIFEST_BYTES < 40 * 2**20
    with pytest.raises(DataError, match="is larger than 1 MiB, the most attn reads") as e:
        load_model(f"tiny:{tag}")
    assert "\n" not in str(e.value)


def test_a_hugging_face_cache_repo_of_gguf_files(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    snapshot = tmp_path / "hub" / "models--org--tiny-GGUF" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("abc")
    _tiny(snapshot, "tiny.Q4_1.gguf")
    assert load_model("org/tiny-GGUF").model_type == "qwen3"


def test_a_hugging_face_snapshot_gguf_linked_out_of_the_cache_is_refused(tmp_path, monkeypatch):
    """Hostile round IV, 2: a snapshot's GGUF linked outside the cache (not into its own blobs/) was loaded, as
    its safetensors are not; a link into blobs/, as the hub makes them, is read."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    repo = tmp_path / "hub" / "models--org--tiny-GGUF"
    snapshot = repo / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    outside = _tiny(tmp_path, "outside.gguf")
    (snapshot / "tiny.Q4_1.gguf").symlink_to(outside)
    with pytest.raises(ModelError, match="outside the model folder") as e:
        load_model("org/tiny-GGUF")
    _out_of_store(e, outside)
    (repo / "blobs").mkdir()
    shutil.move(outside, repo / "blobs" / "0123")
    (snapshot / "tiny.Q4_1.gguf").unlink()
    (snapshot / "tiny.Q4_1.gguf").symlink_to(repo / "blobs" / "0123")
    assert load_model("org/tiny-GGUF").model_type == "qwen3"


# ---- tokenizers from tokenizer.ggml.* ----------------------------------------------------------------------


TOKENIZERS = json.loads((Path(__file__).parent / "gguf_tokenizers.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", sorted(TOKENIZERS["ids"]))
def test_a_gguf_tokenizer_gives_transformers_ids(case):
    """SentencePiece (merges from the file, or from the scores, or Gemma's from the order of its tokens; byte
    fallback; with and without the space before the text), byte-level BPE under each pre-tokenizer name, BOS and
    EOS, over texts with leading and repeated spaces, tabs, newlines, digits, CJK, emoji, code and control
    tokens: the ids transformers' GGUF loading gave,
    or llama.cpp's split where transformers ignores the name (tools/golden_gguf_tokenizers.py, `reference`)."""
    from attncli.models.opening.gguf_arch import ARCHITECTURES
    from attncli.models.text.gguf_tokenizer import tokenizer_from
    from tests.models.gguf_files import ARCHITECTURE, tokenizer_cases

    meta = tokenizer_cases(TOKENIZERS["sentencepiece"], TOKENIZERS["bytelevel"])[case]
    arch = ARCHITECTURE.get(case, "llama")
    by_position = ARCHITECTURES[arch].merges_by_position
    tok = tokenizer_from({**meta, "general.architecture": arch}, case, merges_by_position=by_position)
    for text, ids in zip(TOKENIZERS["texts"], TOKENIZERS["ids"][case]):
        assert tok.encode(text).ids == ids, text


def test_a_pre_tokenizer_attn_does_not_know_is_refused_in_one_line():
    """A tokenizer.ggml.pre not in PRES would cut the text where the merges never did: refused, never guessed."""
    from attncli.models.text.gguf_tokenizer import PRES, tokenizer_from
    from tests.models.gguf_files import tokenizer_cases

    meta = tokenizer_cases(TOKENIZERS["sentencepiece"], TOKENIZERS["bytelevel"])["bpe-default"]
    for name in ("no-such-pre", 7, "x" * 500):
        with pytest.raises(ModelError, match=r"tokenizer\.ggml\.pre .* attn does not know") as e:
            tokenizer_from({**meta, "tokenizer.ggml.pre": name}, "f.gguf")
        assert "\n" not in str(e.value) and len(str(e.value)) < 200 + sum(len(n) + 2 for n in PRES)


def test_bos_follows_llama_cpp_when_the_file_does_not_say():
    """llama.cpp adds BOS for a SentencePiece vocabulary and for the llama-bpe and tekken splits when the file has
    no add_bos_token, not for GPT-2's; a flag that is not a boolean is refused."""
    from attncli.models.text.gguf_tokenizer import tokenizer_from
    from tests.models.gguf_files import tokenizer_cases

    cases = tokenizer_cases(TOKENIZERS["sentencepiece"], TOKENIZERS["bytelevel"])
    for case, bos in (("bpe-llama-bpe", True), ("bpe-tekken", True), ("bpe-qwen2", False), ("spm-scores", True)):
        meta = {k: v for k, v in cases[case].items() if k != "tokenizer.ggml.add_bos_token"}
        first = tokenizer_from(meta, case).encode("time flies").ids[0]
        assert (first == meta["tokenizer.ggml.bos_token_id"]) == bos, case
    with pytest.raises(ModelError, match="add_space_prefix is 'no', not a boolean"):
        tokenizer_from({**cases["spm-scores"], "tokenizer.ggml.add_space_prefix": "no"}, "f.gguf")


def test_deepseek_llm_letters_are_the_cased_scripts_in_ascending_ranges():
    """DeepSeek LLM's letter class (typed as escapes): every range ascending, the cased scripts in it (Latin,
    Greek, Cyrillic, capital Armenian, Georgian, Cherokee, Glagolitic, Deseret, Adlam), never CJK, digits or a space."""
    import re

    from attncli.models.text.gguf_tokenizer import _LATIN_GREEK_CYRILLIC

    body = _LATIN_GREEK_CYRILLIC.removeprefix("\\s?[").removesuffix("]+")
    assert all(lo <= hi for lo, hi in re.findall(r"(.)-(.)", body, re.S))
    letters = re.compile(f"[{body}]+")
    assert letters.fullmatch("Zaéßʃπώ\u1f7dЖжԱႠᏸⰀ\U00010400\U0001e900")
    assert not any(letters.search(c) for c in "東한1 _-")


def test_scores_and_token_types_may_be_numpy_arrays():
    """A reader may give the numeric arrays of the metadata as NumPy views of the file: the same tokenizer."""
    from attncli.models.text.gguf_tokenizer import tokenizer_from
    from tests.models.gguf_files import tokenizer_cases

    meta = tokenizer_cases(TOKENIZERS["sentencepiece"], TOKENIZERS["bytelevel"])["spm-user-defined"]
    arrays = {k: np.asarray(meta[k]) for k in ("tokenizer.ggml.scores", "tokenizer.ggml.token_type")}
    text = TOKENIZERS["texts"][-1]
    assert tokenizer_from({**meta, **arrays}, "f").encode(text).ids == tokenizer_from(meta, "f").encode(text).ids
