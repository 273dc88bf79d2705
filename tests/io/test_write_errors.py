"""A write that fails (a full disk) or a reader that stops early is one clean line, never an internal error."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

FULL = "/dev/full"  # Linux: every write fails with ENOSPC


def _attn(*args: str, stdout=None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "attncli", *args],
        env=env,
        capture_output=stdout is None,
        stdout=stdout,
        stderr=subprocess.PIPE if stdout is not None else None,
    )


@pytest.mark.skipif(not os.path.exists(FULL), reason="needs /dev/full")
@pytest.mark.parametrize("fmt", ["table", "json", "csv", "npy"])
def test_a_full_disk_is_one_line(fmt):
    to_file = _attn("show", "time flies", "-f", fmt, "-o", FULL)
    assert (
        to_file.returncode == 1 and to_file.stderr.decode() == f"Error: cannot write {FULL}: No space left on device\n"
    )
    with open(FULL, "wb") as full:
        redirected = _attn("show", "time flies", "-f", fmt, stdout=full)
    assert redirected.returncode == 1
    assert redirected.stderr.decode() == "Error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("fmt", ["npy", "npz", "json", "csv"])
def test_a_reader_that_stops_early_ends_attn_quietly(fmt):
    text = " ".join(f"w{i}" for i in range(300))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-m", "attncli", "show", text, "-f", fmt],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(10)
    p.stdout.close()
    assert p.wait(timeout=60) == 1 and p.stderr.read() == b""


def test_a_short_write_then_a_closed_pipe_is_a_broken_pipe():
    """A pipe whose reader leaves mid-write takes part of the write and returns the count; the rest must fail
    loudly (BrokenPipeError, exit 1), not be dropped (it was, and attn exited 0 with a cut .npy, ~1 run in 6)."""
    import io

    from attncli.io.write import Sink

    class Leaving(io.RawIOBase):
        def __init__(self):
            self.calls = 0

        def write(self, data):
            self.calls += 1
            if self.calls > 1:
                raise BrokenPipeError(32, "Broken pipe")
            return 65536

    with pytest.raises(BrokenPipeError):
        Sink(Leaving()).write(bytes(720_000))
