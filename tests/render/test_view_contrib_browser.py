"""The page with --contrib, --scale and --drop-sink in headless Chromium: the Contributions view draws the page's
maps (attn show --contrib's numbers, tests/io/test_view_contrib.py), each titled by its measure, its readout the
exact number; the colour chooser re-shades the weights and says which scale; the sink switch draws the weights
without key 0 and says so. Skipped where no browser can be had."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attncli.io.view import maps_of
from tests.conftest import attn
from tests.render.test_view_browser import _open, _texts, chromium, count, hover, load

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
TEXT = "time flies like an arrow"


@pytest.fixture(scope="module")
def browser():
    with chromium(1200, 900) as driver:
        yield driver


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The golden llama's page by the norm (per head), bert's by ALTI (its rollout), and llama's without the sink."""
    folder = tmp_path_factory.mktemp("contrib")
    runs = {
        "norm": [TEXT, "--model", GOLDEN / "llama", "--contrib", "norm", "--head", "1"],
        "alti": [TEXT, "--model", GOLDEN / "bert", "--contrib", "alti", "--scale", "log"],
        "sink": [TEXT, "--model", GOLDEN / "llama", "--drop-sink", "--head", "1"],
    }
    out = {}
    for name, args in runs.items():
        path = folder / f"{name}.html"
        assert attn("view", *args, "-o", path).exit_code == 0
        out[name] = (path, json.loads(attn("view", *args, "-f", "json").stdout))
    return out


def _fill(driver, selector: str) -> str:
    return driver.execute_script("return document.querySelector(arguments[0]).getAttribute('fill')", selector)


@pytest.mark.parametrize("name", ["norm", "alti"])
def test_the_contributions_view_draws_each_map_titled_by_its_measure(browser, pages, name):
    path, doc = pages[name]
    load(browser, path)
    _open(browser, "contrib")
    c, n = doc["contributions"], len(doc["tokens"])
    layer = [entry["layer"] for entry in doc["layers"]].index(doc["layer"])
    maps = maps_of(doc)[layer]
    titles = _texts(browser, ".contrib-map")
    if name == "norm":  # the chosen head's, then the layer's
        assert titles == [
            f"{c['title']}, layer {doc['layer']}, head 1",
            f"{c['title']}, layer {doc['layer']}, all heads together",
        ]
    else:  # the layer's, then its rollout
        assert titles == [
            f"{c['title']}, layer {doc['layer']}",
            f"{c['title']} rolled out through layers 0..{doc['layer']}",
        ]
    assert count(browser, ".contrib rect[data-i]") == len(titles) * n * n
    assert _texts(browser, ".contrib-title")[0] == f"{c['title']}: {c['unit']}"
    legends = _texts(browser, ".legend-title")
    assert len(legends) == len(titles) and all(t.startswith(c["title"]) for t in legends)
    assert ("log scale" in legends[0]) == (name == "alti")
    cell = browser.find_elements("css selector", '.contrib[data-map="0"] rect[data-i="3"][data-j="1"]')[0]
    hover(browser, cell)
    first = maps["heads"][1] if name == "norm" else maps["map"]
    readout = browser.find_element("id", "readout").text
    assert readout.startswith(titles[0]) and readout.endswith(f": {float(first[3, 1])!r} (exact, float64)"), readout
    assert browser.get_log("browser") == []


def test_the_colour_chooser_reshades_and_the_legend_says_which(browser, pages):
    from selenium.webdriver.support.ui import Select

    path, _ = pages["norm"]
    load(browser, path)
    _open(browser, "matrix")
    chooser = Select(browser.find_element("id", "scale"))
    assert [o.text for o in chooser.options] == ["√ scale", "log scale (≤ 0.0001 lightest)", "linear scale"]
    cell = '.matrix rect[data-i="4"][data-j="2"]'
    fills = {}
    for scale in ("sqrt", "log", "linear"):
        chooser = Select(browser.find_element("id", "scale"))
        chooser.select_by_value(scale)
        fills[scale] = _fill(browser, cell)
        assert _texts(browser, ".legend-title")[0] == "weight, " + chooser.first_selected_option.text
    assert len(set(fills.values())) == 3  # a weight between 0 and 1 has a shade of its own on each scale
    assert _texts(browser, ".legend-tick") == ["0", "0.25", "0.5", "0.75", "1"]  # the linear scale's
    assert browser.get_log("browser") == []


