"""Llama-shaped GGUF files with random Q4_K weights: the sizes people run (Llama 3.2 1B, Llama 3.1 8B), never committed.

    python tools/make_big_gguf.py 1b /work/big/llama-1b-q4k.gguf     # 0.7 GiB, a few seconds
    python tools/make_big_gguf.py 8b /work/big/llama-8b-q4k.gguf     # 4.3 GiB, about a minute
    python tools/make_big_gguf.py tiny /tmp/tiny.gguf                 # 2 layers, d_model 256: the tests' and CI's

Pinned: gguf==0.19.0 (its GGUFWriter; attncli's own `gguf` extra). What a file holds, as llama.cpp's converter
writes a Llama 3 model (`general.architecture` llama):

- the real shapes (SHAPES: width, layers, heads and key/value heads, MLP width, vocabulary of 128,256, Llama 3.1's
  rope_freqs factors; the 1B ties its head to the word table, the 8B has its own `output.weight`);
- every matrix as Q4_K blocks (256 values, 144 bytes: fp16 d and dmin, 12 bytes of 6-bit scales and mins, 128
  bytes of 4-bit values, llama.cpp's block_q4_K) of random bytes, except d and dmin, drawn so that every weight
  is finite and modest (|w| < 0.06, mean about 0: dmin ≈ 7.5 d, the mean of d · scale · q over the bytes);
  random fp16 scales would give infinities. The norms are F32 near 1;
- a byte-level BPE tokenizer (`tokenizer.ggml.model` gpt2, `pre` llama-bpe): GPT-2's 256 byte symbols, merges of
  a letter (or "Ġ" and a letter) and a letter, unreachable filler tokens up to 128,000, then Llama 3's 256 control
  tokens (`<|begin_of_text|>` = 128000, added before a text).

The random stream is seeded (--seed), so a file is the same each time. The data are written a tensor at a time
(GGUFWriter's add_tensor_info / write_tensor_data): the script's memory stays at about one tensor.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

SHAPES = {  # Llama 3.2 1B and Llama 3.1 8B (their config.json), and a tiny one for the tests
    "1b": {"d": 2048, "layers": 16, "heads": 32, "kv": 8, "ff": 8192, "vocab": 128256, "tied": True},
    "8b": {"d": 4096, "layers": 32, "heads": 32, "kv": 8, "ff": 14336, "vocab": 128256, "tied": False},
    "tiny": {"d": 256, "layers": 2, "heads": 4, "kv": 2, "ff": 512, "vocab": 2048, "tied": False},
}
QK_K, Q4_K_BYTES = 256, 144  # values and bytes of a Q4_K block
SPECIAL = 256  # Llama 3's control tokens at the end of the vocabulary


def _byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode table: the 256 symbols byte-level BPE writes bytes as, in byte order."""
    keep = [*range(33, 127), *range(161, 173), *range(174, 256)]
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


def tokenizer(vocab: int) -> dict:
    """`tokenizer.ggml.*` of a valid byte-level BPE with `vocab` tokens, the last SPECIAL of them control tokens."""
    tokens = _byte_symbols()
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    merges = []
    for first in ["Ġ", *letters]:
        for second in letters:
            merges.append(f"{first} {second}")
            tokens.append(first + second)
    regular = vocab - SPECIAL
    if len(tokens) > regular:
        raise SystemExit(f"a vocabulary of {vocab} is too small for the {len(tokens)} byte and merged tokens")
    tokens += [f"filler{i}" for i in range(regular - len(tokens))]  # valid entries no merge reaches
    names = ["<|begin_of_text|>", "<|end_of_text|>"] + [f"<|reserved_special_token_{i}|>" for i in range(SPECIAL - 2)]
    tokens += names
    types = [1] * regular + [3] * SPECIAL  # normal, then control
    return {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "llama-bpe",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.bos_token_id": regular,
        "tokenizer.ggml.eos_token_id": regular + 1,
        "tokenizer.ggml.add_bos_token": True,
    }


