"""The interactive page of `attn view` (and `-f html`, `--save-html`): one self-contained HTML file.

The page is the view document (schema attncli.view/4, attncli.io.view) embedded once as JSON, with the
hand-written script and stylesheet of this package (`view/view.js`, `view/view.css`) inline: no framework,
no CDN, no font, no request of any kind, so it opens from a file:// URL offline. The JSON sits in a
`<script type="application/json">` with `<`, `>` and `&` escaped, so no token can close the element; a second
one holds the short labels of the heads' patterns, from the statistics registry (attncli.core.statistics):

    >>> html = page({"schema": "attncli.view/4", "text": "</script><b>", "tokens": []})
    >>> html.count("</script>"), "\\\\u003c/script\\\\u003e" in html
    (3, True)

A notebook shows the page whole, in an iframe (attncli.api.page).
"""

from __future__ import annotations

import html
import re
from importlib import resources

from attncli.core.statistics import HINTS
from attncli.io.encode import dumps
from attncli.io.escape import escape_text


def _asset(name: str) -> str:
    return resources.files("attncli.render").joinpath("view").joinpath(name).read_text(encoding="utf-8")


#: The parts of view.js a page carries only when its document has the key that needs them (--scale, --drop-sink and
#: --contrib's "colour"; --contrib's "contributions"): a part is a block between `/*{name*/` and `/*name}*/`, on
#: lines of its own or inside a line, cut from the script of a page without that key, so that such a page is byte
#: for byte the page made before those options existed, and carries no code it never runs.
SCRIPT_PARTS = {"colour": "colour", "contrib": "contributions"}


def cut(script: str, part: str) -> str:
    r"""`script` without the blocks of `part`: whole lines (the markers' own lines too), or spans inside a line.

    >>> cut("a();\n  /*{x*/\n  b();\n  /*x}*/\nc(1/*{x*/, 2/*x}*/);\n", "x")
    'a();\nc(1);\n'
    """
    lines = re.compile(rf"^[ \t]*/\*\{{{part}\*/\n.*?^[ \t]*/\*{part}\}}\*/\n", re.S | re.M)
    return re.sub(rf"/\*\{{{part}\*/.*?/\*{part}\}}\*/", "", lines.sub("", script))


def script(doc: dict) -> str:
    """view.js as this document's page runs it: without the parts whose key the document lacks (`SCRIPT_PARTS`)."""
    js = _asset("view.js")
    for part, key in SCRIPT_PARTS.items():
        js = js if key in doc else cut(js, part)
    return js


def scales() -> dict:
    """The colour scales a page with "colour" offers (attncli.render.style's SCALES): each one's shades and legend."""
    from attncli.render.style import SCALES  # late: start-up (Rich's colours: only for a page with --scale)

    return {name: s.legend() for name, s in SCALES.items()}


def embedded(doc: dict) -> str:
    """The document as JSON that is inert inside a <script> element (and the same JSON once parsed)."""
    text = dumps(doc, allow_nan=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _inside(doc: dict) -> str:
    """The stylesheet, the data, the short labels of the heads' patterns (and, with "colour", the scales) and the
    script: the page's <body>."""
    shades = ""
    if "colour" in doc:  # --scale, --drop-sink, --contrib: the scales the page's chooser offers
        shades = f'<script type="application/json" id="attn-scales">{embedded(scales())}</script>\n'
    return (
        f"<style>\n{_asset('view.css')}</style>\n"
        "<noscript>This page draws with JavaScript; its data is the JSON below "
        "(attn view -f json writes the same).</noscript>\n"
        f'<script type="application/json" id="attn-data">{embedded(doc)}</script>\n'
        f'<script type="application/json" id="attn-labels">{embedded(HINTS)}</script>\n'
        + shades
        + f"<script>\n{script(doc)}</script>\n"
    )


def page(doc: dict) -> str:
    """The whole page: the document, the stylesheet and the script, in one string (its <body> is the root)."""
    title = html.escape(escape_text(f"attn view · {doc.get('text') or ''}"[:120]))  # controls made visible
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:\">\n"
        f'<title>{title}</title>\n</head>\n<body class="attn-view">\n{_inside(doc)}</body>\n</html>\n'
    )
