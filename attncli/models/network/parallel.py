"""The elementwise passes of a forward pass, shared among threads when the pass runs on more than one.

BLAS shares each matrix product among its own threads (`attncli.core.threads`); the NumPy passes
between the products (GELU, the softmax of the attention scores) run on the calling thread, so on two
threads they would leave a core idle. NumPy releases the GIL inside its ufunc loops, so parts of one
pass on different Python threads run at once. Inside `threads(n)` (set by `forward` with the BLAS
threads it chose), `split(fn, size, grain)` calls fn(start, stop) on up to n contiguous parts of
range(size) at once, each of at least `grain` items; outside it, or for a small size, fn(0, size).

    >>> seen = []
    >>> with threads(2):
    ...     split(lambda a, b: seen.append((a, b)), 10, grain=4)
    >>> sorted(seen)
    [(0, 5), (5, 10)]
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
from collections.abc import Callable, Iterator
from typing import Any

_THREADS: contextvars.ContextVar[int] = contextvars.ContextVar("threads", default=1)
_POOL: dict[str, Any] = {"workers": 0, "pool": None}  # made on first use: the most threads asked for, minus one


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """Within it, `split` runs on up to n threads (the caller's and n - 1 of a shared pool)."""
    token = _THREADS.set(max(1, n))
    try:
        yield
    finally:
        _THREADS.reset(token)


def count() -> int:
    """The threads of the enclosing `threads(n)`: 1 outside one."""
    return _THREADS.get()


def _pool(workers: int):
    from concurrent.futures import ThreadPoolExecutor  # late: start-up (only a forward on several threads needs it)

    if _POOL["workers"] < workers:
        _POOL.update(workers=workers, pool=ThreadPoolExecutor(workers, thread_name_prefix="attn-part"))
    return _POOL["pool"]


def split(fn: Callable[[int, int], object], size: int, grain: int) -> None:
    """fn(start, stop) over range(size): on up to `threads(n)` parts of at least `grain` items, the first on
    this thread and the others on the pool, all finished (an exception in any raised) before it returns."""
    parts = max(1, min(_THREADS.get(), size // max(1, grain)))
    if parts == 1:
        fn(0, size)
        return
    bounds = [size * i // parts for i in range(parts + 1)]
    pool = _pool(parts - 1)
    futures = [pool.submit(fn, a, b) for a, b in itertools.pairwise(bounds[1:])]
    try:
        fn(bounds[0], bounds[1])
    finally:
        for f in futures:
            f.result()
