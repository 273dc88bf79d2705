"""Renderers only draw: no exponential, logarithm, softmax, matrix product or head statistic is computed under
attncli/render.

Every number a view shows comes computed from `attncli.core` or `attncli.pipeline` (the result, its steps,
`attncli.pipeline.heads`: the head statistics and the mean of the heads); a view that needs the arithmetic
of a softmax row asks `core.attention.softmax_terms`. No file is exempt: a view that wants a new number
gets it from below.
"""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT

MATHS = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "softmax", "logsumexp", "einsum"}
STATISTICS = {"entropy", "row_entropy", "head_summaries", "head_stats", "cross_head_stats", "head_rows"}
STATISTICS |= {
    "label_head",
    "label_heads",
    "rollout",
    "cross_rollout",
    "entropy_scale",
    "mean",
    "average",
    "std",
    "var",
}
COMPUTES = "attncli.core.stats"  # the module that computes the statistics: the pipeline calls it, not a view


def computing(source: str) -> list[str]:
    """The calls of MATHS or STATISTICS and the imports of COMPUTES in a Python source, as 'line: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in MATHS | STATISTICS:
                found.append(f"{node.lineno}: {name}()")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found.append(f"{node.lineno}: a product (@)")
        elif isinstance(node, ast.ImportFrom) and node.module == COMPUTES:
            found.append(f"{node.lineno}: from {COMPUTES} import")
        elif isinstance(node, ast.Import) and any(a.name == COMPUTES for a in node.names):
            found.append(f"{node.lineno}: import {COMPUTES}")
    return found


@pytest.mark.parametrize(
    "source",
    [
        "e = np.exp(row - row.max())",
        "import math\nbits = math.log2(n)",
        "from attncli.core.stats import head_summaries",
        "s = row_entropy(w)",
        "w = softmax(s)",
        "row = weights[:, i].mean(axis=0)",
        "qk = float(q @ k)",
    ],
)
def test_the_scan_finds_maths(source):
    assert computing(source)


def test_the_scan_lets_drawing_pass():
    assert not computing("from attncli.core.attention import softmax_terms\ntext = f'{x:.2f}'\nw.max()")


def test_no_maths_in_render():
    files = sorted((ROOT / "attncli" / "render").rglob("*.py"))
    assert len(files) > 10
    found = {str(p.relative_to(ROOT)): computing(p.read_text()) for p in files}
    assert {path: what for path, what in found.items() if what} == {}
