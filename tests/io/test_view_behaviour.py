"""A decoder's page with --generate, --lens and --ablate: its data are the numbers of attn lens and attn ablate.

The page's lens rows and ablation come from the same functions as `attn lens` and `attn ablate`
(models/lens.lens_rows, models/ablate.ablate_record) on a forward pass over the same ids (the page's pass keeps
one layer's stages besides, which changes no arithmetic), so they are equal, not close.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attncli import api
from attncli.models import forward, load_model
from attncli.models.interpret.ablate import ablate_document, ablate_record
from attncli.models.interpret.lens import lens_document, lens_rows
from attncli.models.network.unembed import logits, probabilities
from attncli.models.runs.tokens import encode
from attncli.pipeline.tokentext import labels
from tests.conftest import attn, refused
from tests.io.test_view import embedded

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
TEXT = "the cat sat on the mat"


@pytest.mark.parametrize("family", ["llama", "gemma2", "gpt2", "qwen2"])
def test_the_pages_lens_and_ablation_are_those_of_attn_lens_and_attn_ablate(family):
    model = load_model(GOLDEN / family)
    doc = api.view(TEXT, model=model, lens=True, ablate=True).doc
    lens, ablation = lens_document(model, TEXT, doc["lens"]["k"]), ablate_document(model, TEXT)
    assert doc["schema"] == "attncli.view/4" and doc["tokens"] == lens["tokens"] == ablation["tokens"]
    assert _unlabelled(doc["lens"]["rows"]) == lens["rows"]  # the page adds each token as drawn
    assert all(
        r["top_labels"] == list(labels(r["top_tokens"], r["top_texts"], [False] * len(r["top_ids"])))
        for r in doc["lens"]["rows"]
    )
    assert doc["lens"]["n_layer"] == lens["n_layer"] == model.n_layer and doc["lens"]["layers"] == lens["layers"]
    mine = {k: v for k, v in doc["ablation"].items() if k not in ("n_layer", "n_head")}
    target = mine.pop("target")
    assert target.pop("label") == labels([target["token"]], [target["text"]], [False])[0]
    fields = ("mode", "means", "position", "target", "contrast", "ranked_by", "clean_logit", "clean_logprob")
    assert mine | {"target": target} == {k: ablation[k] for k in (*fields, "notes", "rows")}
    assert len(doc["ablation"]["rows"]) == doc["ablation"]["n_layer"] * doc["ablation"]["n_head"]
    assert "generated" not in doc


def _unlabelled(rows: list[dict]) -> list[dict]:
    """The page's lens rows without what it adds for drawing (each token as drawn: `␣Paris`)."""
    return [{k: v for k, v in r.items() if k != "top_labels"} for r in rows]


def test_the_lens_last_layer_is_the_models_own_logits():
    model = load_model(GOLDEN / "llama")
    doc = api.view(TEXT, model=model, lens=True).doc
    run = forward(model, encode(model, TEXT).ids)
    assert run.final is not None
    probs = probabilities(logits(model, run.final))  # [n, vocab]
    last = [r for r in doc["lens"]["rows"] if r["layer"] == model.n_layer]
    assert [r["top_ids"][0] for r in last] == probs.argmax(-1).tolist()
    assert [r["top_probs"][0] for r in last] == probs.max(-1).tolist()


def test_a_generated_page_steps_from_the_first_written_token_with_its_probability():
    model = load_model(GOLDEN / "llama")
    page = api.view(TEXT, model=model, generate=3, lens=True, ablate=True)
    doc, written = page.doc, page.doc["generated"]
    ids = page.result.tokens.ids
    start = len(doc["tokens"]) - len(written["ids"])
    assert written["from"] == start and list(ids[start:]) == written["ids"] and len(written["probs"]) == 3
    run = forward(model, ids)
    assert run.final is not None
    probs = probabilities(logits(model, run.final[start - 1 : -1]))  # what each step chose from
    assert written["probs"] == probs[np.arange(3), written["ids"]].tolist()
    assert written["ids"] == probs.argmax(-1).tolist()  # greedy: the most probable each time
    assert _unlabelled(doc["lens"]["rows"]) == lens_rows(model, run, doc["lens"]["k"])  # over the whole sequence
    # the ablation watches the text before the written tokens: its next token is the first one written
    target = dict(doc["ablation"]["target"])
    del target["label"]
    assert doc["ablation"] | {"target": target} == {"n_layer": 2, "n_head": 4} | ablate_record(model, ids[:start])
    assert doc["ablation"]["target"]["id"] == written["ids"][0] and doc["ablation"]["position"] == start - 1


def test_a_page_without_the_options_carries_neither_view():
    doc = api.view(TEXT, model=str(GOLDEN / "llama")).doc
    assert doc["lens"] is None and doc["ablation"] is None


