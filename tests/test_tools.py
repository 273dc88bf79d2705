"""The tools that make goldens from torch and transformers pin the versions the goldens came from.

Each says torch==2.13.0 and transformers==5.23.0 in its docstring and, before it touches either, calls
tools/reference.py's `require`, which stops it with one `Error:` line when another version (or none) is
installed. CI never installs torch, so here the check is seen failing, and the pins read from the source.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

TOOLS = sorted(
    path
    for path in (ROOT / "tools").glob("*.py")
    if re.search(r"^\s*(import torch|import transformers|from transformers )", path.read_text(), re.MULTILINE)
)


def test_the_golden_tools_are_found():
    assert {p.stem for p in TOOLS} >= {"golden_decoders", "golden_encoders", "golden_seq2seq", "golden_smollm2"}


@pytest.mark.parametrize("tool", TOOLS, ids=lambda p: p.name)
def test_a_golden_tool_pins_and_checks_torch_and_transformers(tool):
    source = tool.read_text(encoding="utf-8")
    docstring = source.split('"""')[1]
    assert "torch==2.13.0" in docstring and "transformers==5.23.0" in docstring
    assert f'require("tools/{tool.name}"' in source


def test_require_stops_with_one_line_naming_the_pins():
    code = "import reference; reference.require('tools/x.py', **{'no-such-distribution-here': '1.0'})"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT / "tools", capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: tools/x.py needs torch==2.13.0 transformers==5.23.0")
    assert "no-such-distribution-here not installed" in lines[0]
