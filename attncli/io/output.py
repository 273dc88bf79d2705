"""Where a command's result goes: a Rich table on the terminal, or a format on stdout or `-o FILE`.

- `-o FILE` is written to a temp file beside it and renamed into place when the
  run succeeds, so a failed run leaves no half file and an existing file as it was.
- Colour: `--color always|never`, else Rich's detection: a pipe or a file gets no
  escape codes, `NO_COLOR` (non-empty) turns colour off, `FORCE_COLOR` on. The
  flag wins over the environment.
- `--save-svg`/`--save-html` record the console (Rich's `record=True`) and export
  exactly what was printed: the same text, layout and styles, in colour unless
  colour is off by `--color never` or `NO_COLOR`.
- `--lines` streams one result per input line (`emit_lines`).

CLI side only: it imports rich and typer, the core never imports it.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

import typer

from attncli.errors import ConfigError, DataError
from attncli.io.escape import escape_text
from attncli.io.formats import FORMATS, format_for_path, write_csv, write_jsonl, write_records

COLORS = ("auto", "always", "never")


def color_on(color: str) -> bool:
    """Whether colour is wanted at all (pictures follow this, whatever stdout is)."""
    return color == "always" or (color == "auto" and not os.environ.get("NO_COLOR"))


def console(color: str = "auto", file=None, record: bool = False, stderr: bool = False):
    """A Rich console for stdout (or `file`, or stderr), honouring --color and NO_COLOR."""
    from rich.console import Console

    if color == "always":  # the flag wins over NO_COLOR
        return Console(
            file=file, force_terminal=True, color_system="truecolor", no_color=False, record=record, stderr=stderr
        )
    if color == "never":
        return Console(file=file, color_system=None, no_color=True, record=record, stderr=stderr)
    return Console(file=file, record=record, stderr=stderr)


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
        raise ConfigError(
            f"cannot tell the format of {output} from its extension: give -f ({', '.join(['table', *FORMATS])})"
        )
    return guessed


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


@contextlib.contextmanager
def open_output(output: str | None) -> Iterator[BinaryIO]:
    """stdout's binary stream, or a temp file renamed onto `output` when the block succeeds (else removed)."""
    if output is None:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    directory = check_target(output)
    if _special(output):  # never rename a file over /dev/null or a named pipe: write into it
        try:
            f = open(output, "wb")
        except OSError as e:
            raise DataError(f"cannot write {output}: {e.strerror}") from None
        with f:
            yield f
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".attn-", suffix=".tmp")
    except OSError as e:
        raise DataError(f"cannot write {output}: {e.strerror}") from None
    try:
        if hasattr(os, "fchmod"):  # mkstemp makes 0600; the result should look like any new file
            os.fchmod(fd, _mode_for(output))
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, output)
    except BaseException:
        os.unlink(tmp)
        raise


def write_output(output: str | None, write: Callable[[BinaryIO], None]) -> None:
    """Call `write(binary_stream)` on stdout, or on a temp file renamed onto `output` when it succeeds."""
    with open_output(output) as stream:
        write(stream)


@contextlib.contextmanager
def table_printer(
    output: str | None, color: str, save_svg: str | None = None, save_html: str | None = None, title: str = "attn"
):
    """Yields `(show, width)`: `show(renderable)` prints to the terminal, or without colour to `-o FILE`.

    With `save_svg`/`save_html`, everything shown is recorded and exported when the block ends
    (`title` goes in the SVG's window bar).
    """
    pictures = [p for p in (save_svg, save_html) if p]
    for path in pictures:
        check_target(path)
    plain = not color_on(color)
    with contextlib.ExitStack() as stack:
        if output is None:
            con = console(color, record=bool(pictures))
        else:
            text = io.TextIOWrapper(stack.enter_context(open_output(output)), encoding="utf-8", write_through=True)
            stack.callback(text.detach)  # runs before the temp file is closed and renamed
            con = console("never", file=text, record=bool(pictures))

        def show(renderable) -> None:
            con.print(NoColor(renderable) if plain and pictures else renderable)

        yield show, con.width
    if save_svg:
        svg = con.export_svg(title=title, clear=False)
        write_output(save_svg, lambda f: f.write(svg.encode("utf-8")))
    if save_html:
        html = con.export_html(clear=False)
        write_output(save_html, lambda f: f.write(html.encode("utf-8")))


