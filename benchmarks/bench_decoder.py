"""Time and peak memory of `attn` on a Qwen2.5-0.5B-shaped decoder with random BF16 weights (or Q4_0 GGUF).

    python benchmarks/bench_decoder.py [--runs 3] [--vocab 16384] [--keep DIR] [--gguf]

Writes a model folder (config.json, model.safetensors in BF16, a byte-level BPE tokenizer.json)
with Qwen2.5-0.5B's shape — hidden 896, 24 layers, 14 query heads sharing 2 key/value heads,
intermediate 4864 — into a temporary folder, and a text of exactly --tokens tokens (128). The
vocabulary is shrunk (--vocab, default 16384 instead of 151936) to keep the file small: only the
rows of the text's tokens are ever read, so its size changes neither time nor memory.

Each row is a fresh process (`python -m attncli ...`), the median of --runs, as GNU time
(/usr/bin/time) reports it: wall and CPU seconds and the maximum resident set. "f32 read" is the
float32 size of the tensors the command reads (the layers up to the one shown, the last one
without its MLP, which cannot change its attention); the start-up row (a text run, no model) is
the part of the peak that is Python, NumPy, Rich and tokenizers. Run by hand, not in CI (CI runs
it at a tiny size). With --gguf the same tensors are one GGUF file as llama.cpp would write it, every
matrix in Q4_0 (random 4-bit blocks, 18 bytes per 32 weights; norms and biases F32, the tokenizer as
`tokenizer.ggml.*`): the file is memory-mapped and each tensor dequantized when its layer runs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "tests" / "models" / "golden" / "qwen2" / "tokenizer.json"
TIME = "/usr/bin/time"  # GNU time: the wall, CPU and peak memory of one process


def shapes(a: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """Qwen2 tensor names and shapes (model. prefix, as Qwen2ForCausalLM saves them)."""
    d, h, kv, dk, ff = a.hidden, a.heads, a.kv_heads, a.hidden // a.heads, a.intermediate
    out = {"model.embed_tokens.weight": (a.vocab, d), "model.norm.weight": (d,)}
    for l in range(a.layers):
        p = f"model.layers.{l}."
        out |= {p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,)}
        out |= {p + "self_attn.q_proj.weight": (h * dk, d), p + "self_attn.q_proj.bias": (h * dk,)}
        for k in "kv":
            out |= {f"{p}self_attn.{k}_proj.weight": (kv * dk, d), f"{p}self_attn.{k}_proj.bias": (kv * dk,)}
        out |= {p + "self_attn.o_proj.weight": (d, h * dk)}
        out |= {
            p + "mlp.gate_proj.weight": (ff, d),
            p + "mlp.up_proj.weight": (ff, d),
            p + "mlp.down_proj.weight": (d, ff),
        }
    return out


def write_model(folder: Path, a: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """config.json, a BF16 model.safetensors written tensor by tensor (never all in memory), tokenizer.json."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": a.hidden,
        "intermediate_size": a.intermediate,
        "num_hidden_layers": a.layers,
        "num_attention_heads": a.heads,
        "num_key_value_heads": a.kv_heads,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "use_sliding_window": False,
        "sliding_window": 32768,
        "max_window_layers": 21,
        "tie_word_embeddings": True,
        "vocab_size": a.vocab,
        "hidden_act": "silu",
        "torch_dtype": "bfloat16",
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    shutil.copy(TOKENIZER, folder / "tokenizer.json")
    table, header, offset = shapes(a), {}, 0
    for name, shape in table.items():
        size = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    rng = np.random.default_rng(0)
    with open(folder / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for name, shape in table.items():
            scale = 1.0 if name.endswith("norm.weight") else 0.05
            values = rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
            if name.endswith("norm.weight"):
                values = np.abs(values)
            f.write((values.view(np.uint32) >> 16).astype(np.uint16).tobytes())
    return table


def write_gguf(path: Path, a: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """The same tensors as one Q4_0 GGUF of architecture qwen2 (gguf's own writer and name map)."""
    import gguf

    sys.path.insert(0, str(ROOT))
    from tests.models.gguf_files import tokenizer_meta, write

    table = shapes(a)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, a.layers)
    meta = {
        "qwen2.block_count": a.layers,
        "qwen2.context_length": 32768,
        "qwen2.embedding_length": a.hidden,
        "qwen2.feed_forward_length": a.intermediate,
        "qwen2.attention.head_count": a.heads,
        "qwen2.attention.head_count_kv": a.kv_heads,
        "qwen2.attention.layer_norm_rms_epsilon": 1e-6,
        "qwen2.rope.freq_base": 1000000.0,
    }
    rng, tensors = np.random.default_rng(0), {}
    for name, shape in table.items():
        stored = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if len(shape) == 1:
            tensors[stored] = (np.abs(rng.standard_normal(shape, dtype=np.float32)), "F32")
            continue
        blocks = rng.integers(0, 256, (shape[0], shape[1] // 32, 18), dtype=np.uint8)
        blocks[..., :2] = np.array([0.05 / 8], dtype=np.float16).view(np.uint8)  # each block's scale d
        tensors[stored] = (blocks.reshape(shape[0], -1), "Q4_0")
    write(path, "qwen2", meta, tensors, tokenizer_meta(TOKENIZER.parent, False))
    return table


def text_of(tokens: int) -> str:
    """Sentences of the project's corpus, cut to exactly `tokens` tokens of the benchmark's tokenizer."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    words = (ROOT / "sample_texts" / "bpe_corpus.txt").read_text(encoding="utf-8").split()
    text = ""
    for w in words:
        longer = (text + " " + w).strip()
        if len(tok.encode(longer).ids) > tokens:
            break
        text = longer
    while len(tok.encode(text).ids) < tokens:
        text += "."
    return text


def measure(args: list[str], runs: int) -> tuple[float, float, float]:
    """Median wall seconds, median CPU seconds (user + system: what a busy machine changes least) and the
    largest peak RSS (MiB) of `runs` fresh processes of `python -m attncli ARGS`.

    The process is started by /usr/bin/time, whose own report is read: a child forked straight from
    this (large) process would count this process's resident pages in its peak (Linux keeps the
    high-water mark across exec)."""
    times, cpus, peaks = [], [], []
    for _ in range(runs):
        p = subprocess.run(
            [TIME, "-f", "%e %U %S %M", sys.executable, "-m", "attncli", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if p.returncode != 0:
            raise SystemExit(f"attn {args[0]} failed: {p.stderr[-500:]}")
        wall, user, system, peak_kib = p.stderr.split()[-4:]
        times.append(float(wall))
        cpus.append(float(user) + float(system))
        peaks.append(int(peak_kib) / 1024)
    return statistics.median(times), statistics.median(cpus), max(peaks)


def f32_read(table: dict, upto: int, n: int, mlp_of_last: bool) -> float:
    """MiB of float32 the pass reads: layers 0..upto (the last without its MLP unless asked), n embedding rows."""
    total = n * table["model.embed_tokens.weight"][1]
    for name, shape in table.items():
        if not name.startswith("model.layers."):
            continue
        layer = int(name.split(".")[2])
        if layer < upto or (layer == upto and (mlp_of_last or (".mlp." not in name and "post_attention" not in name))):
            total += int(np.prod(shape))
    if mlp_of_last:
        total += table["model.norm.weight"][0]
    return total * 4 / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=896)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--heads", type=int, default=14)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--intermediate", type=int, default=4864)
    ap.add_argument("--vocab", type=int, default=16384)
    ap.add_argument(
        "--on-screen",
        action="store_true",
        help="also time layer 0's matrices drawn as tables (minutes at 128 tokens: the layout, not the model)",
    )
    ap.add_argument("--keep", type=Path, help="write the model here and keep it (default: a temporary folder)")
    ap.add_argument("--gguf", action="store_true", help="the model as one Q4_0 GGUF file instead of BF16 safetensors")
    a = ap.parse_args()
    tmp = None if a.keep else tempfile.mkdtemp(prefix="attn-bench-decoder-")
    folder = a.keep or Path(tmp or ".") / "qwen2.5-0.5b-shape"
    try:
        start = time.perf_counter()
        if a.gguf:
            folder.mkdir(parents=True, exist_ok=True)
            table, weights = write_gguf(folder / "model.Q4_0.gguf", a), folder / "model.Q4_0.gguf"
        else:
            table, weights = write_model(folder, a), folder / "model.safetensors"
        size, kind = weights.stat().st_size / 2**20, "Q4_0 GGUF" if a.gguf else "BF16"
        print(f"model: {weights} ({size:,.0f} MiB {kind}, written in {time.perf_counter() - start:.1f} s)", flush=True)
        text = text_of(a.tokens)
        last, middle = a.layers - 1, a.layers // 2
        model = ["--model", str(weights if a.gguf else folder)]
        rows = [
            ("start-up: attn show TEXT (no model)", ["show", text], None),
            ("show --layer 0 -f json (all heads)", ["show", text, *model, "--layer", "0", "-f", "json"], (0, False)),
            (
                f"show --layer {middle} -f json",
                ["show", text, *model, "--layer", str(middle), "-f", "json"],
                (middle, False),
            ),
            (f"show -f json (last layer, {last})", ["show", text, *model, "-f", "json"], (last, False)),
            ("heads (every layer, on screen)", ["heads", text, *model], (last, True)),
        ]
        if a.on_screen:
            rows.append(
                (
                    "show --layer 0 --head 0 (on screen)",
                    ["show", text, *model, "--layer", "0", "--head", "0"],
                    (0, False),
                )
            )
            rows.append(("show --layer 0 (all heads, on screen)", ["show", text, *model, "--layer", "0"], (0, False)))
        print(f"{a.tokens} tokens, median of {a.runs} fresh processes, peak = max resident set", flush=True)
        heading = ("command", "wall s", "cpu s", "peak MiB", "f32 read", "peak/read", "(peak-start)/read")
        print("{:38s} {:>7s} {:>7s} {:>9s} {:>9s} {:>9s} {:>18s}".format(*heading))
        base = 0.0
        for label, args, reads in rows:
            seconds, cpu, peak = measure([*args, "--color", "never", "--width", "120"], a.runs)
            if reads is None:
                base = peak
                print(f"{label:38s} {seconds:7.2f} {cpu:7.2f} {peak:9.0f}", flush=True)
                continue
            read = f32_read(table, reads[0], a.tokens, reads[1])
            ratios = f"{peak / read:9.2f} {(peak - base) / read:18.2f}"
            print(f"{label:38s} {seconds:7.2f} {cpu:7.2f} {peak:9.0f} {read:9.0f} {ratios}", flush=True)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
