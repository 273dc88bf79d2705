"""ATTN_MAX_MEMORY: how much memory a run may take, read from the environment (the estimates that must fit
in it are limits.py's). Its own module, light and free of the registries, because the tokenizer in a
contained child (tokenize.py) and a model's folder (models/files/folder.py) read it as the memory guard does.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import NamedTuple

from attncli.errors import ConfigError

MAX_MEMORY = 2 * 2**30  # ATTN_MAX_MEMORY: the estimated arrays of one run (the interpreter adds ~100 MB)
ENV = "ATTN_MAX_MEMORY"


def parse_size(value: str, name: str = ENV) -> int | None:
    """'2G', '512M', '1.5GiB', '3000000' (bytes) -> bytes; 'none' or '0' -> None (no limit).

    >>> parse_size("2G"), parse_size("512 MiB"), parse_size("none")
    (2147483648, 536870912, None)
    >>> parse_size("9" * 300)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    attncli.errors.ConfigError: ATTN_MAX_MEMORY must be below 1024P (an exabyte), got '9999...': give none for no limit
    """
    text = value.strip().lower()
    if text in ("none", "0", "unlimited"):
        return None
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([kmgtp]?)(?:i?b)?", text)
    if not m:
        raise ConfigError(f"{name} must be a size such as 2G, 512M or 1.5GiB (or none), got {value!r}")
    size = float(m.group(1)) * 1024 ** "_kmgtp".index(m.group(2) or "_")
    if not size < 2**60:  # inf from 300 digits included
        raise ConfigError(f"{name} must be below 1024P (an exabyte), got {value[:40]!r}: give none for no limit")
    return int(size)


def max_bytes_from(environ) -> int | None:
    """ATTN_MAX_MEMORY from the environment, or the default MAX_MEMORY."""
    value = environ.get(ENV)
    return MAX_MEMORY if value is None or not value.strip() else parse_size(value)


class Machine(NamedTuple):
    bytes: int  # the most memory this process can have
    what: str  # what sets it, for a message


def machine_bytes() -> Machine | None:
    """What the machine can give a run: its physical memory, or the address-space limit this process inherited
    (`ulimit -v`, RLIMIT_AS) less what is mapped already (the interpreter, its libraries, a model's file), whichever
    is smaller; None where neither can be read. A budget above it would end in a MemoryError, so a run that needs
    more is refused first (models/files/folder.py's `check_run`). The physical memory, not what is available now
    (MemAvailable): that moves with every other process and the page cache (a streamed GGUF file's own pages
    count as used until dropped), so the same command on the same file would be refused or not from one minute to
    the next; a refusal is for a run that cannot fit this machine at all."""
    found = []
    with contextlib.suppress(ValueError, OSError, AttributeError):  # no sysconf names: not a POSIX system
        found.append(Machine(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "its physical memory"))
    limit = _inherited_limit()
    if limit is not None:
        used = address_space() or 0
        found.append(Machine(max(0, limit - used), "the address-space limit, ulimit -v, less what is mapped"))
    return min(found, key=lambda m: m.bytes) if found else None


def _inherited_limit() -> int | None:
    """The soft RLIMIT_AS this process runs under, in bytes; None when unlimited or not a Unix."""
    try:
        import resource  # late: start-up (a model's run only; not on Windows)
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY or soft < 0 else soft


def address_space() -> int | None:
    """This process's virtual size in bytes (Linux), or None where /proc does not tell."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
