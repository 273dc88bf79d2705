"""Where a command's result goes: a Rich table on the terminal, or a format on stdout or `-o FILE`.

- `-o FILE` is written to a temp file beside it and renamed into place when the
  run succeeds, so a failed run leaves no half file and an existing file as it was.
- Colour: `--color always|never`, else Rich's detection: a pipe or a file gets no
  escape codes, `NO_COLOR` (non-empty) turns colour off, `FORCE_COLOR` on. The
  flag wins over the environment.
- `--save-svg`/`--save-html` record the console (Rich's `record=True`) and export
  exactly what was printed: the same text, layout and styles, in colour unless
  colour is off by `--color never` or `NO_COLOR`. A document with an interactive page
  (`doc.view`) is saved by `--save-html` (and `-f html`) as that page instead.
- `--lines` streams one result per input line (the `Lines` document).

Rich loads only when a table is drawn.
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
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO

from attncli.errors import ConfigError, DataError
from attncli.io.documents import Document, View
from attncli.io.escape import escape_text
from attncli.io.formats import FORMATS, Format, format_for_path, formats_for

COLORS = ("auto", "always", "never")
MIN_WIDTH, MAX_WIDTH = 20, 10_000  # --width; every table fits from 40 columns up
Pictures = Sequence[tuple[Format, str | None]]  # (svg or html, path or None for stdout)


def color_on(color: str) -> bool:
    """Whether colour is wanted at all (pictures follow this, whatever stdout is)."""
    return color == "always" or (color == "auto" and not os.environ.get("NO_COLOR"))


def check_width(width: int | None) -> None:
    if width is not None and not MIN_WIDTH <= width <= MAX_WIDTH:
        raise ConfigError(f"--width must be between {MIN_WIDTH} and {MAX_WIDTH} columns, got {width}")


def columns(environ, stream=None) -> tuple[int | None, str | None]:
    """The width from COLUMNS when it is a usable one (None: unset, the terminal's or 80), and what is wrong
    with it when it is set but not usable (then the width falls back to the terminal's, or 80).

    >>> columns({"COLUMNS": "120"}), columns({}), columns({"COLUMNS": "3"})
    ((120, None), (None, None), (80, 'COLUMNS=3 is not a width from 20 to 10000 columns: using 80'))
    """
    value = environ.get("COLUMNS", "").strip()
    if not value:
        return None, None
    if value.isdigit() and len(value) <= 6 and MIN_WIDTH <= int(value) <= MAX_WIDTH:
        return int(value), None
    try:
        fallback = os.get_terminal_size((stream or sys.stdout).fileno()).columns
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        fallback = 80
    fallback = min(max(fallback, MIN_WIDTH), MAX_WIDTH)
    shown = value if len(value) <= 20 else value[:20] + "…"
    return (
        fallback,
        f"COLUMNS={escape_text(shown)} is not a width from {MIN_WIDTH} to {MAX_WIDTH} columns: using {fallback}",
    )


def console(color: str = "auto", file=None, record: bool = False, stderr: bool = False, width: int | None = None):
    """A Rich console for stdout (or `file`, or stderr), honouring --color and NO_COLOR, `width` columns wide
    (default: COLUMNS when it is a usable width, else the terminal's width, or 80 when it is not a terminal)."""
    from rich.console import Console

    if width is None:
        width = columns(os.environ, sys.stderr if stderr else None)[0]

    # emoji=False: a token or path like `:smile:` is shown as written (and Rich's emoji table is never loaded);
    # force_jupyter=False: in a notebook's kernel too (the API's repr) the table goes to `file`, not to the notebook
    where = {"file": file, "record": record, "stderr": stderr, "width": width, "emoji": False, "force_jupyter": False}
    if color == "always":  # the flag wins over NO_COLOR
        return Console(force_terminal=True, color_system="truecolor", no_color=False, **where)
    if color == "never":
        return Console(color_system=None, no_color=True, **where)
    return Console(**where)


class NoColor:
    """Renders `renderable` with its colours removed (bold, dim and the layout stay)."""

    def __init__(self, renderable):
        self.renderable = renderable

    def __rich_console__(self, console, options):
        from rich.segment import Segment

        yield from Segment.remove_color(console.render(self.renderable, options))


def resolve_format(fmt: str | None, output: str | None, default: str = "table") -> str:
    if fmt is not None:
        return fmt
    if output is None:
        return default
    guessed = format_for_path(output)
    if guessed is None:
        raise ConfigError(f"cannot tell the format of {output} from its extension: give -f ({', '.join(FORMATS)})")
    return guessed


def check_format(kind: type[Document], command: str, fmt: str) -> None:
    """ConfigError when `fmt` (from -f, or -o's extension) cannot write this kind of document of `command`."""
    names = formats_for(kind)
    if fmt not in names:
        raise ConfigError(kind.not_available(command, fmt, [name for name in names if not FORMATS[name].picture]))


def check_precision(precision: int | None) -> None:
    if precision is not None and not 0 <= precision <= 17:
        raise ConfigError(f"--precision must be between 0 and 17, got {precision}")


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
    import tempfile  # (and through it `random`): only when a file is written

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


@contextlib.contextmanager
def table_printer(
    output: str | None,
    color: str,
    pictures: Pictures = (),
    title: str = "attn",
    text: bool = True,
    width: int | None = None,
    theme: str = "light",
):
    """Yields `(show, width)`: `show(renderable)` prints to the terminal, or without colour to `-o FILE`.

    `pictures` are `(format, path)` pairs: everything shown is recorded and exported by that
    format when the block ends (path None: to stdout). With `text` False the table is only
    recorded, not printed (`-f svg` on stdout). `title` goes in the SVG's window bar, `theme` (--theme)
    colours the pictures; `width` (--width) is the width of the table and of the pictures.
    """
    for _, path in pictures:
        if path is not None:
            check_target(path)
    plain = not color_on(color)
    with contextlib.ExitStack() as stack:
        if not text:
            con = console(color, file=io.StringIO(), record=True, width=width)
        elif output is None:
            con = console(color, record=bool(pictures), width=width)
        else:
            stream = io.TextIOWrapper(stack.enter_context(open_output(output)), encoding="utf-8", write_through=True)
            stack.callback(stream.detach)  # runs before the temp file is closed and renamed
            con = console("never", file=stream, record=bool(pictures), width=width)

        def show(renderable) -> None:
            con.print(NoColor(renderable) if plain and pictures else renderable)

        yield show, con.width
    for fmt, path in pictures:
        if fmt.export is not None:  # svg and html: what the console recorded
            _write_text(path, fmt.export(con, title, theme))


def _write_text(path: str | None, text: str) -> None:
    write_output(path, lambda f: f.write(text.encode("utf-8")))


def _check_binary_target(fmt: Format, output: str | None) -> None:
    if output is None and fmt.binary and sys.stdout.isatty():
        raise ConfigError(
            f"-f {fmt.name} is binary and stdout is a terminal: give -o FILE.{fmt.name} or redirect stdout"
        )


def emit(
    doc: Document,
    fmt: str | None,
    output: str | None,
    precision: int | None,
    color: str,
    *,
    save_svg: str | None = None,
    save_html: str | None = None,
    width: int | None = None,
    theme: str = "light",
) -> None:
    """Send a document where the user asked (stdout or `-o`), in the format asked (FORMATS).

    The picture formats (table, svg, html) draw `doc.renderables` (tables print at 2 digits unless `precision` says
    otherwise); the data formats call their writer for the document's kind. `save_svg`/`save_html`
    also save what the table showed, `width` columns wide (--width), in `theme` (--theme). A document
    with a view (`doc.view`) is written by `-f html` and `--save-html` as its interactive page.
    """
    entry = FORMATS[resolve_format(fmt, output, doc.default_format)]
    check_precision(precision)
    check_width(width)
    check_format(type(doc) if not (entry.interactive and doc.view is not None) else View, doc.command, entry.name)
    if entry.interactive and doc.view is not None:
        doc = doc.view()
    if entry.interactive and type(doc) in entry.writers and output is None and sys.stdout.isatty():
        raise ConfigError(f"-f {entry.name} is a page for a browser and stdout is a terminal: give -o FILE.html")
    if not entry.picture or type(doc) in entry.writers:
        writer = entry.writers[type(doc)]
        if save_svg or save_html:
            raise ConfigError(doc.no_pictures(entry.name))
        _check_binary_target(entry, output)
        seen = output is None and sys.stdout.isatty()  # a person reads it: nothing in it may act on the terminal
        write_output(
            output, lambda stream: writer(doc, typing.cast(BinaryIO, Visible(stream)) if seen else stream, precision)
        )
        return
    page, page_path = None, save_html
    if save_html and doc.view is not None:  # the interactive page instead of the table's picture
        check_target(save_html)
        page, save_html = doc.view(), None
    pictures: list[tuple[Format, str | None]] = [
        (FORMATS[name], path) for name, path in (("svg", save_svg), ("html", save_html)) if path
    ]
    if entry.export is not None:  # -f svg, -f html: the picture is the output
        pictures.append((entry, output))
    printer = table_printer(output, color, pictures, doc.command, entry.export is None, width, theme)
    with printer as (show, columns):
        for renderable in doc.renderables(2 if precision is None else precision, columns):
            show(renderable)
    if page is not None:
        write_page = FORMATS["html"].writers[View]
        write_output(page_path, lambda stream: write_page(page, stream, precision))


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
    from rich.markup import escape
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
