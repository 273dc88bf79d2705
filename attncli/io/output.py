"""Where a command's result goes: a Rich table on the terminal, or a format on stdout or `-o FILE`.

- `-o FILE` is written atomically (`attncli.io.write`); the console's colour and width are `attncli.io.console`'s.
- `--save-svg`/`--save-html` record the console (Rich's `record=True`) and export
  exactly what was printed: the same text, layout and styles, in colour unless
  colour is off by `--color never` or `NO_COLOR`. A document with an interactive page
  (`doc.view`) is saved by `--save-html` (and `-f html`) as that page instead.
- `--lines` streams one result per input line (the `Lines` document).

Rich loads only when a table is drawn.
"""

from __future__ import annotations

import contextlib
import io
import sys
import typing
from collections.abc import Sequence
from typing import BinaryIO

from attncli.errors import ConfigError
from attncli.io.console import NoColor, check_width, color_on, console
from attncli.io.documents import Document, View
from attncli.io.formats import FORMATS, Format, format_for_path, formats_for
from attncli.io.write import Visible, check_target, open_output, write_output
from attncli.pipeline.ranges import check_range

Pictures = Sequence[tuple[Format, str | None]]  # (svg or html, path or None for stdout)
RASTERS = ("png", "jpg", "jpeg", "webp", "gif", "bmp", "tif", "tiff")  # bitmaps: attn writes SVG, and says how


def resolve_format(fmt: str | None, output: str | None, default: str = "table") -> str:
    if fmt is not None:
        return fmt
    if output is None:
        return default
    guessed = format_for_path(output)
    stem, dot, ext = output.rpartition(".")
    if guessed is None and dot and ext.lower() in RASTERS:
        raise ConfigError(
            f"attn draws pictures as SVG, not {ext.upper()}: write -o {stem}.svg and convert it (rsvg-convert "
            f"{stem}.svg -o {stem}.{ext}, from librsvg; or cairosvg), or open -o {stem}.html in a browser"
        )
    if guessed is None:
        raise ConfigError(f"cannot tell the format of {output} from its extension: give -f ({', '.join(FORMATS)})")
    return guessed


def check_format(kind: type[Document], command: str, fmt: str) -> None:
    """ConfigError when `fmt` (from -f, or -o's extension) cannot write this kind of document of `command`."""
    names = formats_for(kind)
    if fmt not in names:
        raise ConfigError(kind.not_available(command, fmt, [name for name in names if not FORMATS[name].picture]))


def check_precision(precision: int | None) -> None:
    check_range("precision", precision)


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
