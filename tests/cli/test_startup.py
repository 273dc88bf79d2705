"""Start-up follows from the layout: the commands that need no maths load no NumPy, a text run no model code."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT


def imported(*args: str) -> set[str]:
    """The modules `attn ARGS` imports, read from Python's own import log (-X importtime)."""
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "attncli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["variants"], ["variants", "-f", "json"], ["show", "-h"]])
def test_commands_without_maths_import_no_numpy(args):
    modules = imported(*args)
    assert "attncli.cli.app" in modules
    assert "numpy" not in modules


@pytest.mark.parametrize("args", [["--help"], ["show", "time flies like an arrow"], ["explore", "-h"]])
def test_only_attn_explore_imports_textual(args):
    """Textual (a full-screen app framework) loads for `attn explore` alone, and only once it runs."""
    assert not {m for m in imported(*args) if m == "textual" or m.startswith(("textual.", "attncli.render.explore"))}


def test_a_text_run_imports_no_model_code():
    modules = imported("show", "time flies like an arrow")
    assert "numpy" in modules and "attncli.pipeline.run" in modules
    assert not {m for m in modules if m.startswith("attncli.models") or m.startswith("safetensors")}
