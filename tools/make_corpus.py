"""Write a corpus of short English texts, one per line, for `attn heads --lines`: python tools/make_corpus.py [N]

The lines are the sentences of sample_texts/bpe_corpus.txt (prose written for this project), drawn with a
fixed seed, one or two consecutive sentences each, so the same N gives the same file everywhere.

    >>> lines = corpus(3)
    >>> len(lines), all(line.strip() for line in lines)
    (3, True)
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "sample_texts" / "bpe_corpus.txt"


def sentences() -> list[str]:
    text = " ".join(SOURCE.read_text(encoding="utf-8").split())
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 4]


def corpus(n: int, seed: int = 0) -> list[str]:
    """`n` lines: one or two consecutive sentences each, drawn with `seed`."""
    pool = sentences()
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        i = rng.randrange(len(pool) - 1)
        out.append(" ".join(pool[i : i + rng.choice((1, 2))]))
    return out


if __name__ == "__main__":
    sys.stdout.write("\n".join(corpus(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)) + "\n")
