"""`attn heads --lines` on a tiny GPT-2 whose heads were set by hand (tools/known_heads.py): it finds them.

The folder is committed (transformers checked it when it was built: every head puts at least 0.99 where it
was built to look); here attn must find the same heads over a corpus, each scoring high on its own detector
and low on every other, and the heads built to do none of it low on all.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from rich.console import Console

from attncli.core.statistics import HINTS
from attncli.render.heads import corpus_view
from tests.conftest import ROOT, attn
from tests.tolerance import assert_within


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


known_heads, make_corpus = _tool("known_heads"), _tool("make_corpus")

FOLDER = ROOT / "tests" / "models" / "known" / "gpt2-known-heads"
DETECTORS = ("previous-token", "duplicate-token", "induction", "first-token")


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> dict[tuple[int, int], dict]:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(make_corpus.corpus(200)) + "\n", encoding="utf-8")
    r = attn("heads", "--model", FOLDER, "--lines", "--file", path, "--workers", "1", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["texts"] >= 190 and doc["texts"] + doc["skipped"] == 200  # a few lines are longer than 128 tokens
    return {(row["layer"], row["head"]): row for row in doc["rows"]}


@pytest.mark.parametrize(("where", "what"), known_heads.HEADS.items())
def test_each_built_head_is_found_and_scores_low_on_the_other_detectors(rows, where, what):
    row = rows[where]
    if what in DETECTORS:
        assert row["label"] == what and row[what] >= 0.99
    else:
        assert row["label"] == ""
    for other in DETECTORS:
        if other != what:
            assert row[other] <= 0.1, other


def test_the_heads_that_detect_nothing_do_what_they_were_built_to(rows):
    itself = next(k for k, v in known_heads.HEADS.items() if v == "itself")
    uniform = next(k for k, v in known_heads.HEADS.items() if v == "uniform")
    assert rows[itself]["diagonal"] >= 0.99 and rows[itself]["entropy"] <= 0.01
    assert rows[uniform]["entropy"] >= 3.0  # 1/(i+1) on each of i+1 keys: log2(i+1) bits a row


def test_the_committed_folder_is_what_the_script_builds(tmp_path):
    from safetensors.numpy import load_file

    built = known_heads.build(tmp_path / "again")
    for name in ("config.json", "tokenizer.json"):
        assert (built / name).read_bytes() == (FOLDER / name).read_bytes(), name
    again, shipped = load_file(built / "model.safetensors"), load_file(FOLDER / "model.safetensors")
    assert again.keys() == shipped.keys()
    for name, tensor in shipped.items():  # float64 codes (BLAS products: their last bits vary by CPU) cast to
        assert_within(again[name], tensor, np.spacing(np.abs(tensor)), name)  # float32: one ulp apart at most


def test_every_cell_of_the_grid_names_its_detector_weak_or_clear(rows):
    doc = {"model": "m", "weights": "w", "corpus": "c", "texts": 1, "tokens": 1, "skipped": 0, "partial": False}
    doc |= {"n_layer": 2, "n_head": 3, "label_score": 0.4, "rows": list(rows.values())}
    console = Console(width=80, color_system=None, record=True)
    console.print(corpus_view(doc))
    lines = console.export_text().splitlines()
    for (layer, head), row in rows.items():
        assert row["detector"] == max(DETECTORS, key=lambda d: row[d])  # under 0.4 as well as over
        assert row["label"] == (row["detector"] if row[row["detector"]] >= 0.4 else "")
        named = lines[lines.index(next(x for x in lines if x.strip().startswith(f"L{layer} "))) + 1]
        assert named.split()[head] == HINTS[row["detector"]], (layer, head, named)
