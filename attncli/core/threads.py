"""How many BLAS threads a computation gets, chosen by its size, for as long as it runs.

`attn` starts with BLAS on one thread (set before NumPy loads: its idle threads cost start-up and
busy-wait on a shared machine), and a sentence's matrices are too small to share out anyway. A
model's forward pass on a long text is not: `blas_threads(threads_for(work, ceiling=2))` lifts the
limit while it runs and puts it back after (process-wide, through threadpoolctl, imported only then).

Only a caller that asks for more than one thread gets them (`forward(..., threads=2)`): the commands do
not, because once OpenBLAS has started its threads a process forked later (the contained tokenizer, the
worker pools of `--lines` and `attn heads --lines`) can hang on a lock those threads held (a test run hung
so), and because on a busy machine the threads spin against each other (below).

    >>> [threads_for(n * 384 * 1536, cores=2, busy=0.5) for n in (10, 128)], threads_for(128 * 384 * 1536, 2, busy=3)
    ([1, 2], 1)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

#: Multiply-adds of the largest matrix product of a step (a model's MLP: n · d_model · d_ff) from which BLAS
#: gets every core: MiniLM (d_model 384, d_ff 1536) at 10 tokens (5.9 M) stays on one, at 32 (19 M) gets them all.
MIN_PARALLEL_WORK = 1 << 24


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def threads_for(work: int, cores: int | None = None, ceiling: int | None = None, busy: float | None = None) -> int:
    """BLAS threads for products of `work` multiply-adds: one below MIN_PARALLEL_WORK or on a busy machine
    (`busy`, default the 1-minute load average, at least the cores), else every core, at most `ceiling`.

    A busy machine stays on one thread because OpenBLAS's threads spin while they wait for each other: with
    a load average of 17 on 2 cores, MiniLM at 128 tokens took 5.1 s on two BLAS threads and 0.42 s on one.
    """
    cores = cores or globals()["cores"]()
    if busy is None:
        busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    n = 1 if work < MIN_PARALLEL_WORK or busy >= cores else cores
    return max(1, min(n, ceiling or n))


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """BLAS on `n` threads inside the block (as it was, after). n = 1, or no threadpoolctl: BLAS is left alone
    (attn sets it to one thread before NumPy loads, unless the environment says otherwise)."""
    if n <= 1:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits  # late: start-up (~10 ms: a model's forward only)
    except ImportError:
        yield
        return
    with threadpool_limits(limits=n, user_api="blas"):
        yield
