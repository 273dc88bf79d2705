"""`attn show --lines` on every core: a map over the lines of an input, in order, in bounded memory.

`ordered_map(fn, items, workers)` calls `fn` on each item and yields what it returns, in the items' order.
The first `INLINE` items run here, one after another: a short input never pays for a process pool. Past
them the rest goes, `CHUNK` items at a time, to `workers` forked processes (so `fn` may be any function or
closure), at most two chunks per worker in flight (memory stays flat whatever the input's length). The
caller's `fn` does the whole of a line there, run and serialisation alike, so what comes back is small; it
is the same function on the same data, so the output is the same, byte for byte, as on one core.
"""

from __future__ import annotations

import itertools
import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from attncli.errors import AttnError

INLINE = 256  # items done in this process before a pool is started (about 0.1 s of work for short lines)
CHUNK = 64  # items per task of the pool

T = TypeVar("T")
R = TypeVar("R")
_fn: Callable | None = None  # a worker's function, inherited through fork


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R | AttnError]:
    """fn(item) for each item in order, or the AttnError it raised (returned, for the caller to word);
    past `INLINE` items on `workers` processes when there are more than one."""
    it = iter(items)
    for item in itertools.islice(it, INLINE):
        yield _call(fn, item)
    if workers <= 1:
        for item in it:
            yield _call(fn, item)
        return
    chunks = iter(lambda: list(itertools.islice(it, CHUNK)), [])
    first = next(chunks, None)
    if first is None:
        return
    pool = multiprocessing.get_context("fork").Pool(workers, _start_worker, (fn,))
    try:
        pending: deque = deque()
        for chunk in itertools.chain([first], chunks):
            pending.append(pool.apply_async(_call_chunk, (chunk,)))
            while len(pending) >= 2 * workers:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()
    finally:
        pool.terminate()  # workers that still run (an error, a signal, a closed pipe) are not waited for
        pool.join()


def _call(fn: Callable[[T], R], item: T) -> R | AttnError:
    try:
        return fn(item)
    except AttnError as e:
        return e


def _start_worker(fn: Callable) -> None:
    """A worker: the function it maps; Ctrl-C and SIGHUP are the parent's to handle, and SIGTERM (which the
    parent's pool sends to stop it) simply ends it."""
    global _fn
    _fn = fn
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)


def _call_chunk(chunk: list) -> list:
    assert _fn is not None, "a pool worker runs _start_worker first"
    return [_call(_fn, item) for item in chunk]
