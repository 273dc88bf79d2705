"""ordered_map: the lines of `attn show --lines` in order, here for the first ones and on a pool after them."""

import os

import pytest

from attncli.errors import DataError
from attncli.pipeline import lines
from attncli.pipeline.lines import ordered_map


def square_or_refuse(x: int) -> tuple[int, int]:
    if x == 13:
        raise DataError("13 refused")
    return x * x, os.getpid()


@pytest.mark.parametrize("workers", [1, 2])
def test_every_item_in_order_here_then_on_the_pool(monkeypatch, workers):
    monkeypatch.setattr(lines, "INLINE", 5)
    monkeypatch.setattr(lines, "CHUNK", 3)
    got = list(ordered_map(square_or_refuse, range(40), workers))
    assert [g if isinstance(g, DataError) else g[0] for g in got][:13] == [x * x for x in range(13)]
    assert isinstance(got[13], DataError) and str(got[13]) == "13 refused"  # returned in its place, not raised
    assert [g[0] for g in got[14:]] == [x * x for x in range(14, 40)]
    pids = {g[1] for g in got if not isinstance(g, DataError)}
    assert {g[1] for g in got[:5]} == {os.getpid()}  # the first INLINE items: here
    assert (len(pids) > 1) == (workers > 1)  # the rest on the workers, when there are some


def test_a_closure_runs_on_the_pool(monkeypatch):
    monkeypatch.setattr(lines, "INLINE", 0)
    offset = 7
    assert list(ordered_map(lambda x: x + offset, range(10), 2)) == list(range(7, 17))


def test_nothing_in_nothing_out():
    assert list(ordered_map(square_or_refuse, [], 2)) == []
