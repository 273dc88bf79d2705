"""A run the machine runs out of memory for, whatever the estimates said (pipeline/budget.py), is one line and
exit 1, never an "internal error: MemoryError"."""

from __future__ import annotations

from attncli import api
from tests.conftest import attn, refused


def test_a_memory_error_is_one_line_and_exit_1(monkeypatch):
    def short_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(api, "show", short_of_memory)
    r = attn("show", "time flies like an arrow")
    assert refused(r).startswith("Error: out of memory: ")