def _check_binary_target(fmt: str, output: str | None) -> None:
    if output is None and getattr(FORMATS.get(fmt), "binary", False) and sys.stdout.isatty():
        raise ConfigError(f"-f {fmt} is binary and stdout is a terminal: give -o FILE.{fmt} or redirect stdout")


def emit(
    table,
    write,
    fmt: str | None,
    output: str | None,
    precision: int | None,
    color: str,
    *,
    save_svg: str | None = None,
    save_html: str | None = None,
    title: str = "attn",
) -> None:
    """Send a command's result where the user asked, in the format asked.

    `table(precision, width)` returns the Rich renderable for `-f table`;
    `write(fmt, binary_stream, precision)` writes any other format;
    `save_svg`/`save_html` also write what the table showed, `title` on the SVG's window.
    """
    fmt = resolve_format(fmt, output)
    check_precision(precision)
    if fmt != "table":
        if save_svg or save_html:
            raise ConfigError(f"--save-svg and --save-html picture the table: drop -f {fmt}, or run twice")
        _check_binary_target(fmt, output)
        write_output(output, lambda stream: write(fmt, stream, precision))
        return
    with table_printer(output, color, save_svg, save_html, title) as (show, width):
        show(table(2 if precision is None else precision, width))


def warn(tokens) -> None:
    for warning in tokens.warnings:
        typer.echo(f"Warning: {escape_text(warning)}", err=True)  # it may name a tokenizer path


def emit_result(result, fmt, output, precision, color, render, **pictures) -> None:
    """An AttentionResult: `render(result, precision, width)` for tables, FORMATS otherwise."""
    warn(result.tokens)
    emit(
        lambda digits, width: render(result, digits, width),
        lambda f, stream, p: FORMATS[f].write(result, stream, p),
        fmt,
        output,
        precision,
        color,
        **pictures,
    )


def emit_records(doc: dict, fmt, output, precision, color, table, command: str, **pictures) -> None:
    """A small document with a list under doc["rows"] (tokens, variants, compare): json, jsonl, csv or a table."""
    emit(
        table, lambda f, stream, p: write_records(doc, f, stream, p, command), fmt, output, precision, color, **pictures
    )


LINE_FORMATS = ("jsonl", "csv", "table")


def emit_lines(
    results: Iterable,
    fmt: str | None,
    output: str | None,
    precision: int | None,
    color: str,
    render,
    *,
    extra: Callable | None = None,
    save_svg: str | None = None,
    save_html: str | None = None,
    title: str = "attn",
) -> None:
    """`--lines`: each `(line_number, AttentionResult)` is written as soon as it is computed, then dropped.

    jsonl (the default): one object per line with a "line" field (and the keys `extra(result)`
    gives, at the end); csv: the tidy rows with a first column `line`, one header; table: a
    heading with the line and its text, then `render(result, precision, width)`.
    """
    fmt = resolve_format(fmt, output, default="jsonl")
    if fmt not in LINE_FORMATS:
        raise ConfigError(f"--lines streams one result per line: use -f jsonl (the default), csv or table, not {fmt}")
    check_precision(precision)
    if fmt == "table":
        from rich.rule import Rule
        from rich.text import Text

        from attncli.io.escape import escape_token

        with table_printer(output, color, save_svg, save_html, title) as (show, width):
            for number, result in results:
                warn(result.tokens)
                show(Rule(Text(f"line {number}: ", style="bold") + Text(escape_token(result.text)), align="left"))
                show(render(result, 2 if precision is None else precision, width))
        return
    if save_svg or save_html:
        raise ConfigError(f"--save-svg and --save-html picture the tables: add -f table (not {fmt})")

    def write(stream: BinaryIO) -> None:
        for i, (number, result) in enumerate(results):
            warn(result.tokens)
            if fmt == "jsonl":
                write_jsonl(result, stream, precision, line=number, extra=extra(result) if extra else None)
            else:
                write_csv(result, stream, precision, header=i == 0, line=number)
            stream.flush()  # a reader downstream sees each line as soon as it is done

    write_output(output, write)


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
