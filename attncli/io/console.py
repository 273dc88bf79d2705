"""The terminal: a Rich console for stdout (or a file, or stderr), its colour and its width.

- Colour: `--color always|never`, else Rich's detection: a pipe or a file gets no
  escape codes, `NO_COLOR` (non-empty) turns colour off, `FORCE_COLOR` on. The
  flag wins over the environment.
- Width: `--width`, else COLUMNS when it is a usable width, else the terminal's, or 80.

Rich loads only when a console is made.
"""

from __future__ import annotations

import io
import os
import sys

from attncli.io.escape import escape_text
from attncli.pipeline.ranges import MAX_WIDTH, MIN_WIDTH, check_range

COLORS = ("auto", "always", "never")


def color_on(color: str) -> bool:
    """Whether colour is wanted at all (pictures follow this, whatever stdout is)."""
    return color == "always" or (color == "auto" and not os.environ.get("NO_COLOR"))


def check_width(width: int | None) -> None:
    check_range("width", width)


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
    from rich.console import Console  # late: start-up (Rich only where a table is drawn)

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
        from rich.segment import Segment  # late: start-up (Rich only where a table is drawn)

        yield from Segment.remove_color(console.render(self.renderable, options))