def llama3_factors(d_head: int) -> np.ndarray:  # -> [d_head / 2] float32: rope_freqs of Llama 3.1's rope_scaling
    """llama.cpp's rope_freqs for factor 8, low / high frequency factors 1 and 4, original length 8192."""
    theta = 500000.0 ** (-np.arange(0, d_head, 2, dtype=np.float64) / d_head)
    wavelength = 2 * np.pi / theta
    low, high = 8192 / 1.0, 8192 / 4.0
    smooth = (8192 / wavelength - 1.0) / (4.0 - 1.0)
    factors = np.where(wavelength < high, 1.0, np.where(wavelength > low, 8.0, 1 / ((1 - smooth) / 8.0 + smooth)))
    return factors.astype(np.float32)


def q4_k(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:  # -> [rows, cols / 256 · 144] uint8
    """Random Q4_K blocks whose fp16 d and dmin are finite and modest (see the module's docstring)."""
    blocks = rows * cols // QK_K
    raw = rng.integers(0, 256, (blocks, Q4_K_BYTES), dtype=np.uint8)
    d = rng.uniform(1e-5, 3e-5, blocks).astype(np.float16)
    dmin = (d.astype(np.float32) * 7.5 * rng.uniform(0.9, 1.1, blocks)).astype(np.float16)
    raw[:, 0:2] = d.view(np.uint8).reshape(blocks, 2)
    raw[:, 2:4] = dmin.view(np.uint8).reshape(blocks, 2)
    return raw.reshape(rows, -1)


def plan(s: dict) -> list[tuple[str, tuple[int, int] | tuple[int], str]]:  # -> (name, NumPy shape, "Q4_K"/"F32")
    """Every tensor of the file, in llama.cpp's order, with its shape (rows first) and type."""
    d, d_head = s["d"], s["d"] // s["heads"]
    out: list = [("token_embd.weight", (s["vocab"], d), "Q4_K"), ("rope_freqs.weight", (d_head // 2,), "F32")]
    for l in range(s["layers"]):
        b = f"blk.{l}."
        out += [
            (b + "attn_norm.weight", (d,), "F32"),
            (b + "attn_q.weight", (d, d), "Q4_K"),
            (b + "attn_k.weight", (s["kv"] * d_head, d), "Q4_K"),
            (b + "attn_v.weight", (s["kv"] * d_head, d), "Q4_K"),
            (b + "attn_output.weight", (d, d), "Q4_K"),
            (b + "ffn_norm.weight", (d,), "F32"),
            (b + "ffn_gate.weight", (s["ff"], d), "Q4_K"),
            (b + "ffn_up.weight", (s["ff"], d), "Q4_K"),
            (b + "ffn_down.weight", (d, s["ff"]), "Q4_K"),
        ]
    out.append(("output_norm.weight", (d,), "F32"))
    if not s["tied"]:
        out.append(("output.weight", (s["vocab"], d), "Q4_K"))
    return out


def write(path: Path, shape: str, seed: int = 0) -> Path:
    """The GGUF file of SHAPES[shape] at `path`."""
    import gguf

    s, rng = SHAPES[shape], np.random.default_rng(seed)
    d_head = s["d"] // s["heads"]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(f"random Llama-shaped {shape} (tools/make_big_gguf.py)")
    w.add_uint32("general.file_type", 15)  # llama.cpp's MOSTLY_Q4_K_M
    w.add_context_length(131072)
    w.add_embedding_length(s["d"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ff"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv"])
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(d_head)
    w.add_vocab_size(s["vocab"])
    for key, value in tokenizer(s["vocab"]).items():
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        else:
            w.add_array(key, value)
    tensors = plan(s)
    for name, dims, kind in tensors:
        if kind == "F32":
            w.add_tensor_info(name, dims, np.dtype(np.float32), 4 * int(np.prod(dims)))
        else:
            stored = (dims[0], dims[1] // QK_K * Q4_K_BYTES)  # its bytes per row, as GGUFWriter takes a quant's shape
            w.add_tensor_info(name, stored, np.dtype(np.uint8), stored[0] * stored[1], gguf.GGMLQuantizationType.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, dims, kind in tensors:
        if name == "rope_freqs.weight":
            data = llama3_factors(d_head)
        elif kind == "F32":
            data = (1 + 0.05 * rng.standard_normal(dims)).astype(np.float32)
        else:
            data = q4_k(rng, *dims)
        w.write_tensor_data(data)
    w.close()
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("path", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    a.path.parent.mkdir(parents=True, exist_ok=True)
    print(write(a.path, a.shape, a.seed), file=sys.stderr)


if __name__ == "__main__":
    main()
