"""Bytes out, safely: `-o FILE` written to a temp file beside it and renamed into place when the run succeeds
(a failed or interrupted run leaves no half file, and an existing file as it was), stdout and pipes written whole
(`Sink`), text for a terminal made visible (`Visible`), and a failed write as one line that names the file.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import signal
import stat
import sys
import typing
from collections.abc import Callable, Iterator
from typing import BinaryIO

from attncli.errors import DataError
from attncli.io.escape import escape_text


def _special(path: str) -> bool:
    """An existing file that is not a regular file: a device (/dev/null, /dev/stdout), a FIFO, a socket."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_target(path: str) -> str:
    """The directory a file will be written in; DataError when it cannot be."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        parent = directory
        while parent and not os.path.exists(parent) and os.path.dirname(parent) != parent:
            parent = os.path.dirname(parent)
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise DataError(f"cannot write {path}: {parent} is a file, not a directory")
        raise DataError(f"cannot write {path}: no such directory {directory}")
    if os.path.isdir(path):
        raise DataError(f"cannot write {path}: it is a directory")
    return directory


def _mode_for(path: str) -> int:
    """An existing file's permissions, or what the umask gives a new file (0666 minus umask)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class Sink(io.RawIOBase):
    """A byte stream that is not a seekable file (stdout, a pipe, a device). NumPy writes such a stream through
    `write()` rather than `tofile()`, so a reader that stops early (`| head -c 10`) is a BrokenPipeError,
    which ends attn quietly, and never a half-done write that NumPy reports as another OSError."""

    def __init__(self, raw: BinaryIO):
        self.raw = raw

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        """All of `data`, or an error. A buffered stream may take part of a large write and return the count
        (a pipe whose reader left mid-write does that), so the rest is written until it is done or fails.

        >>> import io
        >>> class Part(io.RawIOBase):  # takes at most 3 bytes a call
        ...     got = b""
        ...     def write(self, data):
        ...         self.got += bytes(data[:3])
        ...         return min(len(data), 3)
        >>> part = Part()
        >>> Sink(part).write(b"attention")
        9
        >>> part.got
        b'attention'
        """
        view = memoryview(data).cast("B")
        while view:
            written = self.raw.write(view)
            if not written:  # a non-blocking stream that takes nothing: never spin on it
                raise BlockingIOError(errno.EAGAIN, "the output takes no more bytes")
            view = view[written:]
        return len(data)

    def flush(self) -> None:
        self.raw.flush()


class Visible(io.RawIOBase):
    r"""UTF-8 text on its way to a terminal with every control or invisible character made a visible escape
    (`escape_text`), line by line: what `-f csv` (or any text format) shows a person, never what it does.

    >>> out = io.BytesIO(); v = Visible(out); _ = v.write("a,\x1b]52;c;x\x07\n".encode()); v.close()
    >>> out.getvalue()
    b'a,\\x1b]52;c;x\\x07\n'
    """

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        text = self.decoder.decode(bytes(data))
        self.raw.write("\n".join(escape_text(line) for line in text.split("\n")).encode("utf-8"))
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self.raw.write(escape_text(self.decoder.decode(b"", final=True)).encode("utf-8"))
        super().close()


@contextlib.contextmanager
def open_output(output: str | None) -> Iterator[BinaryIO]:
    """stdout's binary stream, or a temp file renamed onto `output` when the block succeeds (else removed)."""
    if output is None:
        yield typing.cast(BinaryIO, Sink(sys.stdout.buffer))
        sys.stdout.buffer.flush()
        return
    directory = check_target(output)
    if _special(output):  # never rename a file over /dev/null or a named pipe: write into it
        with _writing(output):
            f = open(output, "wb")  # noqa: SIM115  (closed by the `with f` below; its own error is reported)
            with f:
                yield typing.cast(BinaryIO, Sink(f))
        return
    import tempfile  # late: start-up (tempfile, and random through it: files only)

    tmp = None
    try:
        with _signals_deferred(), _writing(output):  # a signal now would leave a temp file nobody knows of
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".attn-", suffix=".tmp")
        with _writing(output):
            if hasattr(os, "fchmod"):  # mkstemp makes 0600; the result should look like any new file
                os.fchmod(fd, _mode_for(output))
            with os.fdopen(fd, "wb") as f:
                yield f
            os.replace(tmp, output)
    except BaseException:  # an error, Ctrl-C, SIGTERM or SIGHUP (the CLI turns those into exceptions)
        if tmp is not None:
            os.unlink(tmp)
        raise


_ENDING_SIGNALS = {getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)}


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGTERM, SIGHUP and SIGINT for the block; one that came meanwhile is handled right after it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDING_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS, errno.EACCES, errno.EPERM)


@contextlib.contextmanager
def _writing(output: str) -> Iterator[None]:
    """A failed write to `output` (a full disk, a quota, a read-only file system) as one DataError naming it."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as e:
        raise DataError(f"cannot write {output}: {e.strerror or e}") from None


def write_output(output: str | None, write: Callable[[BinaryIO], object]) -> None:
    """Call `write(binary_stream)` on stdout, or on a temp file renamed onto `output` when it succeeds."""
    with open_output(output) as stream:
        write(stream)
