"""Progress bars on stderr: of lines, for runs over a corpus (`attn heads --lines`: lines done, lines/s, time
left), and of the bytes of a file `attn show --lines` reads (`line_progress`).

Each is drawn only when stderr is a terminal, and only there: stdout carries the result alone, whatever it is.
The number of lines to expect comes from counting the newlines of a regular file (`count_lines`), which reads
the file at disk speed; a pipe has no total, and the bar then shows the lines done and the rate.

    >>> import io
    >>> count_lines(io.BytesIO(b"a\\nb\\n\\nc"))
    4
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from typing import BinaryIO

from attncli.io.console import console
from attncli.io.escape import escape_text

BLOCK = 1 << 20  # bytes read at a time when counting lines


def count_lines(stream: BinaryIO) -> int:
    """The lines in `stream` from its position (a last line without a newline counts), the position kept."""
    start, lines, last = stream.tell(), 0, b"\n"
    while block := stream.read(BLOCK):
        lines += block.count(b"\n")
        last = block[-1:]
    stream.seek(start)
    return lines + (last != b"\n")


@contextlib.contextmanager
def lines_progress(stream: BinaryIO, color: str, limit: int | None = None) -> Iterator[Callable[[int], None]]:
    """A function `done(lines)` that moves the bar to `lines` read, on stderr when it is a terminal (else it does
    nothing). The total is the lines of `stream` (a regular file) or `limit`, whichever is smaller."""
    if not sys.stderr.isatty() or os.environ.get("TERM") == "dumb":
        yield lambda lines: None
        return
    from rich.progress import (  # late: start-up (Rich only where a bar is drawn)
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    total = count_lines(stream) if regular_file_size(stream) is not None else None
    if limit is not None:
        total = limit if total is None else min(total, limit)
    start = time.monotonic()
    with Progress(
        TextColumn("{task.completed:,.0f}" + (" lines" if total is None else f"/{total:,} lines")),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=console(color, stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task("lines", total=total, rate="")

        def done(lines: int) -> None:
            seconds = time.monotonic() - start
            progress.update(task, completed=lines, rate=f"{lines / seconds:,.0f} lines/s" if seconds > 0 else "")

        yield done


def regular_file_size(stream) -> int | None:
    """The size of the file behind `stream` when it is a regular file (not a pipe or a terminal)."""
    try:
        st = os.fstat(stream.fileno())
    except (OSError, AttributeError, io.UnsupportedOperation):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


@contextlib.contextmanager
def line_progress(stream: BinaryIO, name: str, color: str, output: str | None) -> Iterator[BinaryIO]:
    """`stream`, counted by a progress bar on stderr when the input is a regular file, stderr is a
    terminal, and stdout is not the same terminal (a pipe, a file, or `-o`): else `stream` itself."""
    size = regular_file_size(stream)
    if size is None or not sys.stderr.isatty() or (output is None and sys.stdout.isatty()):
        yield stream
        return
    from rich.markup import escape  # late: start-up (Rich only where a table is drawn)
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
        console=console(color, stderr=True),
        transient=True,
    ) as progress:
        label = escape(escape_text(f"attn --lines {os.path.basename(name)}"))  # not markup, not raw controls
        yield progress.wrap_file(stream, total=size, description=label)
