"""Peak memory and time of the streaming formats, run by hand (not in CI):

    python benchmarks/formats.py            # 4000 characters, 1000 lines
    python benchmarks/formats.py --chars 2000 --lines 200

1. `attn show --file big.txt -t char -f json` on an N-character text: wall time,
   peak RSS, and the size of one n x n float64 matrix for comparison (the run
   must hold the scores and the weights, so about 2x that plus the interpreter).
2. `attn show --file lines.txt --lines -f jsonl` on L lines of 5-10 words: time
   per line (the time of a one-line run subtracted) and peak RSS (flat in L).

Linux/macOS: the peak RSS comes from os.wait4 (ru_maxrss, KiB on Linux).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "sample_texts" / "bpe_corpus.txt"


def measure(args: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS in MB, bytes written to stdout) of one `python -m attncli` process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "attncli", *args], stdout=out, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"attn {' '.join(args)} failed")
        rss = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
        return seconds, rss, out.seek(0, os.SEEK_END)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=4000)
    parser.add_argument("--lines", type=int, default=1000)
    opts = parser.parse_args()
    words = CORPUS.read_text(encoding="utf-8").split()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.txt"
        text = ""
        while len(text) < opts.chars:
            text += rng.choice(words) + " "
        big.write_text(text[: opts.chars], encoding="utf-8")
        n = len(big.read_text(encoding="utf-8"))
        matrix_mb = n * n * 8 / 1e6
        _, base_rss, _ = measure(["show", "a b", "-f", "json"])
        seconds, rss, size = measure(["show", "--file", str(big), "-t", "char", "-f", "json"])
        print(
            f"json, {n} char tokens: {seconds:.1f} s, {size / 1e6:.0f} MB written, peak RSS {rss:.0f} MB "
            f"(one {n}x{n} matrix: {matrix_mb:.0f} MB, so {rss / matrix_mb:.1f}x; a two-token run: "
            f"{base_rss:.0f} MB)"
        )

        lines = Path(tmp) / "lines.txt"
        lines.write_text(
            "".join(" ".join(rng.choice(words) for _ in range(rng.randint(5, 10))) + "\n" for _ in range(opts.lines)),
            encoding="utf-8",
        )
        one = Path(tmp) / "one.txt"
        one.write_text(lines.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
        t1, rss1, _ = measure(["show", "--file", str(one), "--lines", "-f", "jsonl"])
        tn, rssn, _ = measure(["show", "--file", str(lines), "--lines", "-f", "jsonl"])
        per_line = (tn - t1) / max(1, opts.lines - 1)
        print(
            f"--lines, {opts.lines} lines of 5-10 words: {tn:.2f} s in all, {per_line * 1e3:.2f} ms per line "
            f"(start-up {t1:.2f} s); peak RSS {rssn:.0f} MB (one line: {rss1:.0f} MB)"
        )


if __name__ == "__main__":
    main()
