"""Regenerate the SVG pictures in docs/ from real `attn` output: python docs/make_pictures.py [NAME.svg ...]

Each picture is exactly what the command prints in a 100-column terminal
(Rich's console export), so the README never shows output the program
does not produce.
"""

from __future__ import annotations

import io
import os
import shlex
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from attncli.cli import app

DOCS = Path(__file__).resolve().parent
PICTURES = {
    "show.svg": 'attn show "time flies like an arrow"',
    "show-heads.svg": 'attn show "time flies like an arrow" --heads 2 --mask causal',
    "show-stats.svg": 'attn show "the dog chased the cat" --heads 2 --stats',
    "steps.svg": 'attn steps "time flies like an arrow"',
    "steps-2x2.svg": 'attn steps "time flies" -d 2 --projection identity --precision 4',
    "tokens.svg": 'attn tokens "Zürich naïve → résumé" -t bpe',
    "compare.svg": 'attn compare "time flies like an arrow"',
    "variants.svg": "attn variants",
    "compute.svg": "attn compute --input docs/two_by_two.json -v dot",
}


def capture(command: str, width: int = 100) -> Text:
    """Run `command` in-process with colours forced and return what it printed, as Rich Text."""
    from typer.testing import CliRunner

    result = CliRunner(env={"COLUMNS": str(width), "NO_COLOR": None}).invoke(
        app, shlex.split(command)[1:] + ["--color", "always"])
    if result.exit_code != 0:
        sys.exit(f"{command} failed: {result.output}")
    return Text.from_ansi(result.stdout)


def main() -> None:
    os.chdir(DOCS.parent)  # commands name files relative to the repository
    names = sys.argv[1:] or list(PICTURES)
    for name in names:
        if name not in PICTURES:
            sys.exit(f"no picture {name}: choose from {', '.join(PICTURES)}")
        command = PICTURES[name]
        console = Console(record=True, width=100, file=io.StringIO(), force_terminal=True, color_system="truecolor")
        console.print(Text("$ " + command, style="bold"))
        console.print(capture(command))
        console.save_svg(str(DOCS / name), title=command)
        print(f"wrote docs/{name}")


if __name__ == "__main__":
    main()
