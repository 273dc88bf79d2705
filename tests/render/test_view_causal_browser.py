"""The page's patch, dla and knockout views (attn view --patch, --dla, --knockout) in headless Chromium: each tab
is reachable, each view draws the numbers of the page's document (those of attn patch, dla and knockout -f json,
tests/io/test_view_causal.py), and its readout names a cell's number. Skipped where no browser can be had."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import attn
from tests.render.test_view_browser import _open, _texts, _to, _values, _view, chromium, count, hover, load

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
CLEAN, CORRUPT = "time flies like an arrow", "time fries like an arrow"
M = ["--target", "ow", "--contrast", "X"]


@pytest.fixture(scope="module")
def browser():
    with chromium(1200, 900) as driver:
        yield driver


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The golden llama's page with the three views, patching each position's stream; and with each head."""
    folder = tmp_path_factory.mktemp("causal")
    every = ["--dla", *M, "--knockout", "--from", "flies", "--window", "1"]
    runs = {
        "resid": [CLEAN, "--model", GOLDEN / "llama", "--patch", "--corrupt", CORRUPT, *every],
        "heads": [CLEAN, "--model", GOLDEN / "llama", "--patch", "--corrupt", CORRUPT, "--what", "heads", *M],
    }
    out = {}
    for name, args in runs.items():
        path = folder / f"{name}.html"
        assert attn("view", *args, "-o", path).exit_code == 0
        out[name] = (path, json.loads(attn("view", *args, "-f", "json").stdout))
    return out


def test_the_three_tabs_follow_the_others(browser, pages):
    load(browser, pages["resid"][0])
    tabs = [b.text for b in browser.find_elements("css selector", "nav button")]
    k = len(tabs)  # then the Text view, last of all
    assert tabs[-4:] == [f"{k - 3} Patch", f"{k - 2} DLA", f"{k - 1} Knockout", f"{k} Text"]
    load(browser, pages["heads"][0])
    assert [b.text for b in browser.find_elements("css selector", "nav button")][-2].endswith(" Patch")
    assert count(browser, "#tab-dla") == 0 and count(browser, "#tab-knockout") == 0


@pytest.mark.parametrize("name", ["resid", "heads"])
def test_the_patch_view_draws_every_score_in_a_grid_and_names_the_strongest(browser, pages, name):
    from selenium.webdriver.common.keys import Keys

    path, doc = pages[name]
    load(browser, path)
    _open(browser, "patch")
    p = doc["patch"]
    axis, n = p["axis"], (p["n_head"] if p["axis"] == "head" else len(p["tokens"]))
    cells = {(r["layer"], r[axis]): r["score"] for r in p["rows"]}
    grid = [cells[(l, j)] for l in range(p["n_layer"]) for j in range(n)]
    assert _values(browser, ".pvalue") == grid
    assert all(_to(t, s, 2) for t, s in zip(_texts(browser, ".pvalue"), grid, strict=True))
    text = " ".join(_texts(browser, "svg text"))
    for k, i in enumerate(p["strongest"], 1):
        r = p["rows"][i]
        assert f"{k}. L{r['layer']}" in text and f"score\u00a0{r['score']:.3f}" in text
    g = browser.find_element("css selector", "g.patch")
    browser.execute_script("arguments[0].focus()", g)
    g.send_keys(Keys.ARROW_DOWN, Keys.ARROW_RIGHT)  # layer 1, column 1
    said = browser.find_element("id", "readout").text
    assert said.startswith("layer 1, " + ("head 1" if axis == "head" else "position 1 "))
    assert _to(said.split(" score ")[1].split(" ")[0], cells[(1, 1)], 4)
    assert browser.get_log("browser") == []


def test_the_dla_view_ranks_the_parts_and_states_their_sum(browser, pages):
    path, doc = pages["resid"]
    load(browser, path)
    _open(browser, "dla")
    a = doc["dla"]
    shown = [a["rows"][i]["dla"] for i in a["ranked"][:20]]
    assert _values(browser, ".dvalue") == shown
    assert all(_to(t.removeprefix("dla "), v, 4) for t, v in zip(_texts(browser, ".dvalue"), shown, strict=True))
    text = " ".join(_texts(browser, "svg text"))
    assert f"the {len(a['rows'])} parts sum to {a['sum']:.6f}; m = {a['m']:.6f}" in text
    hover(browser, browser.find_elements("css selector", ".dla-rank rect")[0])
    said = browser.find_element("id", "readout").text
    assert said.endswith(f"(rank 1 of {len(a['rows'])} by |dla|)")
    assert browser.get_log("browser") == []


def test_the_knockout_view_draws_a_bar_per_window(browser, pages):
    path, doc = pages["resid"]
    load(browser, path)
    _open(browser, "knockout")
    k = doc["knockout"]
    assert count(browser, ".knock-row") == len(k["rows"])
    assert _values(browser, ".kvalue") == [r["delta_prob"] for r in k["rows"]]
    for t, r in zip(_texts(browser, ".kvalue"), k["rows"], strict=True):
        change, _, p = t.removeprefix("relative change ").partition(" · probability ")
        assert _to(change, r["delta_prob"], 4) and _to(p, r["prob"], 4)
    hover(browser, browser.find_elements("css selector", ".knock-row rect")[-1])
    last = k["rows"][-1]
    said = browser.find_element("id", "readout").text
    assert said.startswith(f"layers {last['first_layer']}–{last['last_layer']} blocked: probability of ")
    assert browser.get_log("browser") == []


@pytest.mark.parametrize(
    "args",
    [
        ["patch", CLEAN, "--corrupt", CORRUPT, "--target", "ow"],
        ["dla", CLEAN, *M],
        ["knockout", CLEAN, "--from", "0-2"],
    ],
)
def test_a_causal_commands_page_opens_on_its_view(browser, tmp_path, args):
    path = tmp_path / "page.html"
    assert attn(*args, "--model", GOLDEN / "llama", "-o", path).exit_code == 0
    load(browser, path)
    assert _view(browser) == args[0]
    assert browser.get_log("browser") == []


def test_every_view_at_once_numbers_the_first_nine_and_reaches_the_tenth_by_the_arrows(browser, tmp_path):
    from selenium.webdriver.common.keys import Keys

    path = tmp_path / "every.html"
    args = ["--generate", "2", "--lens", "--ablate", "--patch", "--corrupt", CORRUPT, "--dla", *M]
    assert (
        attn("view", CLEAN, "--model", GOLDEN / "llama", *args, "--knockout", "--from", "0", "-o", path).exit_code == 0
    )
    load(browser, path)
    tabs = [b.text for b in browser.find_elements("css selector", "nav button")]
    assert tabs[8:] == ["9 DLA", "Knockout", "Text"] and len(tabs) == 11
    browser.find_element("tag name", "body").send_keys("9")
    assert _view(browser) == "dla"
    browser.find_element("id", "tab-dla").send_keys(Keys.ARROW_RIGHT)
    assert _view(browser) == "knockout"
    assert browser.get_log("browser") == []
