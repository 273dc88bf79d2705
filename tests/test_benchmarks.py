"""The benchmarks run at tiny sizes, so a change to the package cannot leave them broken (their numbers are
read by hand from full runs: see benchmarks/README.md; nothing here depends on time)."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT

DECODER = [
    "--runs",
    "1",
    "--layers",
    "2",
    "--hidden",
    "32",
    "--heads",
    "4",
    "--intermediate",
    "64",
    "--vocab",
    "400",
    "--tokens",
    "16",
]  # not 0.5B
TINY = [
    ["bench_attention.py", "--sizes", "64", "--reps", "1", "--no-memory"],
    ["formats.py", "--chars", "60", "--lines", "3"],
    ["bench_model.py", "--help"],  # needs transformers and a real model: only its arguments are checked here
    ["view_page.py", "--help"],  # needs a real model and a browser: only its arguments are checked here
    ["explore.py", "--runs", "1"],  # the real program in tmux (without tmux it says so)
    ["speed.py", "--tiny"],  # every row of the speed table (a row whose floor cannot run here says so)
    ["bench_decoder.py", *DECODER],
    ["bench_decoder.py", *DECODER, "--gguf"],  # the same model as a Q4_0 GGUF
    ["bench_corpus.py", "--tiny"],  # a tiny random BERT; transformers too, where torch imports
    ["bench_generate.py", "--tiny"],  # a tiny random Qwen2; transformers' generate too, where torch imports
    ["bench_quants.py", "--tiny"],  # every ggml type, attn's dequantization against gguf.quants
    ["bench_causal.py", "--tiny"],  # the golden Llama's patching; transformers' hooks too, where torch imports
    ["bench_contrib.py", "--tiny"],  # the contribution maps on the golden BERT
    ["bench_big.py", "--tiny"],  # tools/make_big_gguf.py's tiny Llama-shaped Q4_K file: show, lens, generate
]


@pytest.mark.parametrize("args", TINY, ids=[a[0] for a in TINY])
def test_benchmark_runs_at_a_tiny_size(args):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / args[0]), *args[1:]], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip()
