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


def test_a_text_run_imports_no_model_code():
    modules = imported("show", "time flies like an arrow")
    assert "numpy" in modules and "attncli.pipeline.run" in modules
    assert not {m for m in modules if m.startswith("attncli.models") or m.startswith("safetensors")}


def test_a_corpus_run_imports_neither_dask_nor_pyarrow(tmp_path):
    from tests.model_fixtures import make_bert

    folder = make_bert(tmp_path / "bert-tiny")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("time flies like an arrow\nfruit flies like a banana\n")
    modules = imported("heads", "--model", str(folder), "--lines", "--file", str(corpus), "--workers", "2")
    assert "attncli.models.corpus" in modules
    assert not {m for m in modules if m.split(".")[0] in ("dask", "distributed", "pyarrow")}
