"""An encoder–decoder's page data (schema attncli.view/4 with "parts"): every part, every layer and head, the
weights `attn show --part` gives, and the commands that print them exactly."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pytest

from attncli.core.parts import PARTS
from attncli.errors import DataError
from attncli.io.packing import SCALE
from attncli.io.view import part_entry, result_view, weights_of
from attncli.pipeline.run import run
from attncli.render.html_view import page
from tests.conftest import attn
from tests.io.test_view import embedded

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
SOURCE, TARGET = "the cat sat on the mat", "le chat est assis sur le tapis"


def view_json(*args) -> dict:
    r = attn("view", *args, "-f", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def show_json(*args) -> dict:
    r = attn("show", *args, "-f", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", ["bart", "t5", "marian"])
def test_every_part_every_layer_and_head_is_what_attn_show_gives(name):
    folder = GOLDEN / name
    doc = view_json(TARGET, "--model", folder, "--context", SOURCE)
    assert doc["schema"] == "attncli.view/4" and list(doc["parts"]) == list(PARTS)
    assert doc["part"] == "cross" and "layers" not in doc and "masks" not in doc  # they are the parts'
    assert (doc["text"], doc["context"]) == (TARGET, SOURCE)
    for part, entry in doc["parts"].items():
        drawn = weights_of(entry) * SCALE
        for layer in range(len(entry["layers"])):
            shown = show_json(TARGET, "--model", folder, "--context", SOURCE, "--part", part, "--layer", layer)
            assert entry["tokens"] == shown["tokens"]
            assert entry["context_tokens"] == shown["context_tokens"]  # null but for cross: the source's
            exact = np.array([h["weights"] for h in shown["heads"]])  # [h, m, n]
            assert drawn[layer].round().tolist() == np.rint(exact * SCALE).tolist()
    cross, decoder, encoder = (doc["parts"][p] for p in ("cross", "decoder", "encoder"))
    assert cross["context_tokens"] == encoder["tokens"] and cross["tokens"] == decoder["tokens"] == doc["tokens"]
    assert (cross["queries"], cross["keys"]) == ("target", "source")
    n = len(decoder["tokens"])
    assert decoder["masks"] == [["0" * (i + 1) + "1" * (n - i - 1) for i in range(n)]]  # causal, one for all heads
    assert cross["masks"] == encoder["masks"] == []
    assert all(h["label"] == "" for layer in cross["layers"] for h in layer["heads"])  # no pattern of square heads


def test_it_opens_at_the_part_layer_and_head_asked_for():
    doc = view_json(TARGET, "--model", GOLDEN / "t5", "--context", SOURCE, "--part", "decoder", "--layer", "0")
    assert (doc["part"], doc["layer"], doc["head"]) == ("decoder", 0, 0)
    doc = view_json(TARGET, "--model", GOLDEN / "t5", "--context", SOURCE, "--head", "2")
    assert (doc["part"], doc["layer"], doc["head"]) == ("cross", 1, 2)
    assert "part" not in doc["config"] and doc["config"]["source"] == SOURCE  # the page switches the part


def test_without_a_source_the_page_has_the_encoder_only():
    doc = view_json(SOURCE, "--model", GOLDEN / "bart", "--part", "encoder")
    assert list(doc["parts"]) == ["encoder"] and doc["context"] is None
    r = attn("view", TARGET, "--model", GOLDEN / "bart")
    assert r.exit_code != 0 and "give it with --context SOURCE" in r.stderr


def test_an_encoder_with_context_is_a_sentence_pair_as_attn_show_gives_it():
    doc = view_json(TARGET, "--model", GOLDEN / "bert", "--context", SOURCE)
    shown = show_json(TARGET, "--model", GOLDEN / "bert", "--context", SOURCE, "--layer", "0")
    assert "parts" not in doc and doc["context"] == SOURCE and doc["context_tokens"] is None  # one self-attention
    assert doc["tokens"] == shown["tokens"] and doc["second_segment"] == shown["second_segment"]
    assert doc["special"] == shown["special"] and doc["labels"][doc["second_segment"]].startswith("‖")
    drawn = weights_of(doc)[0] * SCALE
    assert drawn.round().tolist() == np.rint(np.array([h["weights"] for h in shown["heads"]]) * SCALE).tolist()
    assert "--context" in doc["exact"]["command"]  # the exact weights are the pair's too


def _jq(doc_text: str, path: str) -> float:
    """`jq path` in Python, for the two paths a page gives: one head's weight, and the heads' mean."""
    found = re.search(r"weights\[(\d+)\]\[(\d+)\]", path)
    assert found is not None, path
    i, j = int(found[1]), int(found[2])
    heads = json.loads(doc_text)["heads"]
    if path == f"[.heads[].weights[{i}][{j}]] | add / length":
        return sum(h["weights"][i][j] for h in heads) / len(heads)
    assert path == f".heads[0].weights[{i}][{j}]", path
    return heads[0]["weights"][i][j]


def test_the_exact_commands_print_the_weights_the_page_rounds(monkeypatch):
    monkeypatch.chdir(GOLDEN)  # the folder as the user named it: relative to where they are
    doc = view_json(TARGET, "--model", "marian", "--context", SOURCE)
    fill = {"part": "decoder", "layer": 1, "head": 3, "query": 4, "key": 2}
    command = shlex.split(doc["exact"]["command"].format(**fill))
    assert command[:2] == ["attn", "show"] and command[-2:] == ["-f", "json"]
    r = attn(*command[1:])
    assert r.exit_code == 0, r.output
    exact = _jq(r.stdout, doc["exact"]["path"].format(**fill))
    drawn = weights_of(doc["parts"]["decoder"])[1] * SCALE  # [h, m, n]
    assert round(exact * SCALE) == round(drawn[3, 4, 2])
    mean = shlex.split(doc["exact"]["mean_command"].format(**fill))
    assert "--head" not in mean
    r = attn(*mean[1:])
    exact = _jq(r.stdout, doc["exact"]["mean_path"].format(**fill))
    assert abs(exact * SCALE - drawn[:, 4, 2].mean()) <= 0.5  # each drawn one is rounded


def test_the_mean_path_is_jq_and_gives_the_mean():
    """The jq program the page shows for the mean, run by jq itself where jq is installed."""
    jq = subprocess.run(["which", "jq"], capture_output=True, text=True).stdout.strip()
    if not jq:
        pytest.skip("jq is not installed")
    doc = view_json(TARGET, "--model", GOLDEN / "bart", "--context", SOURCE)
    shown = attn("show", TARGET, "--model", GOLDEN / "bart", "--context", SOURCE, "-f", "json").stdout
    path = doc["exact"]["mean_path"].format(query=3, key=1)
    out = subprocess.run([jq, path], input=shown, capture_output=True, text=True, check=True).stdout
    weights = [h["weights"][3][1] for h in json.loads(shown)["heads"]]
    assert float(out) == pytest.approx(sum(weights) / len(weights), abs=1e-15)


def test_save_html_of_show_steps_and_heads_is_the_interactive_page(tmp_path):
    args = ("--model", GOLDEN / "bart", "--context", SOURCE)
    for command, part in (("show", "cross"), ("steps", "cross"), ("heads", "decoder")):
        out = tmp_path / f"{command}.html"
        more = ("--part", "decoder") if command == "heads" else ()
        r = attn(command, TARGET, *args, *more, "--save-html", out)
        assert r.exit_code == 0, r.output
        doc = embedded(out.read_text(encoding="utf-8"))
        assert doc["command"] == f"attn {command}" and doc["part"] == part and list(doc["parts"]) == list(PARTS)
    out = tmp_path / "encoder.html"  # the encoder's part of a pair still has the target's parts
    assert attn("show", TARGET, *args, "--part", "encoder", "--save-html", out).exit_code == 0
    doc = embedded(out.read_text(encoding="utf-8"))
    assert doc["part"] == "encoder" and list(doc["parts"]) == list(PARTS)


def test_a_text_run_of_as_many_context_tokens_as_queries_has_no_labels():
    doc = result_view(run("time flies", context="an arrow"), "attn view")
    assert weights_of(doc).shape == (1, 1, 2, 2)  # square, and still cross-attention
    assert doc["layers"][0]["heads"][0]["label"] == ""


def test_a_20_by_20_pair_of_6_layers_and_8_heads_stays_under_250_kb():
    """Three parts of 6 × 8 heads of 20 × 20 weights: 57,600 drawn weights, each a few bytes."""
    rng = np.random.default_rng(0)

    def weights(masked=None):  # -> [6, 8, 20, 20]
        scores = rng.normal(size=(6, 8, 20, 20)) * 2
        if masked is not None:
            scores = np.where(masked, -np.inf, scores)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    causal = np.triu(np.ones((20, 20), dtype=bool), 1)
    target, source = [f"t{i}" for i in range(20)], [f"s{i}" for i in range(20)]
    parts = {
        "cross": part_entry("cross", target, source, weights(), None),
        "decoder": part_entry("decoder", target, None, weights(causal), causal),
        "encoder": part_entry("encoder", source, None, weights(), None),
    }
    doc = result_view(run(" ".join(target), context=" ".join(source)), "attn view")
    doc = {k: v for k, v in doc.items() if k not in ("layers", "masks")} | {"parts": parts, "steps": None}
    size = len(page(doc).encode())  # 164 KB of JSON, 202 KB with the page around it
    assert size < 250_000, size


def test_an_encoder_decoders_page_is_priced_with_its_run(monkeypatch):
    """Hostile round IV, 7, for the pages of three parts: a budget the run passes and the page of the encoder's,
    the decoder's and the cross-attention's every layer does not is refused by the page, in one line."""
    from attncli import api
    from attncli.models import load_model
    from attncli.models.runs.page import PAGE_CELL_BYTES, STATS_CELL_BYTES

    model = load_model(GOLDEN / "bart")
    shown = api.show(TARGET, model=model, context=SOURCE)
    n = max(len(shown.result.tokens), len(shown.result.context_tokens))
    run_bytes = model.weights.least() + model.n_layer * (3 * model.n_head * n * n + 8 * n * model.d_model) * 4
    drawn = model.n_layer * model.n_head + 2 * model.hp["n_dec_layer"] * model.hp["n_dec_head"]
    page = n * n * (drawn * PAGE_CELL_BYTES + model.n_head * STATS_CELL_BYTES)
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(run_bytes + page // 2))
    with pytest.raises(DataError, match=rf"^the page of .*bart on {n} tokens needs about .*ATTN_MAX_MEMORY"):
        api.view(TARGET, model=model, context=SOURCE)
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(run_bytes + page))
    assert set(api.view(TARGET, model=model, context=SOURCE).doc["parts"]) == set(PARTS)
