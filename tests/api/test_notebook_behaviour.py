"""A decoder's lens and ablation in a notebook (issue 34 item 13): `attncli.lens(...)` and `attncli.ablate(...)`
show the page inline, each opening on its own view, as a browser draws them."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

import attncli
from tests.io.test_view import embedded
from tests.render.test_view_browser import chromium

LLAMA = str(Path(__file__).resolve().parents[1] / "models" / "golden" / "llama")
TEXT = "time flies like"


@pytest.fixture(scope="module")
def browser():
    with chromium(1280, 900) as driver:
        yield driver


def test_the_lens_and_the_ablation_open_their_own_view_in_the_notebook(browser, tmp_path):
    outputs = {"lens": attncli.lens(TEXT, model=LLAMA), "ablation": attncli.ablate(TEXT, model=LLAMA, mode="mean")}
    cells = "".join(f'<div class="output">{out._repr_html_()}</div>' for out in outputs.values())
    host = tmp_path / "notebook.html"
    host.write_text(f"<!DOCTYPE html><html><body><h1>notebook</h1>{cells}</body></html>", encoding="utf-8")
    browser.get(host.as_uri())
    frames = browser.find_elements("tag name", "iframe")
    assert len(frames) == 2
    for frame, (view, out) in zip(frames, outputs.items(), strict=True):
        browser.switch_to.frame(frame)
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(browser, 30).until(lambda d: d.execute_script("return document.body.dataset.ready"))
        assert browser.execute_script("return document.body.dataset.view") == view
        doc = out.view.doc
        assert doc["opens"] == view and doc[view] is not None  # the page carries what the view draws
        browser.switch_to.default_content()
    ablation = outputs["ablation"].view.doc["ablation"]
    drawn = {k: v for k, v in ablation["target"].items() if k != "label"}  # the page adds the token as drawn
    assert ablation["mode"] == "mean" and drawn == outputs["ablation"].doc["target"]
    assert browser.get_log("browser") == []  # no script error, no CSP violation


def test_an_encoder_decoders_lens_keeps_its_table(tmp_path):
    bart = str(Path(LLAMA).parent / "bart")
    out = attncli.lens("the cat", model=bart, context="le chat")
    assert out._repr_html_() is None and "layer" in repr(out)  # no page: the notebook shows the table


def test_the_frame_takes_the_height_of_its_page(browser, tmp_path):
    out = attncli.lens(TEXT, model=LLAMA)
    host = tmp_path / "notebook.html"
    host.write_text(f"<!DOCTYPE html><html><body>{out._repr_html_()}</body></html>", encoding="utf-8")
    browser.get(host.as_uri())
    frame = browser.find_element("tag name", "iframe")
    browser.switch_to.frame(frame)
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return document.body.dataset.ready"))
    page = browser.execute_script("return document.body.offsetHeight")
    assert page != 720 - 2  # not the frame's default height, which it has until it hears from the page
    browser.switch_to.default_content()
    WebDriverWait(browser, 60).until(lambda d: frame.size["height"] == max(240, page) + 2)  # + its border
    browser.switch_to.frame(frame)  # the page whole, and no more: its height is the frame's, so it stays
    assert browser.execute_script("return [innerHeight, document.body.offsetHeight]") == [page, page]
    assert browser.execute_script("return document.documentElement.scrollHeight") == page  # nothing to scroll
    browser.switch_to.default_content()


def test_a_kernel_shows_the_lens_and_the_ablation_as_their_pages():
    import nbclient  # the test extra's: a missing one fails here, never skips
    from nbformat import v4

    cells = ["import attncli", f"attncli.lens({TEXT!r}, model={LLAMA!r})", f"attncli.ablate({TEXT!r}, model={LLAMA!r})"]
    notebook = v4.new_notebook(cells=[v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    shown = [out.data for cell in notebook.cells for out in cell.outputs if out.output_type == "execute_result"]
    assert len(shown) == 2
    for data, view in zip(shown, ("lens", "ablation"), strict=True):
        (page,) = re.findall(r'<iframe srcdoc="([^"]*)" sandbox="allow-scripts"', data["text/html"])
        doc = embedded(html.unescape(page))
        assert doc["opens"] == view and doc[view] is not None
        assert "layer" in data["text/plain"]  # and the table, for a terminal
