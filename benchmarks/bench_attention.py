"""Benchmark of attncli's attention core against naive NumPy and PyTorch.

Run from the repository root (any Python with numpy; torch optional):

    python benchmarks/bench_attention.py            # full: n = 512 ... 8192
    python benchmarks/bench_attention.py --quick    # a smoke run in seconds

Everything is float32, 12 heads, d_k = d_v = 64, self-attention (m = n). For
each n the implementations run interleaved (one run of each, in rotating
order, repeated), so a noisy shared machine slows all of them alike; the
table shows the median wall time of each and its ratio to PyTorch's
``scaled_dot_product_attention`` (or to the naive version without torch).

- naive:    ``softmax(q @ k.T / np.sqrt(d)) @ v`` written the obvious way
            (note: ``/ np.sqrt(d)`` divides by a NumPy float64 scalar, which
            under NumPy 2 promotes the float32 scores to float64).
- weights:  ``attncli.core.kernels.attention_weights`` (weights [h, n, n] + outputs).
- outputs:  ``attncli.core.kernels.attention_outputs`` (outputs only, 2 threads).
- out(1t):  the same with threads=1 (BLAS limited to one thread too): shows
            what the two threads buy.
- torch:    ``torch.nn.functional.scaled_dot_product_attention`` on 4-D
            [1, h, n, d] tensors, torch.set_num_threads(os.cpu_count()).
- torch(1t): the same on one thread: out(1t) / torch(1t) is the per-core
            efficiency, free of how each scales over cores.

Then the peak extra memory (tracemalloc, which sees NumPy's allocations) of
``attention_outputs`` and ``attention_weights`` at n = 16384, one head, and
the start-up time of ``attn --help`` and ``attn show "time flies like an
arrow"`` when an ``attn`` command is found (``--attn PATH`` to name one).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from attncli.core import kernels

try:  # torch is never a dependency of attncli; it is only compared against
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

HEADS, D = 12, 64


def naive(q, k, v):
    """The obvious NumPy attention, as people write it."""
    # [h, n, d], [h, n, d], [h, n, d] -> [h, n, d]  (float64 inside: see module doc)
    d = q.shape[-1]
    s = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    return (s / s.sum(axis=-1, keepdims=True)) @ v


def make_inputs(n, heads=HEADS, d=D, seed=0):
    """Random float32 q, k, v [heads, n, d]."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((heads, n, d), dtype=np.float32) for _ in range(3))


def mem_available():
    """Bytes of memory available (Linux), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def implementations(q, k, v, n, with_single_thread):
    """name -> (callable, note); skipped ones map to (None, reason)."""
    scale = 1.0 / float(np.sqrt(D))
    avail = mem_available()
    impls = {}

    def fits(nbytes):
        return avail is None or nbytes < 0.4 * avail

    # naive: float64 scores plus ~3 temporaries of the same size
    if fits(4 * HEADS * n * n * 8):
        impls["naive"] = (lambda: naive(q, k, v), "")
    else:
        impls["naive"] = (None, f"skipped: needs ~{4 * HEADS * n * n * 8 / 2**30:.0f} GiB")
    if fits(HEADS * n * n * 4):
        impls["weights"] = (lambda: kernels.attention_weights(q, k, v, scale)[1], "")
    else:
        impls["weights"] = (None, f"skipped: weights are {HEADS * n * n * 4 / 2**30:.1f} GiB")
    impls["outputs"] = (lambda: kernels.attention_outputs(q, k, v, scale), "")
    if with_single_thread:
        impls["out(1t)"] = (lambda: kernels.attention_outputs(q, k, v, scale, threads=1), "")
    if torch is not None:
        tq, tk, tv = (torch.from_numpy(x)[None] for x in (q, k, v))

        def sdpa():
            with torch.no_grad():
                return torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)

        impls["torch"] = (sdpa, "")
        if with_single_thread:
            cores = torch.get_num_threads()

            def sdpa_1t():
                torch.set_num_threads(1)
                try:
                    return sdpa()
                finally:
                    torch.set_num_threads(cores)

            impls["torch(1t)"] = (sdpa_1t, "")
    return impls


def check_agreement(impls):
    """Max abs difference of every implementation's outputs from ``outputs``."""
    ref = np.asarray(impls["outputs"][0]())
    errs = {}
    for name, (fn, _) in impls.items():
        if fn is None:
            continue
        got = fn()
        got = got.numpy()[0] if torch is not None and isinstance(got, torch.Tensor) else np.asarray(got)
        errs[name] = float(np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max())
    return errs