def test_ablate_takes_a_target_and_a_mode():
    model = load_model(GOLDEN / "llama")
    token = encode(model, TEXT).strings[-1]  # a token of the vocabulary, as it writes it
    doc = api.view(TEXT, model=model, ablate=True, target=token, mode="mean").doc
    assert doc["ablation"]["target"]["given"] == token and doc["ablation"]["mode"] == "mean"
    assert doc["ablation"]["rows"] == ablate_document(model, TEXT, target=token, mode="mean")["rows"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", GOLDEN / "bert", "--lens"], "is an encoder"),
        (["--model", GOLDEN / "bert", "--ablate"], "is an encoder"),
        (["--model", GOLDEN / "bart", "--context", "a b", "--ablate"], "encoder–decoder"),
        (["--lens"], "--lens needs --model"),
        (["--model", GOLDEN / "llama", "--target", "at"], "--target is for --ablate"),
        (["--model", GOLDEN / "llama", "--mode", "mean"], "add --ablate"),
    ],
)
def test_the_views_of_a_next_token_head_are_refused_where_there_is_none(args, message):
    out = attn("view", TEXT, *args, "-f", "json")
    refused(out, message, code=2)
    assert out.stdout == ""


def test_the_json_of_the_command_is_the_pages_document(tmp_path):
    args = [TEXT, "--model", GOLDEN / "gpt2", "--generate", "2", "--lens", "--ablate"]
    doc = json.loads(attn("view", *args, "-f", "json").stdout)
    assert attn("view", *args, "-o", tmp_path / "p.html").exit_code == 0
    assert embedded((tmp_path / "p.html").read_text()) == doc
    assert doc["generated"]["from"] + 2 == len(doc["tokens"])


def test_the_ablation_runs_within_the_memory_limit_a_batch_of_copies_at_a_time(monkeypatch):
    """A budget between the page's pass and a layer's heads as copies all at once (the price before the ablation
    swept the layers) runs the page's ablation 2 copies at a time (models/interpret/ablate.py's `sizes`), each head's
    deltas those of all at once within DELTAS (tests/models/test_behaviour.py's: the rows of a batch's products split
    otherwise). (Its refusal never comes after the pass's: one copy and the streams cost less than a layer more.)"""
    from attncli.models.interpret.ablate import sizes
    from attncli.models.runs.page import PAGE_CELL_BYTES, STATS_CELL_BYTES
    from tests.models.test_behaviour import DELTAS

    model = load_model(GOLDEN / "llama")
    n = len(encode(model, TEXT).ids)
    per_layer = (3 * model.n_head * n * n + 8 * n * model.d_model) * 4  # folder.check_run's price of one layer
    page = model.n_head * n * n * (model.n_layer * PAGE_CELL_BYTES + STATS_CELL_BYTES)  # runs/page.py's check_page
    one_pass = model.weights.least() + model.n_layer * per_layer + page  # the weights a pass holds at least, streamed
    ablation = model.weights.least() + model.n_head * per_layer  # every head of a layer: one copy each
    assert ablation > one_pass  # this model has more heads than layers
    whole = {(r["layer"], r["head"]): r for r in api.view(TEXT, model=model, ablate=True).doc["ablation"]["rows"]}
    monkeypatch.setenv("ATTN_MAX_MEMORY", str((one_pass + ablation) // 2))
    assert sizes(model, n, model.n_layer * model.n_head) == (model.n_layer * model.n_head, 2)
    doc = api.view(TEXT, model=model, lens=True, ablate=True).doc
    assert doc["lens"] is not None
    for r in doc["ablation"]["rows"]:
        w = whole[(r["layer"], r["head"])]
        assert (
            abs(r["delta_logit"] - w["delta_logit"]) <= DELTAS
            and abs(r["delta_logprob"] - w["delta_logprob"]) <= DELTAS
        )


def test_an_encoder_decoders_written_target_carries_where_it_starts_and_each_tokens_probability():
    from attncli.models.runs.encdec import seq2seq_forward
    from attncli.models.runs.seq2seq import encoder_tokens
    from tests.tolerance import matmul_bound

    model, source = load_model(GOLDEN / "bart"), "the cat sat on the mat"
    page = api.view("", model=model, context=source, generate=3)
    written, target = page.doc["generated"], page.result.tokens
    assert written["from"] == target.generated == len(target) - len(written["ids"])
    assert written["ids"] == list(target.ids[target.generated :]) and len(written["probs"]) == 3
    # the decoder's own softmax at the rows before each written token, from the whole output at once (BART: no
    # final norm, so the logits are y Wᵀ + bias and differ from the page's by at most twice the product's bound)
    run = seq2seq_forward(model, encoder_tokens(model, source).ids, target.ids)
    y, w = run.output[target.generated - 1 : -1], model.weights[model.unembed]
    expected = probabilities(model.family.decoder.logits(model, run.output))[target.generated - 1 : -1]
    rtol = np.expm1(2 * 2 * matmul_bound(y, w.T).max()) + 1e-12
    np.testing.assert_allclose(written["probs"], expected[np.arange(3), written["ids"]], rtol=rtol, atol=0)
