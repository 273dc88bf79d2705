"""The Python API: every public name resolves, `import attncli` stays light, and each function returns what its
command writes for the same options (`to_json()` byte for byte `-f json`), with the command line's checks."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import attncli
from attncli.errors import ConfigError, DataError
from tests.conftest import ROOT, attn

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
TEXT = "time flies like an arrow"


def test_every_public_name_resolves():
    assert attncli.__all__ and len(set(attncli.__all__)) == len(attncli.__all__)
    for name in attncli.__all__:
        assert getattr(attncli, name) is not None, name
    namespace: dict = {}
    exec("from attncli import *", namespace)
    assert set(attncli.__all__) <= set(namespace)
    assert attncli.VARIANTS["scaled"].name == "scaled"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        attncli.nothing  # noqa: B018


def test_import_attncli_loads_no_numpy():
    code = "import sys, attncli; print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'rich', 'typer')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


GPT2, BART = str(GOLDEN / "gpt2"), str(GOLDEN / "bart")
# (API function, its keywords): the command line of the same run has the keywords as its long options
SAME = {
    "show": ("show", {}),
    "show heads": ("show", {"heads": 2, "mask": "causal"}),
    "show variant": ("show", {"variant": "additive", "d_a": 4, "seed": 3}),
    "show masks": ("show", {"mask": ["window:1", "topk:2"], "positional": "sinusoidal", "tokenizer": "char"}),
    "show context": ("show", {"context": "fruit flies", "heads": 2, "head": 1}),
    "show stats": ("show", {"stats": True, "precision": 3}),
    "show no weights": ("show", {"no_weights": True, "dtype": "float32"}),
    "show model": ("show", {"model": GPT2, "layer": 0}),
    "show part": ("show", {"model": BART, "context": "the source", "part": "decoder"}),
    "rollout": ("rollout", {"model": GPT2}),
    "steps": ("steps", {"variant": "gated", "heads": 2, "dk": 4, "dv": 2}),
    "steps model": ("steps", {"model": str(GOLDEN / "llama"), "head": 1}),
    "view": ("view", {"heads": 4, "head": 2}),
    "view model": ("view", {"model": str(GOLDEN / "bert")}),
    "heads": ("heads", {"model": GPT2, "stat": "max"}),
    "tokens": ("tokens", {"tokenizer": "bpe"}),
    "compare": ("compare", {"tokenizers": "char,word", "variants": "scaled,dot"}),
    "variants": ("variants", {}),
    "catalog": ("catalog", {"path": str(GOLDEN)}),
}


def options(keywords: dict) -> list[str]:
    """The command line's options of the API's keywords: `--name value`, `--flag` for True, a list joined by ","."""
    argv = []
    for name, value in keywords.items():
        flag = "--" + name.replace("_", "-")
        argv += [flag] if value is True else [flag, ",".join(value) if isinstance(value, list) else str(value)]
    return argv


@pytest.mark.parametrize("name", SAME)
def test_to_json_is_what_the_command_prints(name):
    function, keywords = SAME[name]
    command, argv = ("show", ["--rollout"]) if function == "rollout" else (function, [])
    command = "models" if function == "catalog" else command
    text = () if function in ("variants", "catalog") else (TEXT,)
    printed = attn(command, *text, *options(keywords), *argv, "-f", "json")
    assert printed.exit_code == 0, printed.output
    assert getattr(attncli, function)(*text, **keywords).to_json() == printed.stdout


def test_a_run_has_its_tokens_weights_and_outputs():
    r = attncli.show(TEXT, heads=2, context="fruit flies like a banana")
    assert r.tokens == TEXT.split() and r.key_tokens == ["fruit", "flies", "like", "a", "banana"]
    assert r.weights.shape == r.scores.shape == (2, 5, 5) and r.outputs.shape == (5, 16)
    assert r.head_outputs.shape == (2, 5, 8)
    np.testing.assert_allclose(r.weights.sum(axis=-1), 1.0, rtol=0, atol=5 * np.finfo(np.float64).eps)
    record = json.loads(r.to_json())
    assert record["heads"][1]["weights"] == r.weights[1].tolist()  # JSON floats are the shortest exact repr
    assert attncli.show(TEXT, no_weights=True).weights is None


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: attncli.show(TEXT, heads=3), ConfigError, "--dim 16 is not divisible by --heads 3"),
        (lambda: attncli.show(TEXT, variant="nope"), ConfigError, "nope"),
        (lambda: attncli.show(TEXT, rank=2), ConfigError, "--rank is an option of -v linformer"),
        (lambda: attncli.show(TEXT, stats=True, no_weights=True), ConfigError, "--stats describes the weights"),
        (lambda: attncli.show(TEXT, layer=1), ConfigError, "layer= needs model="),
        (lambda: attncli.show(TEXT, model=GPT2, heads=2), ConfigError, "drop heads="),
        (lambda: attncli.show(TEXT, model=GPT2, layer=9), attncli.AttnError, "layer 9 is out of range"),
        (lambda: attncli.show(""), DataError, "empty"),
        (lambda: attncli.steps(TEXT, query=5), ConfigError, "--query 5 is out of range"),
        (lambda: attncli.heads(TEXT, model=GPT2, stat="monotonic"), ConfigError, "--stat monotonic"),
        (lambda: attncli.tokens(""), DataError, "empty text"),
        (lambda: attncli.catalog(path=["no/such/folder"]), DataError, "--path no/such/folder: no such folder"),
        (lambda: attncli.show(TEXT).written("parquet"), ConfigError, "-f parquet is not available"),
        (lambda: attncli.show(TEXT, query=9), ConfigError, "--query 9 is out of range"),
        (lambda: attncli.show(TEXT, precision=18), ConfigError, "--precision must be between 0 and 17"),
    ],
)
def test_errors_are_the_command_lines(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


def test_a_loaded_model_serves_many_calls():
    model = attncli.load_model(GPT2)
    by_path = attncli.show(TEXT, model=GPT2)
    np.testing.assert_array_equal(attncli.show(TEXT, model=model).weights, by_path.weights)
    assert attncli.heads(TEXT, model=model).rows == attncli.heads(TEXT, model=GPT2).rows


def test_the_repl_shows_the_table():
    text = repr(attncli.show(TEXT, heads=2))
    assert "head 0" in text and "head 1" in text and "\x1b" not in text
    assert all(token in text for token in TEXT.split())
    assert "time" in repr(attncli.tokens(TEXT))


def _frames(markup: str) -> list[str]:
    """The pages inside a notebook output's iframes (srcdoc, unescaped)."""
    return [html.unescape(page) for page in re.findall(r'<iframe srcdoc="([^"]*)"', markup)]


