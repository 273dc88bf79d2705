"""The page's data (schema attncli.view/4): what `attn view -f json` writes and the page embeds, once."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from attncli.api.page import model_document as model_view
from attncli.core.stats import head_stats, label_heads
from attncli.errors import DataError
from attncli.io.packing import SCALE, layers_record
from attncli.io.view import result_view, steps_of, weights_of
from attncli.models import forward, load_model
from attncli.models.runs.run import heads_document, model_result
from attncli.pipeline.config import RunConfig
from attncli.pipeline.run import run
from attncli.render.html_view import page
from tests.conftest import attn
from tests.tolerance import U64, gamma


def embedded(html: str) -> dict:
    """The JSON document inside a page."""
    found = re.search(r'<script type="application/json" id="attn-data">(.*?)</script>', html, re.S)
    assert found is not None
    return json.loads(found.group(1))


@pytest.fixture(scope="module")
def gpt2_dir(gpt2) -> str:  # the session's tiny GPT-2 (tests/conftest.py), as the path a user types
    return str(gpt2.path)


@pytest.fixture(scope="module")
def bert_dir(bert) -> str:  # the session's tiny BERT, as the path a user types
    return str(bert.path)


def test_a_text_run_holds_its_weights_rounded_and_its_steps_exactly():
    result = run("time flies like an arrow", RunConfig(heads=2, mask=("causal",)), trace=True)
    doc = result_view(result, "attn view")
    assert doc["schema"] == "attncli.view/4" and doc["tokens"] == list(result.tokens.strings)
    assert [h["head"] for h in doc["layers"][0]["heads"]] == [0, 1]
    assert doc["scale"] == SCALE == 255 and "deflate" in doc["encoding"]["weights"]
    assert "1/255" in doc["encoding"]["precision"]  # the document says what it keeps
    drawn = weights_of(doc)[0]  # [h, m, n]
    assert np.abs(drawn - result.weights).max() <= 0.5 / SCALE + 1e-12  # rounded to the nearest 1/255
    for head in doc["layers"][0]["heads"]:
        assert doc["masks"][head["mask"]] == ["01111", "00111", "00011", "00001", "00000"]
    steps = steps_of(doc)
    assert (steps["weights"] == result.weights).all()  # exact: the same floats
    assert steps["masked_scores"][0, 0, 1] == -np.inf  # masked, as null in attn steps -f json
    assert "float64" in doc["encoding"]["steps"] and "deflate" in doc["encoding"]["steps"]


def test_the_steps_are_those_of_attn_steps_json():
    view = json.loads(attn("view", "time flies like", "--heads", "2", "-f", "json").stdout)
    steps = json.loads(attn("steps", "time flies like", "--heads", "2", "-f", "json").stdout)
    assert view["config"] == steps["config"]
    assert [{k: v for k, v in s.items() if k != "packed"} for s in view["steps"]] == [
        {k: v for k, v in s.items() if k != "array"} for s in steps["steps"]
    ]  # the same stages, in the same words
    for name, packed_array in steps_of(view).items():  # and the same numbers, exactly (null is −∞)
        record = next(s for s in steps["steps"] if s["name"] == name)
        exact = np.array(json.loads(json.dumps(record["array"]).replace("null", "-Infinity")), dtype=float)
        assert np.array_equal(packed_array, exact)


def test_head_labels_are_the_ones_attn_heads_gives(gpt2_dir):
    model = load_model(gpt2_dir)
    text = "time flies like an arrow"
    doc = model_view(model, model_result(model, text, 1), gpt2_dir, "attn view")
    rows = heads_document(model, text)["rows"]
    labels = [[h["label"] for h in layer["heads"]] for layer in doc["layers"]]
    assert labels == [[r["label"] for r in rows if r["layer"] == l] for l in range(model.n_layer)]
    assert doc["layer"] == 1 and doc["head"] == doc["opened"]["head"] and doc["steps"] is None
    weights = np.stack(forward(model, model_result(model, text).tokens.ids).weights)
    assert (weights_of(doc)[1, 0] * SCALE).round().tolist() == np.rint(weights[1, 0] * SCALE).tolist()
    assert len(doc["masks"]) == 1  # GPT-2's causal mask, once for every head
    assert doc["exact"]["command"].startswith("attn show 'time flies like an arrow' --model ")


def test_a_decoder_page_without_head_opens_on_its_least_sink_bound_head_and_says_so(gpt2_dir, bert_dir):
    """Issue 34, 17: the page opened on the last layer's head 0, every row on the sink. Without --head a decoder's
    page opens, in its layer, on the head whose queries put the least mean weight on token 0 (α_0), and names the
    rule; a given --layer or --head wins, and an encoder's page opens where it did."""
    model, text = load_model(gpt2_dir), "time flies like an arrow"
    weights = np.stack(forward(model, model_result(model, text).tokens.ids).weights).astype(float)  # [L, h, n, n]
    n = weights.shape[2]
    for layer in range(model.n_layer):
        doc = model_view(model, model_result(model, text, layer), gpt2_dir, "attn view")
        alpha = [sum(weights[layer, h, i, 0] for i in range(n)) / n for h in range(model.n_head)]
        assert doc["layer"] == layer and doc["head"] == alpha.index(min(alpha)) == doc["opened"]["head"]
        # the same float32 weights summed in float64 in another order: n terms of magnitude at most 1
        assert doc["opened"]["sinks"] == pytest.approx(alpha, rel=0, abs=gamma(n, U64))
        assert doc["opened"]["sink"] == min(doc["opened"]["sinks"]) and doc["opened"]["most"] == max(
            doc["opened"]["sinks"]
        )
        assert "token 0" in doc["opened"]["rule"]
    last = json.loads(attn("view", text, "--model", gpt2_dir, "-f", "json").stdout)
    assert last["layer"] == model.n_layer - 1 and last["head"] == last["opened"]["head"]
    given = json.loads(attn("view", text, "--model", gpt2_dir, "--head", "1", "-f", "json").stdout)
    assert given["layer"] == model.n_layer - 1 and given["head"] == 1 and given["opened"] is None
    encoder = model_view(load_model(bert_dir), model_result(load_model(bert_dir), text, 1), bert_dir, "attn view")
    assert encoder["head"] == 0 and encoder["opened"] is None