def test_the_sink_switch_draws_the_weights_without_key_0_and_says_so(browser, pages):
    path, _ = pages["sink"]
    load(browser, path)
    _open(browser, "matrix")
    box = browser.find_element("id", "drop-sink")
    assert box.is_selected()  # --drop-sink: the page opens without the sink
    title = _texts(browser, "svg text")[0]
    assert "(key 0 dropped, each row renormalized)" in title
    assert _fill(browser, '.matrix rect[data-i="3"][data-j="0"]') == "url(#hatch)"
    hover(browser, browser.find_element("css selector", '.matrix rect[data-i="3"][data-j="0"]'))
    assert browser.find_element("id", "readout").text.endswith("dropped: key 0, the sink")
    box.click()
    assert not browser.find_element("id", "drop-sink").is_selected()
    assert "key 0 dropped" not in _texts(browser, "svg text")[0]
    assert _fill(browser, '.matrix rect[data-i="3"][data-j="0"]') != "url(#hatch)"
    assert browser.get_log("browser") == []


@pytest.mark.parametrize(
    "args", [["--heads", "2", "--mask", "causal"], ["--model", GOLDEN / "gpt2", "--contrib", "norm"]]
)
def test_every_view_draws_on_a_page_with_the_three(browser, tmp_path, args):
    from selenium.webdriver.support.ui import Select

    path = tmp_path / "p.html"
    assert attn("view", TEXT, *args, "--drop-sink", "--scale", "log", "-o", path).exit_code == 0
    load(browser, path)
    for scale in ("linear", "sqrt"):
        Select(browser.find_element("id", "scale")).select_by_value(scale)
        for tab in browser.find_elements("css selector", "nav button"):
            tab.click()
            assert count(browser, "#stage svg") == 1
    assert browser.get_log("browser") == []


def test_an_encoder_decoders_page_draws_each_parts_maps_and_sink(browser, tmp_path):
    # c switches the part: the Contributions view draws that part's maps (cross: target rows × source columns,
    # its residual's share in the readout), the sink switch that part's weights without key 0; every view draws
    from selenium.webdriver.common.keys import Keys

    path = tmp_path / "bart.html"
    args = [TEXT, "--model", GOLDEN / "bart", "--context", "the source text", "--contrib", "alti", "--drop-sink"]
    assert attn("view", *args, "--part", "cross", "-o", path).exit_code == 0
    doc = json.loads(attn("view", *args, "--part", "cross", "-f", "json").stdout)
    load(browser, path)
    _open(browser, "contrib")
    for part in ("cross", "decoder", "encoder"):
        assert browser.execute_script("return document.body.dataset.part") == part
        entry = doc["parts"][part]
        m, n = len(entry["tokens"]), len(entry["context_tokens"] or entry["tokens"])
        assert count(browser, ".contrib rect[data-i]") == 2 * m * n  # the layer's map and its rollout
        assert _texts(browser, ".contrib-title")[0].startswith(f"{part}: ")
        maps = maps_of(doc, part)[-1]
        hover(browser, browser.find_elements("css selector", '.contrib[data-map="0"] rect[data-i="1"][data-j="0"]')[0])
        readout = browser.find_element("id", "readout").text
        assert f": {float(maps['map'][1, 0])!r} (exact, float64)" in readout, readout
        assert ("the residual carries" in readout) == (part == "cross")
        for tab in browser.find_elements("css selector", "nav button"):
            tab.click()
            assert count(browser, "#stage svg") == 1
        assert browser.find_element("id", "drop-sink").is_selected()
        _open(browser, "contrib")
        browser.find_element("css selector", "body").send_keys("c")
    browser.find_element("css selector", "body").send_keys(Keys.ESCAPE)
    assert browser.get_log("browser") == []
