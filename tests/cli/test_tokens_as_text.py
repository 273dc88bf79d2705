"""What a user reads is what the model read: a model's tokens are drawn as their text (`␣flies`), with a legend,
in the table, the SVG and the page; `--raw-tokens` draws the vocabulary's strings; JSON keeps `tokens` and adds
`texts`, which join to the decoded text; `--query` takes the text with or without its space."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import attn

GOLDEN = Path(__file__).parents[1] / "models" / "golden"
TEXT = "time flies like an arrow"


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize(("name", "code"), [("gpt2", "Ġ"), ("albert", "▁")])
def test_the_table_draws_text_and_json_keeps_both(name, code):
    """Byte-level BPE (`Ġ`) and SentencePiece (`▁`) alike: the table has `␣` and a legend, never the code."""
    folder = str(GOLDEN / name)
    table = ok("show", TEXT, "--model", folder, "--layer", "0", "--head", "0", "--width", "200")
    assert code not in table and "␣" in table and "tokens as text: ␣ a space" in table
    raw = ok("show", TEXT, "--model", folder, "--layer", "0", "--head", "0", "--width", "200", "--raw-tokens")
    assert code in raw and "␣" not in raw
    doc = json.loads(ok("show", TEXT, "--model", folder, "--layer", "0", "--head", "0", "-f", "json"))
    assert any(code in t for t in doc["tokens"]) and len(doc["texts"]) == len(doc["tokens"])
    assert "".join(doc["texts"]).strip() == TEXT  # the decoded text (a tokenizer may drop the first space)


def test_raw_tokens_only_changes_the_table():
    r = attn("show", TEXT, "--model", str(GOLDEN / "gpt2"), "--raw-tokens", "-f", "json")
    assert r.exit_code == 2 and "--raw-tokens only changes what the table draws" in r.stderr


@pytest.mark.parametrize("query", ["flies", " flies", "▁flies"])
def test_query_takes_the_text_with_or_without_its_space_or_the_vocabulary_form(query):
    folder = str(GOLDEN / "albert")
    by_index = ok("show", TEXT, "--model", folder, "--layer", "0", "--head", "0", "--query", "2")
    shown = ok("show", TEXT, "--model", folder, "--layer", "0", "--head", "0", "--query", query)
    assert shown == by_index and "query 2 '␣flies'" in shown


def test_the_page_labels_are_text():
    page = ok("view", TEXT, "--model", str(GOLDEN / "albert"), "--layer", "0", "-f", "json")
    doc = json.loads(page)
    assert "␣flies" in doc["labels"] and "▁flies" in doc["tokens"] and len(doc["texts"]) == len(doc["tokens"])


def test_steps_query_names_a_token_as_show_s_does():
    """One resolver for every option that names a token of the text: `attn steps --query` takes the word too."""
    by_index = ok("steps", TEXT, "-v", "additive", "--query", "1")
    assert ok("steps", TEXT, "-v", "additive", "--query", "flies") == by_index
    r = attn("steps", TEXT, "--query", "banana")
    assert r.exit_code == 2 and "--query 'banana': no such token; the tokens are 0:time 1:flies" in r.stderr
