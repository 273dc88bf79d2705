"""Greedy generation, tokens per second: attn's KV-cached decoding against transformers' `generate`, one thread.

    python benchmarks/bench_generate.py [--model DIR] [--qwen-shape] [--new 32] [--runs 5]
        [--attn-python .venv/bin/python] [--torch-python ref/bin/python]

Two models: --model (a model folder or a GGUF file; default $ATTN_SMOLLM2, the SmolLM2-135M GGUF that CI
downloads, which both sides dequantize to float32 on load) and, with
--qwen-shape, a Qwen2-0.5B-shaped decoder with random BF16 weights and its whole vocabulary (151,936 rows: the
output head is a quarter of its multiply-adds), written by bench_decoder.py's `write_model`. Each run is a fresh
process of one side (attn in --attn-python, transformers in --torch-python), the two interleaved: it loads the
model, warms up with 2 tokens, then times --new tokens after a fixed 8-token prompt, end-of-sequence ignored,
on one thread (OPENBLAS_NUM_THREADS=1; torch.set_num_threads(1)). The table shows the medians, the ratio
attn / transformers (target: at least 1), the same per second of CPU time (what a busy machine's waiting does
not count) and the load average, which on a shared machine moves both sides.
--tiny: a tiny random Qwen2 and 4 tokens (tests/test_benchmarks.py), transformers only where it imports.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = [504, 3575, 282, 4649, 314, 253, 1345, 30]  # 8 ids inside every vocabulary used here

ATTN = """
import sys, time
from attncli.models import load_model
from attncli.models.runs.generate import decode
model = load_model(sys.argv[1]); prompt, new = [int(i) for i in sys.argv[2].split(",")], int(sys.argv[3])
decode(model, prompt, 2, eos=set())
start, cpu = time.perf_counter(), time.process_time()
ids = decode(model, prompt, new, eos=set())
print(len(ids) / (time.perf_counter() - start), len(ids) / (time.process_time() - cpu))
"""

TORCH = """
import sys, time, torch, transformers
torch.set_num_threads(1)
path = sys.argv[1]  # a folder, or a GGUF file (transformers dequantizes it to float32 through the gguf package)
where = dict(pretrained_model_name_or_path=path.rsplit("/", 1)[0], gguf_file=path.rsplit("/", 1)[1]) \
    if path.endswith(".gguf") else dict(pretrained_model_name_or_path=path)
model = transformers.AutoModelForCausalLM.from_pretrained(**where, dtype=torch.float32).eval()
prompt, new = torch.tensor([[int(i) for i in sys.argv[2].split(",")]]), int(sys.argv[3])
kw = dict(do_sample=False, num_beams=1, pad_token_id=0, eos_token_id=None)
with torch.no_grad():
    model.generate(prompt, max_new_tokens=2, **kw)
    start, cpu = time.perf_counter(), time.process_time()
    out = model.generate(prompt, max_new_tokens=new, **kw)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
print((out.shape[1] - prompt.shape[1]) / wall, (out.shape[1] - prompt.shape[1]) / cpu)
"""


def smollm2() -> Path | None:
    """The SmolLM2-135M GGUF that the tests and CI name with $ATTN_SMOLLM2 (.ci/run downloads it), or None."""
    path = os.environ.get("ATTN_SMOLLM2")
    return Path(path) if path else None


def one(python: str, script: str, folder: Path, new: int, prompt: list[int]) -> tuple[float, float] | None:
    """Tokens per second (of wall time, of CPU time) of one fresh process, or None when that side cannot run
    here (no torch)."""
    if not Path(python).exists():
        return None
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    args = [python, "-c", script, str(folder), ",".join(map(str, prompt)), str(new)]
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        if "No module named 'torch'" in r.stderr or "No module named 'transformers'" in r.stderr:
            return None
        raise SystemExit(f"{python} failed:\n{r.stderr[-2000:]}")
    wall, cpu = r.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def row(name: str, folder: Path, a: argparse.Namespace, prompt: list[int]) -> str:
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for _ in range(a.runs):  # interleaved: a change of the machine's load falls on both sides
        mine = one(a.attn_python, ATTN, folder, a.new, prompt)
        assert mine is not None  # attn's own environment
        ours.append(mine)
        t = one(a.torch_python, TORCH, folder, a.new, prompt)
        if t is not None:
            theirs.append(t)
    wall, cpu = (statistics.median(r[i] for r in ours) for i in (0, 1))
    if not theirs:
        return f"| {name} | {wall:.2f} | (transformers not importable here) | | | {cpu:.2f} | |"
    ref_wall, ref_cpu = (statistics.median(r[i] for r in theirs) for i in (0, 1))
    met = "yes" if wall >= ref_wall else f"no (-{(1 - wall / ref_wall) * 100:.0f}%)"
    return (
        f"| {name} | {wall:.2f} | {ref_wall:.2f} | {wall / ref_wall:.2f}x | {met} | {cpu:.2f} / {ref_cpu:.2f} | "
        f"{cpu / ref_cpu:.2f}x |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=smollm2(), help="a model folder or GGUF file ($ATTN_SMOLLM2)")
    ap.add_argument("--qwen-shape", action="store_true", help="also a Qwen2-0.5B shape, random BF16 weights")
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--attn-python", default=sys.executable)
    ap.add_argument("--torch-python", default="ref/bin/python")
    ap.add_argument("--tiny", action="store_true")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_decoder import write_model

    print(
        "| model | attn tokens/s | transformers tokens/s | ratio | at least transformers | "
        "per CPU second attn / tf | ratio |"
    )
    print("|---|---:|---:|---:|---|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        if a.tiny:
            shape = dict(hidden=32, layers=2, heads=4, kv_heads=2, intermediate=64, vocab=1000)
            write_model(Path(tmp) / "tiny", argparse.Namespace(**shape))
            a.new, a.runs = 4, 1
            print(row("tiny random qwen2", Path(tmp) / "tiny", a, [i % 1000 for i in PROMPT]))
        else:
            if a.model is not None and a.model.exists():
                print(row(f"{a.model.name} (float32)", a.model, a, PROMPT))
            else:
                print(f"| no model: set ATTN_SMOLLM2 to the SmolLM2 GGUF or give --model ({a.model}) | | | | | | |")
            if a.qwen_shape:
                shape = dict(hidden=896, layers=24, heads=14, kv_heads=2, intermediate=4864, vocab=151936)
                write_model(Path(tmp) / "qwen", argparse.Namespace(**shape))
                print(row("Qwen2-0.5B shape (random BF16, run in float32)", Path(tmp) / "qwen", a, PROMPT))
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {a.runs} interleaved runs, median")


if __name__ == "__main__":
    main()
