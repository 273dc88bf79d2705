"""The API's results in a notebook, as a browser draws them: two pages on one notebook page, each in its own
sandboxed iframe, both run their script under the page's own CSP, fetch nothing, and keep their keys apart."""

from __future__ import annotations

import pytest

import attncli
from tests.render.test_view_browser import chromium

TEXT = "time flies like an arrow"


@pytest.fixture(scope="module")
def browser():
    with chromium(1280, 900) as driver:
        yield driver


# A notebook page's own Content-Security-Policy, which a srcdoc frame inherits on top of the page's own: none
# (Jupyter's default), or one as strict as the page's (a host that allows inline script and style only)
HOSTS = {
    "no policy": "",
    "strict policy": '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
    "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:\">",
}


@pytest.mark.parametrize("policy", HOSTS)
def test_two_results_on_one_notebook_page_both_draw_and_stay_apart(browser, tmp_path, policy):
    outputs = [attncli.show(TEXT, heads=2), attncli.steps("fruit flies like a banana", variant="cosine")]
    cells = "".join(f'<div class="output">{out._repr_html_()}</div>' for out in outputs)
    host = tmp_path / "notebook.html"
    head = f"<head>{HOSTS[policy]}</head>"
    host.write_text(f"<!DOCTYPE html><html>{head}<body><h1>notebook</h1>{cells}</body></html>", encoding="utf-8")
    browser.get_log("performance")
    browser.get(host.as_uri())
    browser.get_log("browser")
    frames = browser.find_elements("tag name", "iframe")
    assert len(frames) == 2
    drawn = []
    for frame, out in zip(frames, outputs):
        browser.switch_to.frame(frame)
        text = browser.execute_script("return document.body.innerText")
        assert all(token in text for token in out.tokens), text[:500]
        drawn.append(browser.execute_script("return document.querySelectorAll('svg, table, canvas').length"))
        assert browser.execute_script("return document.getElementById('attn-data') !== null")
        browser.switch_to.default_content()
    assert all(n > 0 for n in drawn)  # each frame's script ran and drew
    # a frame cannot reach the notebook: the sandbox gives it an opaque origin
    browser.switch_to.frame(frames[0])
    assert (
        browser.execute_script("try { return parent.document.title === undefined; } catch (e) { return 'blocked'; }")
        == "blocked"
    )
    browser.switch_to.default_content()
    browser.switch_to.frame(frames[0])  # a key in the first page changes its view, and not the second's
    browser.execute_script("document.body.dispatchEvent(new KeyboardEvent('keydown', {key: '3', bubbles: true}))")
    browser.switch_to.default_content()
    views = []
    for frame in frames:
        browser.switch_to.frame(frame)
        views.append(browser.execute_script("return document.body.dataset.view"))
        browser.switch_to.default_content()
    assert views[0] != views[1]
    assert browser.get_log("browser") == []  # no CSP violation, no script error
    requests = [e for e in browser.get_log("performance") if '"Network.requestWillBeSent"' in e["message"]]
    assert all(host.as_uri() in e["message"] or "data:image" in e["message"] for e in requests)
