"""Dequantization speed per ggml type: attn's (attncli/models/files/quants.py) against gguf.quants', one thread.

    python benchmarks/bench_quants.py [--values 4194304] [--runs 5] [--only Q4_K Q6_K]
    python benchmarks/bench_quants.py --model $ATTN_SMOLLM2 [--runs 7]   # a whole cold forward, too
    python benchmarks/bench_quants.py --tiny                              # what CI runs (seconds)

Each type: random blocks (fp16 scales made finite, as tests/models/test_quants.py draws them) of --values values
as one tensor, dequantized to float32 by attn and by gguf.quants (gguf==0.19.0, llama.cpp's Python package; the
test extra), interleaved, --runs times each. Printed: CPU time (process_time, so that a busy machine's waiting is
not counted) in ns per value, the medians; gguf's over attn's; the quantized bytes attn reads per CPU second; and
"2 threads": the wall time of dequantizing the tensor twice on one thread over that of two threads at once, each
once: 2.0 when the work leaves the GIL entirely (what readahead.py needs), 1.0 when it holds it (and less than
2.0 when the machine has no free core: the load average is printed); "Python": the share of a chunk's CPU time
outside NumPy's loops (one block's time over one chunk's), at most the share during which it holds the GIL.

--model FILE.gguf: load + forward through every layer of a 12-token text, cold (a new Model each run, OpenBLAS
on one thread), interleaved: dequantized by gguf.quants (what attn did before quants.py), by quants.py without the
read-ahead thread, and by quants.py with it (the default). Wall and CPU time, medians and fastest runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from functools import partial
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # after the thread count

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from attncli.models.files import quants
from attncli.models.files.quants import DEQUANTIZED, TYPES, QuantType, dequantize

SCALES = {  # type -> the byte offsets of its fp16 scales in a block (IQ1_M's d is spread: fixed in `blocks`)
    **dict.fromkeys(("Q4_0", "Q5_0", "Q8_0", "IQ4_NL", "IQ4_XS", "IQ2_XXS", "IQ2_XS", "IQ2_S"), (0,)),
    **dict.fromkeys(("IQ3_XXS", "IQ3_S", "IQ1_S"), (0,)),
    **dict.fromkeys(("Q4_1", "Q5_1", "Q4_K", "Q5_K"), (0, 2)),
    "Q2_K": (80, 82),
    "Q3_K": (108,),
    "Q6_K": (208,),
    "TQ1_0": (52,),
    "TQ2_0": (64,),
}
TEXT = "The quick brown fox jumps over the lazy dog because it wanted to"


def blocks(kind: QuantType, values: int, rng: np.random.Generator) -> np.ndarray:  # -> [rows, bytes per row] uint8
    """One tensor of random `kind` blocks, rows of 4096 values (or one row of the block when smaller)."""
    per_row = max(4096 // kind.block, 1) if values >= 4096 else max(values // kind.block, 1)
    rows = max(values // (per_row * kind.block), 1)
    raw = rng.integers(0, 256, (rows * per_row, kind.size), dtype=np.uint8)
    for at in SCALES.get(kind.name, ()):
        words = raw[:, at : at + 2].view(np.uint16)
        words[(words & 0x7C00) == 0x7C00] &= np.uint16(0xBFFF)
    if kind.name == "IQ1_M":  # d is the top nibbles of four words; its exponent's top bit is word 3's bit 14
        words = raw[:, 48:56].view(np.uint16)
        d = np.bitwise_or.reduce((words & 0xF000) >> np.array([12, 8, 4, 0], dtype=np.uint16), axis=1)
        words[(d & 0x7C00) == 0x7C00, 3] &= np.uint16(0xBFFF)
    return raw.reshape(rows, per_row * kind.size)


def cpu_ns(fn, values: int) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) / values * 1e9


def two_threads(fn) -> float:
    """Wall time of fn twice on this thread over fn once on each of two threads at once."""
    start = time.perf_counter()
    fn(), fn()
    serial = time.perf_counter() - start
    workers = [threading.Thread(target=fn) for _ in range(2)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return serial / (time.perf_counter() - start)


def held(kind: QuantType, raw: np.ndarray) -> float:
    """The share of a chunk's CPU time that is not NumPy's loops (which leave the GIL): the time of dequantizing
    one block, all Python and call overhead, over that of one chunk of blocks (quants.CHUNK values). An upper
    bound on the share of the time a reader thread holds the GIL, measured without a second core."""
    blocks = raw.reshape(-1, kind.size)
    step = max(quants.CHUNK // kind.block, 1) if kind.block > 1 else raw.size // kind.size
    one, chunk = blocks[:1].copy(), blocks[:step].copy()
    reps = max(200 * kind.block // 256, 20)
    start = time.process_time()
    for _ in range(reps):
        dequantize(one, kind)
    overhead = (time.process_time() - start) / reps
    start = time.process_time()
    for _ in range(5):
        dequantize(chunk, kind)
    return min(overhead / ((time.process_time() - start) / 5), 1.0)


def types_table(values: int, runs: int, only: list[str]) -> None:
    import gguf  # the test extra: the reference implementation
    from gguf import quants as reference

    rng = np.random.default_rng(0)
    print(
        f"{'type':8} {'attn ns/value':>14} {'gguf ns/value':>14} {'gguf/attn':>10} {'attn MB/s':>10} {'2 threads':>10}"
        f" {'Python':>7}"
    )
    for name in DEQUANTIZED:
        if only and name not in only:
            continue
        kind = next(t for t in TYPES.values() if t.name == name)
        raw = blocks(kind, values, rng)
        n = raw.size // kind.size * kind.block
        ours, theirs, overlap = [], [], []
        mine, gguf_s = (
            partial(dequantize, raw, kind),
            partial(reference.dequantize, raw, gguf.GGMLQuantizationType(kind.id)),
        )
        for _ in range(runs):
            ours.append(cpu_ns(mine, n))
            theirs.append(cpu_ns(gguf_s, n))
            overlap.append(two_threads(mine))
        a, g = statistics.median(ours), statistics.median(theirs)
        if name == "F32":
            print(f"{name:8} {'a view of the file: nothing to dequantize':>72}")
            continue
        rate = kind.size / kind.block / (a * 1e-9) / 1e6
        share = f"{held(kind, raw):.0%}"
        print(f"{name:8} {a:14.2f} {g:14.2f} {g / a:10.2f} {rate:10.0f} {statistics.median(overlap):10.2f} {share:>7}")


def forward_table(path: str, runs: int) -> None:
    import gguf
    from gguf import quants as reference

    from attncli.models import encode, forward, load_model
    from attncli.models.files import gguf as reader
    from attncli.models.opening import gguf_model

    def theirs(data: np.ndarray, kind: QuantType) -> np.ndarray:  # [rows, bytes] -> [rows, cols]: before quants.py
        return np.asarray(reference.dequantize(np.ascontiguousarray(data), gguf.GGMLQuantizationType(kind.id)))

    modes = {
        "gguf.quants, no read-ahead": (theirs, False),
        "quants.py, no read-ahead": (dequantize, False),
        "quants.py, read-ahead": (dequantize, True),
    }
    ids = encode(load_model(path), TEXT).ids
    times: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    for _ in range(runs):
        for mode, (fn, ahead) in modes.items():
            reader.dequantize, gguf_model.GGUFHandle.overlaps = fn, ahead
            wall, cpu = time.perf_counter(), time.process_time()
            forward(load_model(path), ids)
            times[mode].append((time.perf_counter() - wall, time.process_time() - cpu))
    reader.dequantize, gguf_model.GGUFHandle.overlaps = dequantize, True
    print(f"\nload + forward of {Path(path).name}, {len(ids)} tokens, cold, {runs} runs (seconds)")
    print(f"{'':28} {'wall median':>12} {'fastest':>8} {'CPU median':>11} {'fastest':>8}")
    for mode, t in times.items():
        w, c = [x[0] for x in t], [x[1] for x in t]
        print(f"{mode:28} {statistics.median(w):12.3f} {min(w):8.3f} {statistics.median(c):11.3f} {min(c):8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--values", type=int, default=1 << 22, help="values per tensor (default 4M)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=[], help="these types only")
    parser.add_argument("--model", help="a GGUF file: time its cold load + forward too")
    parser.add_argument("--tiny", action="store_true", help="4096 values, one run (CI)")
    args = parser.parse_args()
    np.seterr(all="ignore")  # random MXFP4 exponents of 255 overflow, as in gguf's (every thread's default)
    if args.tiny:
        args.values, args.runs = 4096, 1
    types_table(args.values, args.runs, args.only)
    if args.model:
        forward_table(args.model, args.runs)
    print(
        f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs, numpy {np.__version__}"
    )


if __name__ == "__main__":
    main()
