"""The commands are a thin shell over the Python API (attncli.api): a command module reads its input, calls the
API and prints. Read from their imports (at module level and inside functions): besides the API, the CLI's
own modules, the errors and io's reading and writing, a command imports only what is named below, and why."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT

COMMANDS = sorted(p for p in (ROOT / "attncli" / "cli" / "commands").glob("*.py") if p.name != "__init__.py")
SHELL = ("attncli", "attncli.api", "attncli.cli", "attncli.errors", "attncli.io")  # and the modules under them
MORE = {
    "compute": {
        "attncli.core.masks": "checks --mask before the input is read",
        "attncli.pipeline": "reads the matrices from --input, stdin or .npy files",
        "attncli.pipeline.config": "checks the long-input options before the input is read",
    },
    "heads": {"attncli.core.statistics": "the --lines help lists the detectors and statistics"},
    "show": {
        "attncli.pipeline.lines": "--lines: runs the lines on worker processes, written in order as they come",
        "attncli.pipeline.heads": "--lines --stats: each line's head statistics for JSON, as the lines stream",
        "attncli.render.stats": "--lines: each line's table and statistics, as the lines stream",
    },
}
APP = {"explore"}  # a full-screen app: its state (render/explore/state.py) runs the pipeline at each key
HELP = {"help"}  # prints the help of attn or of one command: the command line's own, nothing to compute


def imports(path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.split(".")[0] == "attncli"}


@pytest.mark.parametrize("path", [p for p in COMMANDS if p.stem not in APP], ids=lambda p: p.stem)
def test_a_command_calls_the_api_and_prints(path):
    own = {name for name in imports(path) if not any(name == s or name.startswith(s + ".") for s in SHELL[1:])}
    assert own - {"attncli"} <= set(MORE.get(path.stem, {})), sorted(own)
    assert path.stem in HELP or "attncli" in imports(path) or "attncli.api" in imports(path)  # it calls the API