def test_the_exact_command_prints_the_weight_a_page_rounds(bert_dir, monkeypatch):
    model = load_model(bert_dir)
    monkeypatch.chdir(Path(bert_dir).parent)  # the folder as the user named it: relative to where they are
    args = ["time flies", "--model", Path(bert_dir).name, "--layer", "0", "--head", "1"]
    doc = json.loads(attn("view", *args, "-f", "json").stdout)
    assert doc["layer"] == 0 and doc["head"] == 1 and doc["masks"] == []
    command = shlex.split(doc["exact"]["command"].format(layer=0, head=1))
    assert command[:5] == ["attn", "show", "time flies", "--model", Path(bert_dir).name]
    exact = json.loads(attn(*command[1:]).stdout)["heads"][0]["weights"]
    assert np.rint(np.array(exact) * SCALE).tolist() == (weights_of(doc)[0, 1] * SCALE).round().tolist()
    assert len(doc["layers"]) == model.n_layer


def test_a_model_page_names_no_absolute_path_and_a_braced_text_stays_text(bert_dir, tmp_path):
    """An absolute --model would tell whoever gets the page where it was made, and run nowhere else: the exact
    command says "$MODEL". A text holding {layer}, {head} or {part} is text in it, not a place to fill."""
    text = "see {layer}, {head} and {part} }{"
    out = tmp_path / "page.html"
    assert attn("view", text, "--model", bert_dir, "--layer", "0", "-o", out).exit_code == 0
    html = out.read_text(encoding="utf-8")
    assert bert_dir not in html and str(Path(bert_dir).parent) not in html
    exact = embedded(html)["exact"]
    assert '--model "$MODEL"' in exact["command"] and '--model "$MODEL"' in exact["mean_command"]
    command = shlex.split(exact["command"].format(layer=0, head=1), posix=True)
    assert command[:5] == ["attn", "show", text, "--model", "$MODEL"] and command[5:] == [
        "--layer",
        "0",
        "--head",
        "1",
        "-f",
        "json",
    ]
    shown = json.loads(attn(*command[1:3], "--model", bert_dir, *command[5:]).stdout)
    assert shown["text"] == text


def test_cross_attention_has_its_context_and_no_labels():
    doc = result_view(run("time flies", RunConfig(), context="an arrow flies"), "attn view")
    assert doc["context_tokens"] == ["an", "arrow", "flies"]
    assert weights_of(doc).shape == (1, 1, 2, 3)
    assert doc["layers"][0]["heads"][0]["label"] == ""


def test_the_page_embeds_the_json_document_once(tmp_path):
    out = tmp_path / "view.html"
    r = attn("view", "time flies like an arrow", "--heads", "4", "-o", out)
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    doc = json.loads(attn("view", "time flies like an arrow", "--heads", "4", "-f", "json").stdout)
    assert embedded(html) == doc and html.count("attncli.view/4") == 1


def test_the_page_asks_for_nothing_from_the_network(tmp_path):
    html = page(result_view(run("time flies"), "attn view"))
    urls = set(re.findall(r"[a-z]+://[^\s\"'<>)]*", html))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace: a name, never fetched
    assert "default-src 'none'" in html  # and the page's own policy forbids any request
    for tag in ("<link", "<img", "<iframe", "src=", "@import", "url(http"):
        assert tag not in html


def test_no_token_can_close_the_script_element():
    doc = result_view(run("</script><script>alert(1)</script> & <!--"), "attn view")
    html = page(doc)
    assert html.count("</script>") == 3 and "<!--" not in html.split('id="attn-data">')[1]
    assert embedded(html) == json.loads(json.dumps(doc))


