"""Untrusted native code, contained: a function run in a forked child with a time and a memory limit.

A tokenizer.json is a program for the `tokenizers` library: its normalizers and pre-tokenizer regexes run
in Rust, where a hostile file can panic, abort the process, loop for minutes in a backtracking regex, or
multiply 1 KB of text into gigabytes. `contained(fn, ...)` runs `fn` in a child process (fork) that has
at most `memory` bytes more address space than the parent had and is killed after `seconds`; whatever
happens there comes back as the value of `fn` or as one `AttnError`. Ctrl-C, SIGTERM and SIGHUP in the
parent kill the child on their way out. The child sends its answer as JSON, never pickle.

    >>> contained(sum, [1, 2, 3], what="a sum")
    6
    >>> contained(int, "x", what="a number")
    Traceback (most recent call last):
    attncli.errors.DataError: a number: invalid literal for int() with base 10: 'x'

Where `os.fork` does not exist, `fn` runs in the process itself.
"""

from __future__ import annotations

import faulthandler
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from attncli.errors import AttnError, ConfigError, DataError
from attncli.pipeline.budget import address_space

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends
SECONDS = 20.0  # a tokenizer that takes longer on one text is stopped (ATTN_TOKENIZER_SECONDS)
SECONDS_ENV = "ATTN_TOKENIZER_SECONDS"
ERRORS = {cls.__name__: cls for cls in (AttnError, ConfigError, DataError)}


def seconds_from(environ) -> float:
    """ATTN_TOKENIZER_SECONDS, or SECONDS: a positive number of seconds up to a day.

    >>> seconds_from({}), seconds_from({"ATTN_TOKENIZER_SECONDS": "2.5"})
    (20.0, 2.5)
    """
    value = environ.get(SECONDS_ENV, "").strip()
    if not value:
        return SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 86400:
        raise ConfigError(f"{SECONDS_ENV} must be a number of seconds from 0 to 86400, got {value[:40]!r}")
    return seconds


def die_with_parent(parent: int | None = None) -> None:
    """Linux: this process is killed when the one that started it ends (prctl PR_SET_PDEATHSIG), so that a child
    never outlives attn, however attn ends (SIGKILL too); `parent`, if given, is the pid it was started by: if
    that one is already gone, this process leaves now. Elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # late: start-up (only a child of attn on Linux needs it)

    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os._exit(0)


def _child(write: int, parent: int, fn: Callable[..., Any], args: tuple, memory: int | None) -> None:
    """In the child: limits, silence (a Rust panic prints to stderr), run, answer, exit. Never returns."""
    try:
        die_with_parent(parent)  # a parent stopped (a SIGTERM to a corpus worker) takes its tokenizer with it
        faulthandler.disable()  # it writes to a copy of stderr of its own (pytest turns it on)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one text, one thread: no pool forked mid-use
        size = address_space()
        if memory is not None and size is not None:
            import resource  # late: start-up (only in the child, only under a memory limit)

            # never above an inherited limit (`ulimit -v`): a process may lower its hard limit, not raise it
            hard = resource.getrlimit(resource.RLIMIT_AS)[1]
            limit = size + memory if hard == resource.RLIM_INFINITY else min(size + memory, hard)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            answer: dict = {"value": fn(*args)}
        except BaseException as e:  # a pyo3 PanicException is a BaseException
            lines = str(e).splitlines()
            answer = {"error": type(e).__name__, "message": lines[0] if lines else type(e).__name__}
        data = json.dumps(answer).encode("utf-8")
        while data:
            data = data[os.write(write, data) :]
    finally:
        os._exit(0)


def contained(
    fn: Callable[..., Any],
    *args: Any,
    what: str,
    seconds: float | None = None,
    memory: int | None = None,
    errors: tuple[type[AttnError], ...] = (),
) -> Any:
    """`fn(*args)` run in a child process: its JSON-able value, or the AttnError it raised (AttnError, ConfigError,
    DataError or one of `errors`; other errors become DataError naming `what`), or DataError when it runs past
    `seconds`, dies (a panic, an abort, a signal) or would take more than `memory` bytes."""
    if not hasattr(os, "fork"):
        return fn(*args)
    seconds = seconds_from(os.environ) if seconds is None else seconds
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child; its answer is what the tests check)
        os.close(read)
        _child(write, parent, fn, args, memory)
    os.close(write)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DataError(
                    f"{what} ran for more than {seconds:g} s and was stopped (a runaway regex or normalizer in "
                    f"it?); if it is only slow, raise {SECONDS_ENV}"
                )
            ready, _, _ = select.select([read], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(read, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
        pid = 0
    finally:
        os.close(read)
        if pid:  # stopped early (the deadline, Ctrl-C, a signal): the child goes too
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if not chunks:
        died = f"signal {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status) else "no answer"
        limit = "" if memory is None else f", or needed more than its memory ({memory / 2**30:.3g} GiB)"
        raise DataError(f"{what} crashed ({died}): it may be malformed or hostile{limit}")
    answer = json.loads(b"".join(chunks))
    if "error" in answer:
        error = (ERRORS | {cls.__name__: cls for cls in errors}).get(answer["error"])
        if error is not None:
            raise error(answer["message"])
        if answer["error"] == "MemoryError":
            raise DataError(f"{what} needed more than its memory ({(memory or 0) / 2**30:.3g} GiB) and was stopped")
        raise DataError(f"{what}: {answer['message']}")
    return answer["value"]
