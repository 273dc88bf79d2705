"""The page of `attn view` in a real browser: headless Chromium driven by Selenium, offline, from file://.

Skipped, with the reason, only where no browser can be had (no selenium, no chromium or no chromedriver);
.ci/run installs Debian's chromium and chromium-driver when they are missing.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import attn
from tests.model_fixtures import make_gpt2

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
SOURCE, TARGET = "the cat sat on the mat", "le chat est assis sur le tapis"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("no browser: selenium is not installed (pip install -e '.[test]')")
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("no browser: chromium or chromedriver is missing (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="attn-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    return driver, profile


@pytest.fixture(scope="module")
def browser():
    driver, profile = _browser()
    driver.set_window_size(1200, 900)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """A text run with 4 heads and a causal mask, and a tiny 2-layer GPT-2: pages and their JSON."""
    folder = tmp_path_factory.mktemp("pages")
    model = str(make_gpt2(folder / "gpt2-tiny"))
    runs = {
        "text": ["time flies like an arrow", "--heads", "4", "--mask", "causal"],
        "model": ["time flies like an arrow", "--model", model],
        "cross": ["time flies", "--context", "like an arrow"],
        "hostile": ["</script><b>x \x1b[31mred \u202egnp.exe", "--heads", "2"],
        "seq2seq": [TARGET, "--model", str(GOLDEN / "bart"), "--context", SOURCE],
        "generated": ["time flies", "--model", str(GOLDEN / "llama"), "--generate", "3"],
        "heads": [TARGET, "--model", str(GOLDEN / "bart-heads"), "--context", SOURCE],  # 4 encoder, 2 decoder heads
    }
    out = {}
    for name, args in runs.items():
        path = folder / f"{name}.html"
        assert attn("view", *args, "-o", path).exit_code == 0
        out[name] = (path, json.loads(attn("view", *args, "-f", "json").stdout))
    return out


def load(driver, path: Path) -> None:
    driver.get(path.as_uri())
    driver.get_log("browser")  # start each page with an empty console log


def count(driver, selector: str) -> int:
    return driver.execute_script("return document.querySelectorAll(arguments[0]).length", selector)


def key(driver, keys: str) -> None:
    driver.find_element("tag name", "body").send_keys(keys)


def drawn_lines(doc: dict, layer: int, heads: list[int]) -> int:
    """The lines a head view draws: every weight above 0 that no mask hides, of each head shown."""
    total = 0
    for h in heads:
        head = doc["layers"][layer]["heads"][h]
        mask = doc["masks"][head["mask"]] if head["mask"] is not None else None
        total += sum(
            1
            for i, row in enumerate(head["weights"])
            for j, w in enumerate(row)
            if w > 0 and (mask is None or mask[i][j] == "0")
        )
    return total


def test_nothing_leaves_the_page_and_nothing_fails(browser, pages):
    for path, _ in pages.values():
        browser.get_log("performance")
        load(browser, path)
        for view in "1234":
            key(browser, view)
        requests = [
            json.loads(entry["message"])["message"]["params"]["request"]["url"]
            for entry in browser.get_log("performance")
            if json.loads(entry["message"])["message"]["method"] == "Network.requestWillBeSent"
        ]
        # the file itself, and the thumbnails the page draws itself as data: URLs (which never leave it)
        assert [url for url in requests if not url.startswith("data:image/png;base64,")] == [path.as_uri()], requests
        assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
        assert browser.get_log("browser") == []  # no console error, nor any message at all


def test_the_head_view_draws_the_tokens_and_a_line_per_weight(browser, pages):
    path, doc = pages["text"]
    load(browser, path)
    assert count(browser, '.tok[data-side="q"]') == len(doc["tokens"])
    assert count(browser, '.tok[data-side="k"]') == len(doc["tokens"])
    assert count(browser, ".lines line") == drawn_lines(doc, 0, [0])
    path, doc = pages["cross"]
    load(browser, path)
    assert count(browser, '.tok[data-side="k"]') == len(doc["context_tokens"]) == 3
    assert count(browser, ".boundary") == 1


def test_hovering_a_token_highlights_its_lines(browser, pages):
    from selenium.webdriver.common.action_chains import ActionChains

    path, doc = pages["text"]
    load(browser, path)
    assert count(browser, "line.on") == 0
    token = browser.find_element("css selector", '.tok[data-side="q"][data-i="3"]')
    ActionChains(browser).move_to_element(token).perform()
    weights = doc["layers"][0]["heads"][0]["weights"][3]
    assert count(browser, "line.on") == sum(1 for j, w in enumerate(weights) if w > 0 and j <= 3)  # causal: keys ≤ 3
    assert "query 3 an" in browser.find_element("id", "readout").text
    key_token = browser.find_element("css selector", '.tok[data-side="k"][data-i="0"]')
    ActionChains(browser).move_to_element(key_token).perform()
    assert count(browser, "line.on") == len(doc["tokens"])  # every query sees the first key


def test_choosing_heads_and_layers_changes_the_drawing(browser, pages):
    path, doc = pages["text"]
    load(browser, path)
    browser.find_element("css selector", '#heads input[value="2"]').click()
    assert count(browser, ".lines g") == 2
    assert count(browser, ".lines line") == drawn_lines(doc, 0, [0, 2])
    assert browser.execute_script(
        "return [...document.querySelectorAll('.lines g')].map(g => g.getAttribute('stroke'))"
    ) == ["#1f77b4", "#2ca02c"]  # distinct colours (and dashes) per head
    path, doc = pages["model"]
    load(browser, path)
    assert browser.find_element("id", "layer").get_attribute("value") == "1"  # the last layer, as attn show

    def opacities():
        return browser.execute_script(
            "return [...document.querySelectorAll('.lines line')].map(l => l.getAttribute('stroke-opacity'))"
        )

    last = opacities()
    key(browser, "[")
    assert browser.find_element("id", "layer").get_attribute("value") == "0" and opacities() != last
    assert count(browser, ".lines line") == drawn_lines(doc, 0, [0])


def test_the_model_view_opens_a_head(browser, pages):
    path, doc = pages["model"]
    load(browser, path)
    key(browser, "2")
    labels = [h["label"] for layer in doc["layers"] for h in layer["heads"]]
    assert count(browser, ".thumb") == len(labels) == 2 * 2
    browser.find_element("css selector", '.thumb[data-l="0"][data-h="1"]').click()
    assert browser.execute_script("return document.body.dataset.view") == "head"
    assert browser.find_element("id", "layer").get_attribute("value") == "0"
    assert count(browser, ".lines g[data-head='1']") == 1


def test_the_matrix_marks_row_maxima_and_masked_cells(browser, pages):
    path, doc = pages["text"]
    load(browser, path)
    key(browser, "3")
    n = len(doc["tokens"])
    assert count(browser, ".matrix rect[data-i]") == n * n and count(browser, ".rowmax") == n
    assert count(browser, '.matrix rect[fill="url(#hatch)"]') == n * (n - 1) // 2  # the causal mask
    browser.find_element("css selector", ".matrix").send_keys("\ue015\ue014\ue007")  # down, right, Enter
    text = browser.find_element("id", "readout").text
    exact = {s["name"]: s["array"] for s in doc["steps"]}["weights"][0][1][1]
    assert "query 1 flies → key 1 flies" in text and f"exact: {exact}" in text


def test_the_steps_view_shows_the_arithmetic_of_a_weight(browser, pages):
    from selenium.webdriver.common.action_chains import ActionChains

    path, doc = pages["text"]
    load(browser, path)
    key(browser, "4")
    cell = browser.find_element("css selector", '.step[data-step="weights"] rect[data-i="2"][data-j="1"]')
    ActionChains(browser).move_to_element(cell).perform()
    text = browser.find_element("id", "readout").text
    steps = {s["name"]: s["array"] for s in doc["steps"]}
    row = [s for s in steps["masked_scores"][0][2] if s is not None]
    assert f"score s = {steps['masked_scores'][0][2][1]}" in text and f"row max = {max(row)}" in text
    assert f"exact weight = {steps['weights'][0][2][1]}" in text


def _colours(driver) -> tuple[int, int, int]:
    """(distinct colours, width, height) of a screenshot, counted in the browser from the PNG."""
    return tuple(
        driver.execute_async_script(
            """const done = arguments[1], img = new Image();
            img.onload = () => {
              const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
              const x = c.getContext('2d'); x.drawImage(img, 0, 0);
              const d = x.getImageData(0, 0, c.width, c.height).data, seen = new Set();
              for (let i = 0; i < d.length; i += 4) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
              done([seen.size, c.width, c.height]);
            };
            img.src = 'data:image/png;base64,' + arguments[0];""",
            driver.get_screenshot_as_base64(),
        )
    )


@pytest.mark.parametrize("size", [(1200, 900), (480, 800)])
def test_a_screenshot_is_not_blank(browser, pages, size):
    path, _ = pages["model"]
    browser.set_window_size(*size)
    try:
        load(browser, path)
        for view in "123":
            key(browser, view)
            colours, width, _ = _colours(browser)
            assert colours > 50 and width >= size[0] * 0.8  # text, lines and shades: not a blank page
    finally:
        browser.set_window_size(1200, 900)


def test_hostile_tokens_are_drawn_visible_and_inert(browser, pages):
    path, doc = pages["hostile"]
    load(browser, path)
    joined = "".join(doc["tokens"])
    assert "\x1b" in joined and "\u202e" in joined and "<b>" in "".join(doc["tokens"][:5])
    drawn = browser.execute_script(
        "return [...document.querySelectorAll('.tok[data-side=\"q\"] text')].map(t => t.textContent)"
    )
    expected = [t.replace("\x1b", "\\x1b").replace("\u202e", "\\u202e") for t in doc["tokens"]]
    assert drawn == expected  # the escape and the bidi override are shown as escapes, never acted on
    assert count(browser, "b") == 0 and count(browser, "script") == 2  # the markup in a token stayed text


def test_dark_when_the_system_prefers_it_and_plain_in_print(browser, pages):
    path, _ = pages["text"]

    def background():
        return browser.execute_script("return getComputedStyle(document.body).backgroundColor")

    try:
        load(browser, path)
        assert background() == "rgb(255, 255, 255)"  # light by default
        browser.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
        )
        load(browser, path)
        assert background() == "rgb(23, 23, 27)"
        assert browser.execute_script("return document.querySelector('#stage svg > rect').getAttribute('fill')") == (
            "#17171b"  # the drawing follows the theme too
        )
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        hidden = browser.execute_script(
            "return ['nav', '.controls', '.help'].map(s => getComputedStyle(document.querySelector(s)).display)"
        )
        assert hidden == ["none", "none", "none"] and background() == "rgb(255, 255, 255)"
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "", "features": []})


def test_the_svg_button_downloads_the_current_view(browser, pages, tmp_path):
    import time
    import xml.etree.ElementTree as ET

    path, doc = pages["text"]
    browser.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)})
    load(browser, path)
    key(browser, "3")
    browser.find_element("id", "save-svg").click()
    saved = tmp_path / "attn-matrix.svg"
    for _ in range(100):  # the download is written asynchronously: wait for it (at most 10 s), not for a time
        if saved.exists() and saved.stat().st_size > 0:
            break
        time.sleep(0.1)
    root = ET.fromstring(saved.read_text(encoding="utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    rects = root.findall(".//{http://www.w3.org/2000/svg}rect[@data-i]")
    assert len(rects) == len(doc["tokens"]) ** 2


# ---- an encoder–decoder: its parts, the alignment, the mean over the heads ------------------------------------


def _state(driver) -> tuple[str, str, str]:
    """(part, view, layer) the page shows."""
    return tuple(
        driver.execute_script(
            "return [document.body.dataset.part, document.body.dataset.view, document.getElementById('layer').value]"
        )
    )


def _row_maxima(driver) -> list[tuple[int, int]]:
    """The (row, column) of each dot of the matrix view, from where it is drawn."""
    return [
        tuple(ij)
        for ij in driver.execute_script(
            """const cells = [...document.querySelectorAll('.matrix rect[data-i]')];
        return [...document.querySelectorAll('.rowmax')].map(dot => {
          const x = +dot.getAttribute('cx'), y = +dot.getAttribute('cy');
          const cell = cells.find(r => x >= +r.getAttribute('x') && x < +r.getAttribute('x') + +r.getAttribute('width')
            && y >= +r.getAttribute('y') && y < +r.getAttribute('y') + +r.getAttribute('height'));
          return [+cell.dataset.i, +cell.dataset.j];
        });"""
        )
    ]


def test_an_encoder_decoder_opens_at_its_cross_attention_target_against_source(browser, pages):
    path, doc = pages["seq2seq"]
    load(browser, path)
    cross = doc["parts"]["cross"]
    assert _state(browser) == ("cross", "head", "1")  # the last layer, as attn show
    assert count(browser, '.tok[data-side="q"]') == len(cross["tokens"]) == 9  # the target, as the decoder reads it
    assert count(browser, '.tok[data-side="k"]') == len(cross["context_tokens"]) == 8  # the source
    assert count(browser, ".boundary") == 1 and count(browser, ".lines line") == drawn_lines(cross, 1, [0])
    options = browser.execute_script("return [...document.querySelectorAll('#part option')].map(o => o.value)")
    assert options == list(doc["parts"]) == ["cross", "decoder", "encoder"]
    labels = browser.execute_script(
        "return [...document.querySelectorAll('#stage svg > text')].map(t => t.textContent)"
    )
    assert "target (queries)" in labels and "source (keys)" in labels


def test_c_and_the_chooser_switch_the_part(browser, pages):
    from selenium.webdriver.support.ui import Select

    path, doc = pages["seq2seq"]
    load(browser, path)
    key(browser, "c")
    decoder = doc["parts"]["decoder"]
    assert _state(browser) == ("decoder", "head", "1")
    n = len(decoder["tokens"])
    assert count(browser, '.tok[data-side="k"]') == n and count(browser, ".boundary") == 0
    assert count(browser, ".lines line") == drawn_lines(decoder, 1, [0])  # causal: no line to a later token
    key(browser, "3")
    assert count(browser, '.matrix rect[fill="url(#hatch)"]') == n * (n - 1) // 2
    Select(browser.find_element("id", "part")).select_by_value("encoder")
    encoder = doc["parts"]["encoder"]
    assert _state(browser) == ("encoder", "matrix", "1")
    assert count(browser, ".matrix rect[data-i]") == len(encoder["tokens"]) ** 2
    key(browser, "[2")  # the model view of the encoder's layers × heads
    assert _state(browser) == ("encoder", "model", "0") and count(browser, ".thumb") == 2 * 4
    key(browser, "c")  # round to cross, at the layer chosen
    assert _state(browser) == ("cross", "model", "0")
    browser.find_element("css selector", '.thumb[data-l="1"][data-h="3"]').click()
    assert _state(browser) == ("cross", "head", "1") and count(browser, ".lines g[data-head='3']") == 1
    assert browser.get_log("browser") == []


def test_each_part_offers_its_own_heads(browser, pages):
    from selenium.webdriver.support.ui import Select

    path, doc = pages["heads"]
    load(browser, path)
    boxes = "return [...document.querySelectorAll('#heads label')].map(l => l.textContent.trim())"
    assert browser.execute_script(boxes) == ["0", "1", "mean"]  # the cross-attention: the decoder's 2 heads
    Select(browser.find_element("id", "part")).select_by_value("encoder")
    assert browser.execute_script(boxes) == ["0", "1", "2", "3", "mean"]
    browser.find_element("css selector", 'input[data-head="3"]').click()
    assert count(browser, ".lines g[data-head='3']") == 1
    Select(browser.find_element("id", "part")).select_by_value("decoder")  # head 3 is not the decoder's
    assert browser.execute_script(boxes) == ["0", "1", "mean"] and count(browser, ".lines g[data-head='0']") == 1
    assert [len(layer["heads"]) for layer in doc["parts"]["decoder"]["layers"]] == [2, 2]
    assert browser.get_log("browser") == []


def test_the_alignment_marks_each_target_tokens_strongest_source_token(browser, pages):
    path, doc = pages["seq2seq"]
    load(browser, path)
    key(browser, ",3")  # cross, the last layer, head 0: the matrix of target rows × source columns
    cross = doc["parts"]["cross"]
    weights = np.array(cross["layers"][1]["heads"][0]["weights"])
    assert _row_maxima(browser) == [(i, int(np.argmax(row))) for i, row in enumerate(weights)]
    title = browser.execute_script("return document.querySelector('#stage svg > text').textContent")
    assert title.startswith("cross layer 1, head 0, the alignment: rows target (queries), columns source (keys)")
    key(browser, "a")  # the mean over the heads: the alignment a course draws
    mean = np.mean([h["weights"] for h in cross["layers"][1]["heads"]], axis=0)
    assert browser.find_element("id", "mean").is_selected()
    assert _row_maxima(browser) == [(i, int(np.argmax(row))) for i, row in enumerate(mean)]
    browser.find_element("css selector", ".matrix").send_keys("\ue015\ue014\ue007")  # down, right, Enter
    text = browser.find_element("id", "readout").text
    assert f"query 1 {cross['tokens'][1]} → key 1 {cross['context_tokens'][1]}" in text
    assert f"mean of the 4 heads): weight {mean[1, 1] / 1000:.3f}" in text
    assert "--part cross --layer 1 -f json | jq '[.heads[].weights[1][1]] | add / length'" in text
    key(browser, "1")  # the head view draws the mean as one set of lines
    assert count(browser, ".lines g") == 1 and count(browser, ".lines line") == int((mean > 0).sum())
    browser.find_element("css selector", '#heads input[value="2"]').click()  # a head again: the mean is off
    assert not browser.find_element("id", "mean").is_selected() and count(browser, ".lines g[data-head='2']") == 1


def test_the_mean_works_on_a_text_run_and_its_exact_value_is_the_mean_of_the_exact_weights(browser, pages):
    path, doc = pages["text"]
    load(browser, path)
    key(browser, "3a")
    browser.find_element("css selector", ".matrix").send_keys("\ue015\ue007")  # down, Enter: query 1, key 0
    text = browser.find_element("id", "readout").text
    exact = {s["name"]: s["array"] for s in doc["steps"]}["weights"]
    assert "mean of the 4 heads" in text
    shown = float(text.split("exact weights = ")[1].split()[0])
    assert shown == pytest.approx(float(np.mean([h[1][0] for h in exact])), rel=1e-15)


def test_the_tokens_a_model_wrote_are_labelled_as_written(browser, pages):
    path, doc = pages["generated"]
    load(browser, path)
    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('.tok[data-side=\"q\"]')).map(function (t) "
        "{ return t.textContent; })"
    )
    start = doc["generated"]["from"]
    assert len(labels) == len(doc["tokens"]) == start + 3
    assert [label.startswith("›") for label in labels] == [i >= start for i in range(len(labels))]


def test_n_and_p_step_through_the_written_tokens_and_escape_shows_all(browser, pages):
    from selenium.webdriver.common.keys import Keys

    path, doc = pages["generated"]
    load(browser, path)
    start, total = doc["generated"]["from"], len(doc["tokens"])
    key(browser, "n")
    assert count(browser, '.tok[data-side="q"]') == count(browser, '.tok[data-side="k"]') == start + 1
    assert "written token 1 of 3" in browser.find_element("id", "readout").text
    key(browser, "nn")
    assert count(browser, '.tok[data-side="q"]') == total
    key(browser, "p")
    assert count(browser, '.tok[data-side="q"]') == total - 1
    key(browser, "3")  # the matrix view keeps the step: its rows so far
    assert count(browser, ".tok") == 0 and "written token" not in browser.find_element("id", "readout").text
    key(browser, "1")
    assert count(browser, '.tok[data-side="q"]') == total - 1
    key(browser, Keys.ESCAPE)
    assert count(browser, '.tok[data-side="q"]') == total
    assert browser.get_log("browser") == []