def test_save_html_and_f_html_write_the_page_of_show_steps_and_heads(tmp_path, gpt2_dir):
    for command in (["show", "time flies", "--heads", "2"], ["steps", "time flies"]):
        out = tmp_path / f"{command[0]}.html"
        r = attn(*command, "--save-html", out)
        assert r.exit_code == 0 and "flies" in r.stdout  # the table still prints
        doc = embedded(out.read_text(encoding="utf-8"))
        assert doc["command"] == f"attn {command[0]}" and doc["tokens"] == ["time", "flies"]
    r = attn("heads", "--model", gpt2_dir, "time flies like an arrow", "-o", tmp_path / "heads.html")
    assert r.exit_code == 0, r.output
    doc = embedded((tmp_path / "heads.html").read_text(encoding="utf-8"))
    assert doc["command"] == "attn heads" and len(doc["layers"]) == 2


def test_options_that_make_no_page_are_refused():
    r = attn("view", "time flies", "--head", "3")
    assert r.exit_code == 2 and "--head 3 is out of range" in r.stderr
    assert attn("view", "time flies", "--layer", "1").exit_code == 2  # --layer needs --model
    r = attn("show", "time flies", "--no-weights", "-f", "html")
    assert r.exit_code == 0 and "attn-data" not in r.stdout  # no weights, no page: the table's picture


def test_a_40_token_page_of_a_12_layer_12_head_model_carries_under_205_kb_of_data():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(12, 12, 42, 42)) * 2
    weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)  # [L, h, n, n]
    labels = label_heads(head_stats(weights))
    layers, masks = layers_record(weights, None, list(range(12)), list(range(12)), labels)
    doc = {**result_view(run(" ".join(["w"] * 42)), "attn view"), "layers": layers, "masks": masks, "steps": None}
    # the page less its script and stylesheet (the same ~100 KB on every page, grown with its views): the data of
    # 12 x 12 heads of 42 x 42 random weights, a byte each before deflate (254 KB), the least a compression can gain
    shipped = Path(__file__).parents[2] / "attncli" / "render" / "view"
    code = sum(len(f.read_bytes()) for f in (shipped / "view.js", shipped / "view.css"))
    assert len(page(doc).encode()) - code < 205_000


def test_a_model_page_carries_the_q_k_v_of_every_layer_when_short_else_of_its_own(bert_dir, monkeypatch):
    from attncli.io.packing import unpacked
    from attncli.models.runs import page
    from attncli.models.runs.run import model_layer

    model, text = load_model(bert_dir), "time flies like an arrow"
    doc = model_view(model, model_result(model, text, 1), bert_dir, "attn view")
    assert [n["layer"] for n in doc["neuron"]] == list(range(model.n_layer))
    for n in doc["neuron"]:
        _, s = model_layer(model, text, n["layer"])
        assert unpacked(n["q"], "<f4", tuple(n["shape"]["q"])).tolist() == s.q.tolist()  # the model's own float32
        assert unpacked(n["k"], "<f4", tuple(n["shape"]["k"])).tolist() == s.k.tolist()
        v = unpacked(n["v"], "<f2", tuple(n["shape"]["v"]))
        assert np.abs(v - s.v).max() <= 2.0**-11 * np.abs(s.v).max()  # float16: 11 significant bits
        assert n["scale"] == s.scale and n["stages"]["q"]["title"] == "queries"
    monkeypatch.setattr(page, "QKV_BYTES", 0)
    doc = model_view(model, model_result(model, text, 0), bert_dir, "attn view")
    assert [n["layer"] for n in doc["neuron"]] == [0]  # too long for every layer: the page's own


def test_a_model_page_is_priced_with_its_run(gpt2_dir, monkeypatch):
    """Hostile round IV, 7: the page's every layer and head was not priced, and `attn view --model` peaked at 2.5x
    the estimate its run passed. A budget between the run's estimate and the run's and the page's is refused by
    the page alone, in one line; the labels are computed a layer at a time (the same labels)."""
    from attncli.models.runs.page import PAGE_CELL_BYTES, STATS_CELL_BYTES

    model = load_model(gpt2_dir)
    text = "time flies like an arrow " * 4
    result = model_result(model, text, 1)
    n, cells = len(result.tokens), model.n_layer * model.n_head * len(result.tokens) ** 2
    run_bytes = model.weights.nbytes + model.n_layer * (3 * model.n_head * n * n + 8 * n * model.d_model) * 4
    page = cells * PAGE_CELL_BYTES + model.n_head * n * n * STATS_CELL_BYTES
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(run_bytes + page // 2))
    result = model_result(model, text, 1)  # the run alone passes
    with pytest.raises(DataError, match=rf"^the page of gpt2-tiny on {n} tokens needs about .*ATTN_MAX_MEMORY"):
        model_view(model, result, gpt2_dir, "attn view")
    monkeypatch.setenv("ATTN_MAX_MEMORY", str(run_bytes + page))
    doc = model_view(model, result, gpt2_dir, "attn view")
    stats = head_stats(np.stack(forward(model, np.asarray(result.tokens.ids)).weights), causal=True)
    assert [[h["label"] for h in layer["heads"]] for layer in doc["layers"]] == label_heads(stats)
