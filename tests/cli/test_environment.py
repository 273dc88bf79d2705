"""Every environment variable attn or its libraries read is validated or falls back: never an internal error."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

ODD = [
    ("COLUMNS", "0", "Warning: COLUMNS=0 is not a width from 20 to 10000 columns: using 80"),
    ("COLUMNS", "abc", "Warning: COLUMNS=abc is not a width"),
    ("COLUMNS", "99999999", "Warning: COLUMNS=99999999 is not a width"),
    ("LINES", "abc", None),
    ("FORCE_COLOR", "abc", None),
    ("TERM", "", None),
    ("OPENBLAS_NUM_THREADS", "abc", None),
    ("ATTN_DEBUG", "yes", None),
    ("PYTHONIOENCODING", "ascii", None),
    ("LANG", "C", None),
    ("ATTN_MAX_MEMORY", "9" * 300, "Error: ATTN_MAX_MEMORY must be below 1024P (an exabyte)"),
    ("ATTN_MAX_MEMORY", "12x", "Error: ATTN_MAX_MEMORY must be a size such as 2G"),
    ("ATTN_TOKENIZER_SECONDS", "abc", "Error: ATTN_TOKENIZER_SECONDS must be a number of seconds from 0 to 86400"),
]


@pytest.mark.parametrize(("name", "value", "said"), ODD, ids=[f"{n}={v[:10]}" for n, v, _ in ODD])
def test_an_odd_environment_is_said_or_survived(name, value, said, wordpiece_json):
    env = {**os.environ, "PYTHONPATH": str(ROOT), name: value}
    p = subprocess.run(
        [sys.executable, "-m", "attncli", "show", "time flies", "-t", wordpiece_json],
        env=env,
        capture_output=True,
        timeout=120,
    )
    err = p.stderr.decode("utf-8", "replace")
    assert "internal error" not in err and "Traceback" not in err, err
    if said is None:
        assert p.returncode == 0 and not err, err
    else:
        assert err.startswith(said) and err.count("\n") == 1, err
        assert p.returncode == (0 if said.startswith("Warning") else 2 if "must be" in said else 1), err
