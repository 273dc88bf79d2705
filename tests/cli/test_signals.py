"""SIGTERM, SIGHUP and SIGINT end a run cleanly: no temporary file left behind, exit status 128 + the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_o_removes_the_temporary_file(tmp_path, signum):
    lines = tmp_path / "many.txt"
    lines.write_text("time flies like an arrow\n" * 200_000)
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-m", "attncli", "show", "--file", str(lines), "--lines", "-o", str(out)],
        env=env,
        stderr=subprocess.PIPE,
    )
    try:
        while not any(f.name.startswith(".attn-") for f in tmp_path.iterdir()):  # the run is writing
            assert p.poll() is None, p.stderr.read() if p.stderr else ""
        p.send_signal(signum)
        assert p.wait(timeout=60) == 128 + signum
    finally:
        p.kill()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["many.txt"]  # no .attn-*.tmp, no half out.jsonl
