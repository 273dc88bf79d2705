"""Activation patching, seconds: attn's `patch` against the same computation in transformers with hooks, one thread.

    python benchmarks/bench_causal.py [--model GGUF_OR_DIR] [--runs 3] [--what heads,resid]
        [--attn-python .venv/bin/python] [--torch-python ref/bin/python]

The model (default $ATTN_SMOLLM2, the SmolLM2-135M Q4_1 GGUF, which both sides dequantize to float32 on load)
patches the IOI pair of issue 35 ("When Mary and John went to the store, John gave a drink to" / "..., Mary
gave ...", target " Mary", contrast " John"), denoising, every head (--what heads) or every layer and position
(--what resid). attn: two traced passes, then per layer one batch of copies from that layer on
(attncli.models.interpret.patch). transformers: tools/golden_causal.py's `patch`, one full forward pass per patch with a
forward (pre-)hook, as the goldens are made. Each run is a fresh process of one side, the two interleaved, on one
thread (OPENBLAS_NUM_THREADS=1; torch.set_num_threads(1)); the model is loaded before the clock starts. The table
shows the medians of wall and CPU time (what a busy machine's waiting does not count) and attn / transformers.
--tiny: tests/models/golden/llama and a 5-word pair (tests/test_benchmarks.py), transformers only where it imports.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IOI = (
    "When Mary and John went to the store, John gave a drink to",
    "When Mary and John went to the store, Mary gave a drink to",
    " Mary",
    " John",
)
TINY = ("time flies like an arrow", "time fries like an arrow", "Ġa", "Ġl")

ATTN = """
import sys, time
from attncli.models import load_model
from attncli.models.interpret.patch import patch_document
model = load_model(sys.argv[1]); clean, corrupt, target, contrast, what = sys.argv[2:7]
start, cpu = time.perf_counter(), time.process_time()
patch_document(model, clean, corrupt, target, contrast, what)
print(time.perf_counter() - start, time.process_time() - cpu)
"""

TORCH = """
import sys, time, torch, transformers
sys.path.insert(0, sys.argv[7])
from golden_causal import patch
torch.set_num_threads(1)
path = sys.argv[1]
where = dict(pretrained_model_name_or_path=path.rsplit("/", 1)[0], gguf_file=path.rsplit("/", 1)[1]) \\
    if path.endswith(".gguf") else dict(pretrained_model_name_or_path=path)
tok = transformers.AutoTokenizer.from_pretrained(**where)
model = transformers.AutoModelForCausalLM.from_pretrained(**where, dtype=torch.float32, attn_implementation="eager")
model = model.eval()
clean, corrupt, target, contrast, what = sys.argv[2:7]
ids = lambda text: tok(text)["input_ids"]
def one(t):  # a token as the vocabulary writes it (\u0120a), else a text that is one token ( Mary)
    return tok.convert_tokens_to_ids(t) if t.startswith("\\u0120") else tok(t, add_special_tokens=False)["input_ids"][0]
start, cpu = time.perf_counter(), time.process_time()
patch(model, ids(clean), ids(corrupt), one(target), one(contrast), (what,))
print(time.perf_counter() - start, time.process_time() - cpu)
"""


def one(python: str, script: str, model: Path, pair: tuple[str, ...], what: str) -> tuple[float, float] | None:
    """Seconds (wall, CPU) of one fresh process, or None when that side cannot run here (no torch)."""
    if not Path(python).exists():
        return None
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [python, "-c", script, str(model), *pair, what, str(ROOT / "tools")], capture_output=True, text=True, env=env
    )
    if r.returncode != 0:
        if "No module named 'torch'" in r.stderr or "No module named 'transformers'" in r.stderr:
            return None
        raise SystemExit(f"{python} failed:\n{r.stderr[-2000:]}")
    wall, cpu = r.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=os.environ.get("ATTN_SMOLLM2"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--what", default="heads,resid")
    p.add_argument("--attn-python", default=sys.executable)
    p.add_argument("--torch-python", default=str(ROOT / "ref" / "bin" / "python"))
    p.add_argument("--tiny", action="store_true")
    a = p.parse_args()
    model, pair = (ROOT / "tests" / "models" / "golden" / "llama", TINY) if a.tiny else (a.model, IOI)
    if model is None:
        raise SystemExit("no model: give --model or set ATTN_SMOLLM2")
    runs = 1 if a.tiny else a.runs
    print(f"{'patch --what':14s} {'attn s (CPU)':>16s} {'transformers s (CPU)':>22s} {'attn / transformers':>20s}")
    for what in a.what.split(","):
        times: dict[str, list] = {"attn": [], "torch": []}
        for _ in range(runs):
            times["attn"].append(one(a.attn_python, ATTN, model, pair, what))
            times["torch"].append(one(a.torch_python, TORCH, model, pair, what))
        med = {
            k: None if None in v else tuple(statistics.median(t[i] for t in v) for i in (0, 1))
            for k, v in times.items()
        }
        at, tt = med["attn"], med["torch"]
        assert at is not None
        torch_cell = "(no torch here)" if tt is None else f"{tt[0]:.2f} ({tt[1]:.2f})"
        ratio = "" if tt is None else f"{at[0] / tt[0]:.2f} ({at[1] / tt[1]:.2f} CPU)"
        print(f"{what:14s} {f'{at[0]:.2f} ({at[1]:.2f})':>16s} {torch_cell:>22s} {ratio:>20s}")
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {runs} run(s), one thread each")


if __name__ == "__main__":
    main()
