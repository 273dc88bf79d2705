"""What every command reads and says besides its result: the text of TEXT/--file, --context, and the one-line
warnings on stderr (escaped, since they may quote a path or a token)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, BinaryIO

import typer

from attncli.io.escape import escape_text
from attncli.io.inputs import decode_arg, open_lines, read_text

if TYPE_CHECKING:
    from attncli.cli.options import Source


def say(message: str) -> None:
    """A warning on stderr, one line, escaped (it may quote a path)."""
    typer.echo(f"Warning: {escape_text(message)}", err=True)


def warn(said) -> None:
    """The tokenizer's warnings about this text (`said`: its tokens, or what the Python API returned), one line
    each."""
    for warning in said.warnings:
        say(warning)


def stdin_prompt(given: str | None, what: str = "the text") -> None:
    """`-` reads stdin: at a terminal, say so on stderr (one line) rather than wait without a word."""
    if given == "-" and sys.stdin is not None and sys.stdin.isatty():
        typer.echo(f"Reading {what} from the terminal: type it, then Ctrl-D on a line of its own.", err=True)


def file_hint(given: str | None, file: str | None) -> None:
    """TEXT that names an existing file is still read as the text itself (`attn heads --lines corpus.txt` would
    analyse the word "corpus.txt"): say on stderr how to read the file instead."""
    from pathlib import Path  # late: start-up (only TEXT's check)

    if given is None or file is not None or given == "-" or "\n" in given or len(given) > 4096:
        return
    try:
        named = Path(given).is_file()
    except (OSError, ValueError):  # a text too long or with a NUL for a path: not a file
        return
    if named:
        import shlex  # late: start-up (only to quote a path in this hint)

        say(f"TEXT {given!r} is read as the text itself, not as the file of that name: --file {shlex.quote(given)}")


def given_text(text: str | None, file: str | None) -> str:
    """TEXT, --file or stdin, of a command without the text options of `Source` (errors strict, no --keep-newline):
    said at a terminal when stdin is read, hinted when TEXT names a file."""
    stdin_prompt(text)
    file_hint(text, file)
    return read_text(text, file)


def given_lines(text: str | None, file: str | None) -> tuple[BinaryIO, str]:
    """The stream of lines --lines reads (TEXT itself, `-` for stdin, or --file) and its name for messages: said
    at a terminal when stdin is read, hinted when TEXT names a file."""
    stdin_prompt(text, "the lines")
    file_hint(text, file)
    return open_lines(text, file)


def text_of(source: Source) -> str:
    """TEXT, --file or stdin, read as the source's options say."""
    stdin_prompt(source.text)
    file_hint(source.text, source.file)
    return read_text(source.text, source.file, source.errors, say, source.keep_newline)


def context_of(context: str | None, errors: str) -> str | None:
    """--context checked like TEXT: argv bytes that are not UTF-8 are an error, or U+FFFD with --errors replace."""
    return None if context is None else decode_arg(context, "--context", errors, say)
