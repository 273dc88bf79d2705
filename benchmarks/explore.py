"""How fast `attn explore` answers, measured as a user sees it: the real program in tmux, the screen polled.

    python benchmarks/explore.py [--runs 7] [--model DIR] [--size 80x24]

Start-up: from the command sent to the shell to the first full screen (the side panel's title drawn).
A key: from the key sent to the screen that shows its effect — `]` (the next head), `v` (the next variant,
recomputed), and one character typed in the edit line (`e`, then a character: the text runs again after the
edit line's debounce). The floor is a `printf` at the shell prompt: what sending keys and polling alone
take. Each is the median of --runs, polled every 5 ms (the polling is in the numbers:
capture-pane itself takes a few ms). Without tmux it says so and measures nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = "time flies like an arrow"


class Terminal:
    """One tmux server with one window of `size`."""

    def __init__(self, size: tuple[int, int]):
        self.name = f"attn-bench-{uuid.uuid4().hex[:8]}"
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "TMUX")}
        self.tmux(
            "new-session", "-d", "-s", self.name, "-x", str(size[0]), "-y", str(size[1]), "bash", "--norc", env=env
        )

    def tmux(self, *args: str, env=None) -> str:
        return subprocess.run(
            ["tmux", "-L", self.name, *args], check=True, capture_output=True, text=True, env=env
        ).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def until(self, text: str, timeout: float = 60.0) -> float:
        """Seconds until the screen shows `text`."""
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            if text in self.tmux("capture-pane", "-p", "-t", self.name):
                return time.perf_counter() - start
            time.sleep(0.005)
        raise SystemExit(f"the screen never showed {text!r}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)


def one_run(size: tuple[int, int], model: str | None) -> dict[str, float]:
    term = Terminal(size)
    try:
        start = time.perf_counter()
        term.keys("printf 'a%sb\\n' -floor-", "Enter")
        term.until("a-floor-b")
        floor = {"tmux floor (printf)": time.perf_counter() - start}  # what sending and polling alone take
        args = ["--model", model] if model else ["--heads", "2"]
        command = f"{shlex.quote(sys.executable)} -m attncli explore {shlex.quote(TEXT)} {shlex.join(args)}"
        term.keys(f"cd {shlex.quote(str(ROOT))} && clear && PYTHONPATH=. " + command, "Enter")
        out = {**floor, "start-up": term.until("every key")}
        start = time.perf_counter()
        term.keys("]")
        term.until("head 1 of")
        out["] next head"] = time.perf_counter() - start
        if model is None:
            start = time.perf_counter()
            term.keys("v")
            term.until("variant cosine")
            out["v next variant"] = time.perf_counter() - start
        n = int(re.search(r"(\d+) tokens", term.tmux("capture-pane", "-p", "-t", term.name))[1])
        term.keys("e")
        term.until("editing")
        start = time.perf_counter()
        term.keys(" x")
        term.until(f"{n + 1} tokens")  # the status line: one token more
        out["edit: ' x' typed"] = time.perf_counter() - start
        term.keys("Enter", "q")
        return out
    finally:
        term.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--model", help="a model folder: explore its last layer instead of a text run")
    parser.add_argument("--size", default="80x24", help="the terminal, COLUMNSxLINES")
    a = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed: nothing measured (apt-get install tmux)")
        return
    size = tuple(int(x) for x in a.size.split("x"))
    runs = [one_run(size, a.model) for _ in range(a.runs)]  # type: ignore[arg-type]
    print(f"attn explore in tmux {a.size}, {'--model ' + a.model if a.model else 'a text run'}: median of {a.runs}")
    for name in runs[0]:
        values = sorted(r[name] * 1000 for r in runs)
        print(f"  {name:<18} {statistics.median(values):7.0f} ms   (min {values[0]:.0f}, max {values[-1]:.0f})")


if __name__ == "__main__":
    main()
