"""docs/api.md runs as written (its Python examples as doctests here; its shell lines, as every docs page's, in
tests/test_readme.py) and docs/api.ipynb runs in a real kernel, headless, its results showing the interactive page.

The notebook runs as Jupyter runs it: nbclient starts an IPython kernel (ipykernel, in the [test] extra), runs
every cell, and keeps each cell's outputs with every MIME type the kernel computed. Running the cells with
`exec` instead would not show what a notebook displays: that comes from IPython's display machinery
calling `_repr_html_`, in the kernel.
"""

from __future__ import annotations

import doctest
import html
import re

from tests.conftest import ROOT

DOCS = ROOT / "docs"
PAGE = (DOCS / "api.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```$", PAGE, flags=re.S | re.M)


def test_the_python_examples_run_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples load the golden model by its path in the repository
    examples = "\n".join(body for lang, body in BLOCKS if lang == "pycon")
    assert examples.count(">>>") >= 15
    test = doctest.DocTestParser().get_doctest(examples, {}, "docs/api.md", str(DOCS / "api.md"), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_the_notebook_runs_and_shows_the_page(tmp_path):
    import nbclient  # the test extra's: a missing one fails here, never skips
    import nbformat

    notebook = nbformat.read(DOCS / "api.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")  # committed clean
    nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": DOCS}}
    ).execute()
    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    frames = [out.data["text/html"] for out in outputs if "text/html" in out.get("data", {})]
    assert len(frames) >= 3  # show, steps and heads each display their page
    for frame in frames:
        (page,) = re.findall(r'<iframe srcdoc="([^"]*)" sandbox="allow-scripts"', frame)
        page = html.unescape(page)
        assert page.startswith("<!DOCTYPE html>") and "attncli.view/4" in page and "Content-Security-Policy" in page
    first = next(out for out in outputs if "text/html" in out.get("data", {}))
    assert "head 0" in first.data["text/plain"] and "head 1" in first.data["text/plain"]  # the table, for a terminal