def time_interleaved(impls, reps, gap=0.2):
    """Median wall seconds per implementation, runs interleaved in rotating order.

    ``gap`` seconds of sleep before each run let the previous run's idle
    threads stop spinning (an idle OpenBLAS thread busy-waits ~0.1 s after a
    multi-threaded call), so that no run pays for the one before it.
    """
    names = [name for name, (fn, _) in impls.items() if fn is not None]
    times = {name: [] for name in names}
    for fn in (impls[name][0] for name in names):  # warm-up (threads, caches, lazy imports)
        fn()
    for r in range(reps):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            time.sleep(gap)
            t0 = time.perf_counter()
            impls[name][0]()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def peak_memory(fn):
    """Peak bytes allocated (tracemalloc) while ``fn`` runs, above the start."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak - base


def startup_times(attn, reps=5):
    """Median wall seconds of ``attn --help`` and ``attn show ...`` in subprocesses."""
    cmds = {
        "attn --help": [attn, "--help"],
        'attn show "time flies like an arrow"': [attn, "show", "time flies like an arrow"],
    }
    env = dict(os.environ, NO_COLOR="1")
    res = {}
    for label, cmd in cmds.items():
        ts = []
        for _ in range(reps + 1):  # the first run warms the file cache; not counted
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, env=env)
            ts.append(time.perf_counter() - t0)
        res[label] = (statistics.median(ts[1:]), proc.returncode)
    return res


def profile(n=2048, reps=7, block=512):
    """Where the time goes, on ONE thread: a stage-by-stage replica of
    attention_outputs' loop in its usual case (query blocks of 512, key tiles
    of ~1 MiB of scores, no softmax shift needed, exp2 of the scores times
    log2 e where NumPy's float32 exp2 is SIMD; BLAS limited to one thread, as
    in the kernel), the kernel itself on one thread, and torch's SDPA and
    torch's own matmul/exp on the replica's shapes, also on one thread.
    Seconds summed over all blocks, medians of interleaved repeats.
    Returns {stage: seconds}."""
    # n -> {name: median seconds}
    from attncli.core.ops import NUMPY_OPS

    q, k, v = make_inputs(n)
    base2 = NUMPY_OPS.base2(np.dtype(np.float32))
    scale = 1.0 / float(np.sqrt(D)) / (np.log(2) if base2 else 1.0)
    exp = np.exp2 if base2 else np.exp
    kt = k.transpose(0, 2, 1) * np.float32(scale)  # [h, d, n], as the kernel folds the scale (and log2 e)
    tile = max(8, kernels._KEY_TILE_BYTES // (block * 4))
    s_buf = np.empty((block, min(tile, n)), np.float32)
    o_buf = np.empty((block, D), np.float32)
    p_buf = np.empty((block, D), np.float32)
    rs = np.empty(block, np.float32)
    rp = np.empty(block, np.float32)
    ones = np.ones(n, np.float32)
    stages = [
        "scores  q k^T (BLAS)",
        "exp2 or exp (in place)",
        "row sums (BLAS gemv)",
        "weights x V (BLAS)",
        "sums, normalise, loop",
    ]
    res = {name: [] for name in stages}
    res["replica total"] = []
    res["attention_outputs, 1 thread"] = []
    if torch is not None:
        tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
        tkt = torch.from_numpy(kt)
        t_s = torch.empty(s_buf.shape)
        for name in ["torch: same matmuls (mm)", "torch: same exp_", "torch SDPA (1 thread)"]:
            res[name] = []
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    import contextlib

    limit = threadpool_limits(1, user_api="blas") if threadpool_limits else contextlib.nullcontext()
    old_threads = torch.get_num_threads() if torch is not None else None
    with limit:
        if torch is not None:
            torch.set_num_threads(1)
        for _ in range(reps):
            acc = dict.fromkeys(stages, 0.0)
            t_all = time.perf_counter()
            for h in range(HEADS):
                for st in range(0, n, block):
                    for c0 in range(0, n, tile):
                        c1 = min(c0 + tile, n)
                        sb = s_buf[:, : c1 - c0]
                        t0 = time.perf_counter()
                        np.matmul(q[h, st : st + block], kt[h, :, c0:c1], out=sb)
                        t1 = time.perf_counter()
                        exp(sb, out=sb)
                        t2 = time.perf_counter()
                        np.matmul(sb, ones[: c1 - c0], out=rs if c0 == 0 else rp)
                        t3 = time.perf_counter()
                        np.matmul(sb, v[h, c0:c1], out=o_buf if c0 == 0 else p_buf)
                        t4 = time.perf_counter()
                        if c0:
                            rs += rp
                            o_buf += p_buf
                        for name, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                            acc[name] += dt
                    np.divide(o_buf, rs[:, None], out=o_buf)
            total = time.perf_counter() - t_all
            acc["sums, normalise, loop"] += total - sum(acc.values())
            for name in stages:
                res[name].append(acc[name])
            res["replica total"].append(total)
            t0 = time.perf_counter()
            kernels.attention_outputs(q, k, v, scale, threads=1)
            res["attention_outputs, 1 thread"].append(time.perf_counter() - t0)
            if torch is not None:
                with torch.no_grad():
                    t_mm = t_exp = 0.0
                    for h in range(HEADS):
                        for st in range(0, n, block):
                            for c0 in range(0, n, tile):
                                c1 = min(c0 + tile, n)
                                ts_ = t_s[:, : c1 - c0]
                                t0 = time.perf_counter()
                                torch.mm(tq[h, st : st + block], tkt[h, :, c0:c1], out=ts_)
                                t1 = time.perf_counter()
                                ts_.exp_()
                                t2 = time.perf_counter()
                                torch.mm(ts_, tv[h, c0:c1])
                                t3 = time.perf_counter()
                                t_mm += (t1 - t0) + (t3 - t2)
                                t_exp += t2 - t1
                    t2 = time.perf_counter()
                    torch.nn.functional.scaled_dot_product_attention(tq[None], tk[None], tv[None])
                    t3 = time.perf_counter()
                res["torch: same matmuls (mm)"].append(t_mm)
                res["torch: same exp_"].append(t_exp)
                res["torch SDPA (1 thread)"].append(t3 - t2)
        if torch is not None:
            torch.set_num_threads(old_threads)
    return {name: statistics.median(ts) for name, ts in res.items()}


def table_row(n, reps, med, base_name, header=False):
    """One markdown row (with the header first when asked): ms, then ratios."""
    ms_cols = ["naive", "weights", "outputs", "torch", "out(1t)", "torch(1t)"]
    ratio_cols = [("naive", base_name), ("weights", base_name), ("outputs", base_name), ("out(1t)", "torch(1t)")]
    ratio_cols = [(a, b) for a, b in ratio_cols if a != b]
    lines = []
    if header:
        titles = ["n", "reps"] + [f"{c} ms" for c in ms_cols] + [f"{a}/{b}" for a, b in ratio_cols]
        lines.append("| " + " | ".join(titles) + " |")
        lines.append("|" + "---:|" * len(titles))
    cells = [str(n), str(reps)] + [fmt_ms(med.get(c)).strip() for c in ms_cols]
    for a, b in ratio_cols:
        cells.append(f"{med[a] / med[b]:.2f}" if a in med and b in med else "-")
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fmt_ms(t):
    return f"{t * 1e3:9.1f}" if t is not None else "        -"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats (seconds)")
    ap.add_argument("--sizes", type=int, nargs="*", help="override the sequence lengths")
    ap.add_argument("--reps", type=int, help="override the repeats per size")
    ap.add_argument("--only", help="comma-separated subset: naive,weights,outputs,torch,out(1t),torch(1t)")
    ap.add_argument("--gap", type=float, default=0.2, help="seconds of idle before each timed run (default 0.2)")
    ap.add_argument("--attn", help="path of the attn command (default: found on PATH)")
    ap.add_argument("--no-memory", action="store_true", help="skip the n = 16384 memory measurement")
    ap.add_argument("--profile", action="store_true", help="also show where the time goes (one thread, n = 2048)")
    args = ap.parse_args(argv)

    cores = os.cpu_count() or 1
    if torch is not None:
        torch.set_num_threads(cores)
    sizes = args.sizes or ([256, 512, 1024] if args.quick else [512, 1024, 2048, 4096, 8192])

    print(f"# attncli attention benchmark  {datetime.date.today().isoformat()}")
    print(
        f"# {platform.machine()}, {cores} cores, Python {platform.python_version()}, "
        f"NumPy {np.__version__}, torch {torch.__version__ if torch is not None else 'not installed'}"
    )
    print(f"# float32, {HEADS} heads, d_k = d_v = {D}, self-attention; median wall ms of interleaved runs")
    base_name = "torch" if torch is not None else "naive"
    print("# ratios are of median times; out(1t)/torch(1t) compares one thread each")
    print(f"# load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")

    rows = []
    for n in sizes:
        q, k, v = make_inputs(n)
        impls = implementations(q, k, v, n, with_single_thread=True)
        if args.only:
            keep = set(args.only.split(",")) | {"outputs"}  # outputs: the agreement reference
            impls = {nm: impl for nm, impl in impls.items() if nm in keep}
        reps = args.reps or (3 if args.quick else (11 if n <= 2048 else 7 if n <= 4096 else 5))
        errs = check_agreement(impls)
        med = time_interleaved(impls, reps, gap=args.gap)
        rows.append((n, reps, impls, med, errs))
        print(table_row(n, reps, med, base_name, header=len(rows) == 1), flush=True)
        del q, k, v, impls

    print(f"\n# load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\nagreement with attention_outputs (max |diff| / max |out|):")
    for n, _, _, _, errs in rows:
        print(f"  n={n}: " + ", ".join(f"{nm} {e:.1e}" for nm, e in errs.items()))
    for n, _, impls, _, _ in rows:
        for nm, (fn, note) in impls.items():
            if fn is None:
                print(f"  n={n}: {nm} {note}")

    if not args.no_memory:
        n = 16384
        q, k, v = make_inputs(n, heads=1)
        scale = 1.0 / float(np.sqrt(D))
        print(f"\npeak extra memory, n = {n}, 1 head, float32 (tracemalloc; inputs excluded, result included):")
        mo = peak_memory(lambda: kernels.attention_outputs(q, k, v, scale))
        print(
            f"  attention_outputs (block 256, 2 threads): {mo / 2**20:8.1f} MiB"
            f"   (its result alone: {n * D * 4 / 2**20:.1f} MiB)"
        )
        if (mem_available() or 1 << 40) > 4 * n * n * 4:
            mw = peak_memory(lambda: kernels.attention_weights(q, k, v, scale))
            print(
                f"  attention_weights:                         {mw / 2**20:8.1f} MiB"
                f"   (the weights alone: {n * n * 4 / 2**20:.1f} MiB)"
            )
        del q, k, v

    if args.profile:
        n = 2048
        print(f"\nprofile, one thread, n = {n}, {HEADS} heads, block 512, key tiles of 512 (ms, ns per score cell):")
        cells = HEADS * n * n
        for name, t in profile(n, reps=3 if args.quick else 7).items():
            print(f"  {name:30s} {t * 1e3:8.1f} ms  {t * 1e9 / cells:6.2f} ns/cell")

    print("\nstart-up (median of 5 runs, subprocess, wall):")
    attn = args.attn or shutil.which("attn")
    if attn is None:
        print("  skipped: no `attn` command on PATH (install the package, or pass --attn PATH)")
    else:
        for label, (t, rc) in startup_times(attn).items():
            note = "" if rc == 0 else f"   (exit status {rc})"
            print(f"  {label:40s} {t * 1e3:7.0f} ms{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
