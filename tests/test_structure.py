"""The package's structure, read from its source with the standard library's ast: no import cycles (an import
inside a function or under TYPE_CHECKING counts like any other), and every import inside a function says why
it is late (`# late: why`, once for a run of imports), as ARCHITECTURE.md's "Imports" asks."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "attncli"
Imports = ast.Import | ast.ImportFrom


def module_name(path: Path) -> str:
    """attncli/models/network/families/__init__.py -> attncli.models.network.families"""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in MODULES.items()}


def targets(module: str, node: Imports) -> list[str]:
    """The attncli modules an import statement loads (a name imported from a package counts as the package)."""
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        base = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        origin = ".".join(p for p in (base, node.module) if p) if node.level else node.module or ""
        wanted = [f"{origin}.{alias.name}" for alias in node.names]
    found = []
    for name in wanted:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.append(name)
    return found


def graph() -> dict[str, set[str]]:
    """Every attncli module -> the attncli modules it imports anywhere in its source."""
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, Imports):
                edges[name].update(targets(name, node))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def late_imports(tree: ast.Module) -> list[tuple[Imports, bool]]:
    """Each import inside a function, and whether it is the first of its run (the statements before it in its
    block are not imports)."""
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for block in ast.walk(function):
            for field in ("body", "orelse", "finalbody", "handlers"):
                statements = getattr(block, field, None)
                if not isinstance(statements, list) or (block is not function and isinstance(block, ast.FunctionDef)):
                    continue
                for i, statement in enumerate(statements):
                    if isinstance(statement, Imports):
                        found.append((statement, i == 0 or not isinstance(statements[i - 1], Imports)))
    return list({id(node): (node, first) for node, first in found}.values())


def test_the_graph_reads_every_kind_of_import():
    """The reader itself: a relative import, a name from a package, a module-level, a TYPE_CHECKING and a
    function-level import all become edges."""
    source = """
from typing import TYPE_CHECKING
from . import result
from attncli.pipeline.config import RunConfig
if TYPE_CHECKING:
    from attncli.pipeline.steps import Step
def f():
    import attncli.core.variants  # late: start-up (an example)
    from attncli.models.network import forward  # late: start-up (an example)
"""
    node = ast.parse(source)
    got = {t for n in ast.walk(node) if isinstance(n, Imports) for t in targets("attncli.pipeline.run", n)}
    assert got == {
        "attncli.pipeline.result",
        "attncli.pipeline.config",
        "attncli.pipeline.steps",
        "attncli.core.variants",
        "attncli.models.network.forward",
    }
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    """No module reaches itself through imports, wherever they sit (a TYPE_CHECKING or a late import is a cycle
    waiting for its first run-time use)."""
    assert cycles(graph()) == []


#: why an import may sit inside a function: to keep a command's start-up light (what is loaded only where it is
#: first needed), or because the package is an optional extra that may not be installed
LATE_KINDS = ("start-up", "optional")
LATE = re.compile(rf"# late: ({'|'.join(LATE_KINDS)}) \([^()]+\)")


def is_late_reason(line: str) -> bool:
    """`# late: start-up (what is spared)` or `# late: optional (the package)`: a kind and what it is about."""
    return LATE.search(line) is not None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_late_import_says_why(module):
    lines = MODULES[module].read_text(encoding="utf-8").splitlines()
    silent = [
        f"{MODULES[module].relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}"
        for node, first in late_imports(TREES[module])
        if first and not is_late_reason(lines[node.lineno - 1])
    ]
    assert not silent, "an import inside a function needs `# late: start-up (...)` or `# late: optional (...)`"


def test_the_late_rule_reads_runs_of_imports():
    tree = ast.parse("def f():\n    import a  # late: start-up (a)\n    import b\n    x = 1\n    import c\n")
    assert [(node.lineno, first) for node, first in late_imports(tree)] == [(2, True), (3, False), (5, True)]
    assert is_late_reason("import a  # late: start-up (NumPy)") and is_late_reason("import p  # late: optional (p)")
    assert not is_late_reason("import a  # loaded late") and not is_late_reason("import a  # late: because")
    assert is_late_reason("import t  # noqa: F401  # late: start-up (tokenizers)")
    assert not is_late_reason("import a  # late: speed (a)") and not is_late_reason("import a  # late: start-up ()")
