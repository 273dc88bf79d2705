"""A command's document to `emit`, as the `Out` options say, and the checks of those options against it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attncli.cli.options import Out
from attncli.errors import ConfigError

if TYPE_CHECKING:  # the output machinery (formats, documents, emit) loads in the commands that write one
    from attncli.io.documents import Document
    from attncli.pipeline.limits import OutputCost


def emit(doc: Document, out: Out) -> None:
    """Write `doc` in the chosen format, to stdout or -o (io/output.py's `emit`)."""
    from attncli.io.output import emit as write  # late: start-up (--help and --version load no output machinery)

    write(
        doc,
        out.fmt,
        out.output,
        out.precision,
        out.color,
        save_svg=out.save_svg,
        save_html=out.save_html,
        width=out.width,
        theme=out.theme,
    )


def table_only(out: Out, default: str, **chosen: bool) -> None:
    """Options that only change what the table draws: ConfigError when the output is data (-f json, csv ...,
    or the `default` format of what the command writes, --lines' JSONL)."""
    from attncli.io.formats import FORMATS  # late: start-up (--help and --version load no output machinery)
    from attncli.io.output import resolve_format

    fmt = resolve_format(out.fmt, out.output, default)
    given = [f"--{name.replace('_', '-')}" for name, on in chosen.items() if on]
    if given and not FORMATS[fmt].picture:
        change = "changes" if len(given) == 1 else "change"
        raise ConfigError(f"{', '.join(given)} only {change} what the table draws; -f {fmt} has every number")


def contrib_format(contrib: str, out: Out, kind: type[Document], rows: bool = False) -> None:
    """ConfigError when --contrib's maps would not be in the output: the interactive page (it draws the weights),
    or a data format that writes the weights alone (csv, npz ...) unless the document's `rows` are computed on
    the measure and say so (attn heads)."""
    from attncli.io.formats import FORMATS  # late: start-up (--help and --version load no output machinery)
    from attncli.io.output import resolve_format

    fmt = FORMATS[resolve_format(out.fmt, out.output, kind.default_format)]
    if fmt.extras or (fmt.picture and not fmt.interactive) or (rows and not fmt.interactive):
        return
    if rows:
        raise ConfigError(
            f"--contrib {contrib}: -f {fmt.name}'s page draws the weights; the table, svg and data formats have the "
            f"statistics of {contrib}"
        )
    raise ConfigError(
        f"--contrib {contrib}: -f {fmt.name} writes the weights alone; the table and svg draw the maps, "
        '-f json and jsonl add them under "contributions"'
    )


def check_writes(kind: type[Document], command: str, out: Out) -> None:
    """Before any work: ConfigError when the format chosen (-f, or -o's extension) cannot write this kind of
    document (`attn view -o x.svg`: the page is HTML)."""
    from attncli.io.output import (  # late: start-up (--help and --version load no output machinery)
        check_format,
        resolve_format,
    )

    check_format(kind, command, resolve_format(out.fmt, out.output, kind.default_format))


def writing(kind: type[Document], out: Out) -> OutputCost | None:
    """What writing a document of this kind in the chosen format holds on top of its run."""
    from attncli.io.formats import FORMATS  # late: start-up (--help and --version load no output machinery)
    from attncli.io.output import resolve_format

    return FORMATS[resolve_format(out.fmt, out.output)].memory.get(kind)
