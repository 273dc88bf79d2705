"""A decoder's page with --patch, --dla and --knockout: its data are the documents of attn patch, attn dla and
attn knockout.

The page's three views come from the same functions as the commands (models/patch.patch_document,
models/dla.dla_document, models/knockout.knockout_document) on the same text, so their numbers are equal, not
close; the page adds only the order it lists them in ("strongest", "ranked"), computed below the renderer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attncli import api
from tests.conftest import attn, refused
from tests.io.test_view import embedded

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
CLEAN, CORRUPT = "time flies like an arrow", "time fries like an arrow"  # the goldens' causal.json pair


def _json(*args) -> dict:
    out = attn(*args, "-f", "json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_the_pages_patch_dla_and_knockout_are_the_commands_json(family, tmp_path):
    model = GOLDEN / family
    m = ["--target", "ow", "--contrast", "X"]
    args = [CLEAN, "--model", model, "--patch", "--corrupt", CORRUPT, "--what", "heads", *m, "--dla"]
    args += ["--knockout", "--from", "flies", "--window", "1"]
    doc = _json("view", *args)
    patch = _json("patch", CLEAN, "--model", model, "--corrupt", CORRUPT, "--what", "heads", *m)
    dla = _json("dla", CLEAN, "--model", model, *m)
    knockout = _json("knockout", CLEAN, "--model", model, "--from", "flies", "--window", "1")
    assert {k: v for k, v in doc["patch"].items() if k != "strongest"} == patch
    assert {k: v for k, v in doc["dla"].items() if k != "ranked"} == dla
    assert doc["knockout"] == knockout
    # the order the page lists them in: by |number|, largest first
    scores = [abs(r["score"]) for r in patch["rows"]]
    assert [scores[i] for i in doc["patch"]["strongest"]] == sorted(scores, reverse=True)[:5]
    shares = [abs(r["dla"]) for r in dla["rows"]]
    assert sorted(doc["dla"]["ranked"]) == list(range(len(shares)))
    assert [shares[i] for i in doc["dla"]["ranked"]] == sorted(shares, reverse=True)
    assert attn("view", *args, "-o", tmp_path / "p.html").exit_code == 0
    assert embedded((tmp_path / "p.html").read_text()) == doc


def test_a_page_without_the_options_carries_none_of_the_three():
    doc = api.view(CLEAN, model=str(GOLDEN / "llama")).doc
    assert doc["patch"] is None and doc["dla"] is None and doc["knockout"] is None


def test_the_api_takes_the_views_as_keywords():
    model = str(GOLDEN / "llama")
    doc = api.view(CLEAN, model=model, dla=True, target="ow").doc
    assert {k: v for k, v in doc["dla"].items() if k != "ranked"} == api.dla(CLEAN, model=model, target="ow").doc
    doc = api.view(CLEAN, model=model, knockout=True, span="0-1", to=-2).doc
    assert doc["knockout"] == api.knockout(CLEAN, model=model, span="0-1", to=-2).doc


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--patch", "--corrupt", CORRUPT, "--target", "ow"], 2, "--patch needs --model"),
        (["--model", GOLDEN / "llama", "--patch", "--target", "ow"], 2, "--patch needs --corrupt"),
        (["--model", GOLDEN / "llama", "--patch", "--corrupt", CORRUPT], 2, "--patch needs --target"),
        (["--model", GOLDEN / "llama", "--dla"], 2, "--dla needs --target"),
        (["--model", GOLDEN / "llama", "--knockout"], 2, "--knockout needs --from"),
        (["--model", GOLDEN / "llama", "--corrupt", CORRUPT], 2, "--corrupt is --patch's"),
        (["--model", GOLDEN / "llama", "--what", "heads", "--noising"], 2, "--what and --noising are --patch's"),
        (["--model", GOLDEN / "llama", "--from", "0", "--window", "1"], 2, "--from and --window are --knockout's"),
        (["--model", GOLDEN / "llama", "--to", "0"], 2, "--to is --knockout's"),
        (["--model", GOLDEN / "llama", "--contrast", "X", "--lens"], 2, "--contrast is for --patch, --dla"),
        (["--model", GOLDEN / "llama", "--patch", "--corrupt", "time", "--target", "ow"], 2, "and --corrupt 5"),
        (["--model", GOLDEN / "bert", "--dla", "--target", "the"], 2, "is an encoder"),
        (["--model", GOLDEN / "bart", "--context", "a b", "--dla", "--target", "a"], 2, "encoder–decoder"),
    ],
)
def test_the_causal_views_are_refused_without_what_they_need(args, code, message):
    refused(attn("view", CLEAN, *args, "-f", "json"), message, code=code)


def test_the_commands_results_show_the_page_opening_on_their_view_with_their_own_document():
    from attncli.api.page import inline

    model = str(GOLDEN / "llama")
    found = {
        "patch": api.patch(CLEAN, corrupt=CORRUPT, model=model, target="ow", what="mlp-out"),
        "dla": api.dla(CLEAN, model=model, target="ow", contrast="X"),
        "knockout": api.knockout(CLEAN, model=model, span="flies", window=1),
    }
    for name, records in found.items():
        view = records.view
        assert view is not None
        doc = view.doc
        assert doc["opens"] == name and doc["tokens"] == records.doc["tokens"]
        assert {k: v for k, v in doc[name].items() if k not in ("strongest", "ranked")} == records.doc
        assert [doc[other] for other in found if other != name] == [None, None]
        assert records._repr_html_() == inline(view.page(doc))
    assert api.view(CLEAN, model=model).doc["opens"] is None


def test_the_commands_write_their_page_as_html(tmp_path):
    out = attn("dla", CLEAN, "--model", GOLDEN / "llama", "--target", "ow", "-o", tmp_path / "dla.html")
    assert out.exit_code == 0, out.output
    doc = embedded((tmp_path / "dla.html").read_text())
    assert (
        doc["opens"] == "dla"
        and doc["dla"]["rows"] == _json("dla", CLEAN, "--model", GOLDEN / "llama", "--target", "ow")["rows"]
    )
