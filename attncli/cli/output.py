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
    from attncli.io.output import emit as write

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
    from attncli.io.formats import FORMATS
    from attncli.io.output import resolve_format

    fmt = resolve_format(out.fmt, out.output, default)
    given = [f"--{name.replace('_', '-')}" for name, on in chosen.items() if on]
    if given and not FORMATS[fmt].picture:
        change = "changes" if len(given) == 1 else "change"
        raise ConfigError(f"{', '.join(given)} only {change} what the table draws; -f {fmt} has every number")


def check_writes(kind: type[Document], command: str, out: Out) -> None:
    """Before any work: ConfigError when the format chosen (-f, or -o's extension) cannot write this kind of
    document (`attn view -o x.svg`: the page is HTML)."""
    from attncli.io.output import check_format, resolve_format

    check_format(kind, command, resolve_format(out.fmt, out.output, kind.default_format))


def writing(kind: type[Document], out: Out) -> OutputCost | None:
    """What writing a document of this kind in the chosen format holds on top of its run."""
    from attncli.io.formats import FORMATS
    from attncli.io.output import resolve_format

    return FORMATS[resolve_format(out.fmt, out.output)].memory.get(kind)
