"""FORMATS: the one registry of output formats that `-f` and `-o FILE.ext` read.

An entry carries all there is to know about its format: its extensions, whether it is binary,
and which documents it writes and how (`writers`: document kind -> writer). The picture formats
(`table`, `svg`, `html`) draw any document's table instead; `html` writes a document that has an
interactive page (`doc.view`: show, steps, heads, view, patch, dla, knockout) as that page, and pictures the
table of the others. Writers load on first use, so that
`attn --help` and `attn variants` start without NumPy:

    >>> [name for name, f in FORMATS.items() if Records in f.writers]
    ['json', 'jsonl', 'csv', 'parquet']
    >>> format_for_path("weights.NPY")
    'npy'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

from attncli.io.documents import Document, Lines, Records, Result, Rollout, Steps, View
from attncli.pipeline.limits import OutputCost

if TYPE_CHECKING:  # the pictures take a Rich console; Rich loads only when a table is drawn
    from rich.console import Console

Writer = Callable[[Document, BinaryIO, "int | None"], None]  # (document, binary stream, precision)


def _lazy(module: str, name: str) -> Writer:
    """`module.name`, imported when a document is first written (the writers need NumPy)."""

    def write(doc: Document, stream: BinaryIO, precision: int | None = None) -> None:
        getattr(importlib.import_module(f"attncli.io.{module}"), name)(doc, stream, precision)

    write.__qualname__ = f"{module}.{name}"
    return write


# What writing a document holds on top of its run, for the memory guard: `attn steps` as a table keeps a
# few temporaries per cell; as JSON, Python lists and a string of ~160 bytes per number of its largest array.
TABLE_TEMPORARIES = OutputCost("table temporaries", 4 * 8)
JSON_LISTS = OutputCost("JSON of the largest array", 160, of_largest=True)


@dataclass(frozen=True)
class Format:
    """An output format of the registry: what it writes each kind of document with, and how (see each field)."""

    name: str
    extensions: tuple[str, ...]
    summary: str
    writers: dict[type[Document], Writer] = field(default_factory=dict)
    binary: bool = False  # never sent to a terminal
    picture: bool = False  # drawn from the document's table, not written from its data
    export: Callable[[Console, str, str], str] | None = None  # a picture of what the console showed: title, theme
    memory: dict[type[Document], OutputCost] = field(default_factory=dict)  # what writing a document costs
    interactive: bool = False  # a document with a view is written as that View (the page), never to a terminal
    extras: bool = False  # writes a Result's extra keys (--stats' "stats", --contrib's "contributions")


THEMES = ("light", "dark")  # --theme: the pictures' background; light is what a slide or a paper wants


def terminal_theme(name: str):
    """The Rich TerminalTheme of a --theme: light (white paper, dark text) or dark (Rich's own SVG theme)."""
    from rich.terminal_theme import SVG_EXPORT_THEME, TerminalTheme  # late: start-up (Rich only for -f svg)

    if name == "dark":
        return SVG_EXPORT_THEME
    normal = [(0, 0, 0), (170, 30, 30), (20, 120, 40), (150, 100, 0), (20, 60, 170), (130, 40, 140), (0, 120, 140)]
    bright = [(90, 90, 90), (200, 40, 40), (30, 150, 60), (180, 130, 0), (40, 90, 210), (160, 60, 170), (0, 150, 170)]
    return TerminalTheme((255, 255, 255), (20, 20, 20), [*normal, (200, 200, 200)], [*bright, (240, 240, 240)])


# The SVG's text: monospace fonts the viewer has (Fira Code first, Rich's choice, where it is installed).
MONOSPACE = "'Fira Code', Menlo, 'DejaVu Sans Mono', Consolas, 'Liberation Mono', 'Courier New', monospace"


def offline_svg(svg: str) -> str:
    """An SVG that Rich (or Textual, through Rich) exported, made offline: Rich's @font-face rules fetch Fira
    Code from a CDN whenever the picture is opened, and its comment names a web site; here the text is set in the
    local MONOSPACE fonts, and the only URL left is the SVG namespace, a name that is never fetched. Only the
    stylesheet is touched (everything before its end), never the text drawn after it."""
    import re  # late: start-up (only when an SVG is written)

    head, end, body = svg.partition("</style>")
    head = re.sub(r"\s*@font-face \{.*?\}", "", head, flags=re.S)
    head = re.sub(r"\s*<!--.*?-->", "", head, flags=re.S)
    return head.replace("font-family: Fira Code, monospace", f"font-family: {MONOSPACE}") + end + body


def _svg(console: Console, title: str, theme: str) -> str:
    return offline_svg(console.export_svg(title=title, clear=False, theme=terminal_theme(theme)))


def _html(console: Console, title: str, theme: str) -> str:
    return console.export_html(clear=False, theme=terminal_theme(theme))


FORMATS: dict[str, Format] = {
    f.name: f
    for f in [
        Format(
            "table",
            (),
            "what the terminal shows (no colour in a file)",
            picture=True,
            memory={Steps: TABLE_TEMPORARIES},
        ),
        Format(
            "json",
            (".json",),
            "one JSON object, schema attncli.attention/1 (steps: attncli.steps/1)",
            {
                Result: _lazy("result", "json_document"),
                Steps: _lazy("steps", "json_document"),
                Records: _lazy("records", "write_json"),
                Rollout: _lazy("rollout", "write_json"),
                View: _lazy("view", "write_json"),
            },
            memory={Steps: JSON_LISTS},
            extras=True,
        ),
        Format(
            "jsonl",
            (".jsonl",),
            "one JSON object per line",
            {
                Result: _lazy("result", "jsonl_document"),
                Lines: _lazy("result", "jsonl_lines"),
                Steps: _lazy("steps", "jsonl_document"),
                Records: _lazy("records", "write_jsonl"),
                Rollout: _lazy("rollout", "write_jsonl"),
            },
            memory={Steps: JSON_LISTS},
            extras=True,
        ),
        Format(
            "csv",
            (".csv",),
            "tidy long form: head, query, key, score, weight",
            {
                Result: _lazy("result", "csv_document"),
                Lines: _lazy("result", "csv_lines"),
                Records: _lazy("records", "write_csv"),
                Rollout: _lazy("rollout", "write_csv"),
            },
        ),
        Format(
            "npy",
            (".npy",),
            "the weights [h, m, n] as a .npy",
            {Result: _lazy("result", "npy_document"), Rollout: _lazy("rollout", "write_npy")},
            binary=True,
        ),
        Format(
            "npz",
            (".npz",),
            "every array and the tokens as a .npz",
            {
                Result: _lazy("result", "npz_document"),
                Steps: _lazy("steps", "npz_document"),
                Rollout: _lazy("rollout", "write_npz"),
            },
            binary=True,
        ),
        Format(
            "parquet",
            (".parquet",),
            "the rows as a Parquet table, the rest as its metadata (needs the parquet extra: pyarrow)",
            {Records: _lazy("parquet", "write_parquet")},
            binary=True,
        ),
        Format("svg", (".svg",), "the table as an SVG picture, as the terminal shows it", picture=True, export=_svg),
        Format(
            "html",
            (".html", ".htm"),
            "an interactive page, self-contained (show, steps, heads, view, patch, dla, knockout); else the table as "
            "the terminal shows it",
            {View: _lazy("view", "write_page")},
            picture=True,
            export=_html,
            interactive=True,
        ),
    ]
}


def formats_for(kind: type[Document]) -> list[str]:
    """The formats that can write a document of this kind: the data formats that take it, and the pictures of its
    table (not of a page's data: `attn view` writes its page, or that data)."""
    return [name for name, f in FORMATS.items() if kind in f.writers or (f.picture and kind.pictured)]


def format_for_path(path: str) -> str | None:
    """The format a file name implies by its extension, or None."""
    for f in FORMATS.values():
        if any(path.lower().endswith(ext) for ext in f.extensions):
            return f.name
    return None
