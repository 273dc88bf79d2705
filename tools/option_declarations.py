"""How many times each `attn` option is declared in a tree of the package, read with `ast` (issue 38, item 1).

A declaration is a place that states an option anew: a `typer.Option(...)` or `choice(...)` call naming its flag
(cli/), a row of the option table naming it (`Option(...)`, api/), or a row of the API's keyword table
(`Keyword("name", ...)`, api/keywords.py). Copies a test holds to the row are counted apart: a keyword in an API
function's own signature (its default; tests/api/test_options.py) and a command's parameter default (the same
test, through the built command). The goal is 1 declaration per option: on issue 38's o38 merge (cb8e694) 137
declarations of 86 options (1.59), after n38 88 (1.02): --mask (attn compute's API mask= takes one string, the
text runs' a list too) and --lines (the API's lines= is the texts, the command line's a switch) have an API keyword
of another kind beside their row.

    python tools/option_declarations.py .               # this tree
    python tools/option_declarations.py /tmp/before     # another (git archive BASE | tar -x -C /tmp/before)
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path


def _strings(call: ast.Call) -> set[str]:
    return {a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}


def _flags_of_row(call: ast.Call) -> set[str]:
    """The flags tuple of an `Option(...)` row: its fourth positional argument."""
    if len(call.args) >= 4 and isinstance(call.args[3], ast.Tuple):
        return {e.value for e in call.args[3].elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def count(root: Path) -> tuple[Counter, Counter]:
    """(declarations, keyword rows) per flag and per keyword of the package under `root`."""
    flags: Counter = Counter()
    keywords: Counter = Counter()
    package = root / "attncli"
    for path in sorted([*(package / "cli").rglob("*.py"), *(package / "api").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            called = _name(node)
            if called in ("Option", "choice") and path.parts[-2:][0] != "api" and "cli" in path.parts:
                flags.update(f for f in _strings(node) if f.startswith("-"))
            elif called == "Option" and "api" in path.parts:
                flags.update(_flags_of_row(node))
            elif called == "Keyword" and node.args and isinstance(node.args[0], ast.Constant):
                keywords[node.args[0].value] += 1
    return flags, keywords


LIST = """
import typer
from attncli.cli.app import COMMANDS, app
group = typer.main.get_command(app)
for name in COMMANDS:
    if name != "help":
        ctx = group.make_context("attn", [name, "--help"], resilient_parsing=True)
        for p in group.get_command(ctx, name).params:
            if p.opts[0].startswith("-"):
                help = "" if "--format" in p.opts else (p.help or "").replace("\\t", " ")  # -f: one option
                print(" ".join(p.opts), "\t", p.name, "\t", help)
"""


def options(root: Path) -> dict[str, set[tuple[str, str]]]:
    """Each long flag -> its distinct options (keyword, help) in the `attn` of the tree under `root` (-f's help,
    made per command from what it writes, is one option's)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    shown = subprocess.run([sys.executable, "-c", LIST], env=env, capture_output=True, text=True, check=True).stdout
    found: dict[str, set[tuple[str, str]]] = {}
    for line in shown.splitlines():
        flags, name, help = line.split("\t")
        found.setdefault(flags.split()[-1], set()).add((name.strip(), help.strip()))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    tree = parser.parse_args().root.resolve()
    flags, keywords = count(tree)
    offered = options(tree)
    total = 0
    for flag, distinct in sorted(offered.items()):
        names = {name for name, _ in distinct}
        n = flags[flag] + sum(keywords[name] for name in names)
        total += n
        if n != len(distinct):
            print(
                f"{flag:16} {len(distinct)} option(s), {n} declarations ({flags[flag]} of the flag, "
                f"{n - flags[flag]} Keyword rows)"
            )
    n_options = sum(len(d) for d in offered.values())
    print(f"{n_options} options, {total} declarations: {total / n_options:.2f} per option")


if __name__ == "__main__":
    main()