@pytest.mark.parametrize(
    "output",
    [
        lambda: attncli.show(TEXT, heads=2),
        lambda: attncli.steps(TEXT),
        lambda: attncli.view(TEXT),
        lambda: attncli.heads(TEXT, model=GPT2),
    ],
)
def test_a_notebook_shows_the_page_in_a_sandboxed_frame(output):
    out = output()
    markup = out._repr_html_()
    assert markup.count("<iframe") == 1 and 'sandbox="allow-scripts"' in markup
    (page,) = _frames(markup)
    assert page == out.page() and page.startswith("<!DOCTYPE html>") and "attncli.view/4" in page


def test_without_a_page_a_notebook_shows_the_table():
    assert attncli.tokens(TEXT)._repr_html_() is None
    assert attncli.show(TEXT, no_weights=True)._repr_html_() is None


def test_save_writes_what_o_writes(tmp_path):
    shown = attncli.show(TEXT, heads=2)
    shown.save(str(tmp_path / "api.npz"))
    assert attn("show", TEXT, "--heads", "2", "-o", tmp_path / "cli.npz").exit_code == 0
    api, cli = np.load(tmp_path / "api.npz"), np.load(tmp_path / "cli.npz")
    assert sorted(api) == sorted(cli) and all(np.array_equal(api[k], cli[k]) for k in api)
    page = attncli.view(TEXT, output=str(tmp_path / "page.html"))
    assert (tmp_path / "page.html").read_text(encoding="utf-8") == page.html
    assert attn("view", TEXT, "-o", tmp_path / "cli.html").exit_code == 0
    assert (tmp_path / "cli.html").read_text(encoding="utf-8") == page.html


def test_a_corpus_is_what_heads_lines_prints():
    path = ROOT / "sample_texts" / "ambiguity.txt"
    printed = attn("heads", "--lines", "--file", path, "--model", GPT2, "--workers", "1", "-f", "json")
    assert printed.exit_code == 0, printed.output
    with open(path, encoding="utf-8") as lines:
        stats = attncli.corpus(lines, model=GPT2, name=str(path))
    assert stats.to_json() == printed.stdout and stats.stopped is None


def test_show_lines_streams_what_show_lines_prints(tmp_path):
    path = ROOT / "sample_texts" / "ambiguity.txt"
    printed = attn("show", "--lines", "--file", path, "--heads", "2", "--stats")
    assert printed.exit_code == 0, printed.output
    with open(path, encoding="utf-8") as lines:
        shown = attncli.show_lines(lines, heads=2, stats=True, name=str(path))
        assert shown.written("jsonl").decode("utf-8") == printed.stdout
    numbered = list(attncli.show_lines(["time flies", " ", "like an arrow"], heads=2))
    assert [(n, r.tokens.strings) for n, r in numbered] == [(1, ("time", "flies")), (3, ("like", "an", "arrow"))]
    with pytest.raises(DataError, match=r"^the lines line 2: the text has about 5 word tokens"):
        list(attncli.show_lines(["a b", "a b c d e"], max_tokens=3))
    with pytest.raises(ConfigError, match="unexpected keyword 'rollout'"):
        attncli.show_lines(["a"], rollout=True)
    with pytest.raises(DataError, match="every line of the lines is blank"):
        list(attncli.show_lines(["", "  "]))


def test_a_stopped_corpus_keeps_what_it_read():
    def lines():  # a reader's Ctrl-C after the first window of lines
        yield from ["the cat sat on the mat"] * 512
        raise KeyboardInterrupt

    read = []
    stats = attncli.corpus(lines(), model=GPT2, progress=read.append)
    assert isinstance(stats.stopped, KeyboardInterrupt) and stats.doc["partial"] and read[-1] == 512
    assert stats.doc["texts"] == 512
    with pytest.raises(KeyboardInterrupt):  # with no stops, the interrupt goes through
        attncli.corpus(lines(), model=GPT2, stops=())


def test_compute_takes_arrays_and_writes_what_attn_compute_writes():
    given = json.loads((ROOT / "docs" / "two_by_two.json").read_text(encoding="utf-8"))
    printed = attn("compute", "--input", ROOT / "docs" / "two_by_two.json", "-f", "json", "-v", "dot")
    assert printed.exit_code == 0, printed.output
    computed = attncli.compute(np.array(given["q"]), given["k"], given["v"], variant="dot")
    assert computed.to_json() == printed.stdout
    assert computed.weights.shape == (1, 2, 2) and computed.tokens == ["0", "1"]
    with pytest.raises(DataError, match=re.escape("k has shape [2]: expected a 2-D matrix")):
        attncli.compute([[1.0, 2.0]], [1.0, 2.0])
    with pytest.raises(DataError, match="values must be finite"):
        attncli.compute([[1.0, float("nan")]])
