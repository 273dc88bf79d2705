"""`attn compare TEXT --model A --model B`: the models' own tokenizers side by side (issue 34, item 18), a row each,
with char/word/bpe only when --tokenizers asks; a GGUF file given to --tokenizers is sent to --model."""

from __future__ import annotations

import json

import pytest

from attncli import api
from attncli.errors import ConfigError
from tests.conftest import ROOT, attn
from tests.smollm2 import SKIP, smollm2_path

GOLDEN = ROOT / "tests" / "models" / "golden"
TEXT = "Zürich is 3 km away, naïve café"


def _rows(*args: str) -> list[dict]:
    r = attn("compare", TEXT, *args, "-f", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "attncli.compare-tokenizers/1" and doc["text"] == TEXT
    return doc["rows"]


def _listed(model: str) -> list[dict]:
    return json.loads(attn("tokens", TEXT, "--model", model, "-f", "json").stdout)["rows"]


def test_each_model_is_a_row_with_the_ids_its_own_tokenizer_gives():
    models = [str(GOLDEN / "gpt2"), str(GOLDEN / "bert"), str(GOLDEN / "qwen2")]
    rows = _rows(*(a for m in models for a in ("--model", m)))
    assert [r["tokenizer"] for r in rows] == ["gpt2", "bert", "qwen2"]  # no toy tokenizer unless asked
    for model, row in zip(models, rows):
        listed = _listed(model)
        assert row["ids"] == [t["id"] for t in listed] and row["tokens"] == [t["token"] for t in listed]
        special = sum(t["kind"] == "special" for t in listed)
        assert (row["n_tokens"], row["special"]) == (len(listed), special)
        assert row["chars_per_token"] == len(TEXT) / (len(listed) - special)
        assert row["bytes_per_token"] == len(TEXT.encode()) / (len(listed) - special)
        assert row["byte_pieces"] == sum(t["kind"] == "byte piece" for t in listed)
    assert rows[1]["special"] == 1 and rows[0]["byte_pieces"] > 0  # bert's <s>; gpt2 splits ü into bytes


def test_toy_tokenizers_join_when_asked_and_the_table_names_each_number():
    rows = _rows("--model", str(GOLDEN / "gpt2"), "--model", str(GOLDEN / "llama"), "--tokenizers", "word,char")
    assert [r["tokenizer"] for r in rows] == ["gpt2", "llama", "word", "char"]
    assert rows[2]["n_tokens"] == 8 and rows[3]["n_tokens"] == len(TEXT)
    r = attn("compare", TEXT, "--model", str(GOLDEN / "gpt2"), "--model", str(GOLDEN / "llama"), "--width", "120")
    assert r.exit_code == 0, r.stderr
    for label in ("tokens n", "characters per token", "UTF-8 bytes per token", "unknown / byte pieces"):
        assert label in r.stdout


def test_the_options_of_a_run_are_refused_with_several_models_not_ignored():
    base = ["compare", "x", "--model", str(GOLDEN / "gpt2"), "--model", str(GOLDEN / "bert")]
    for extra in (["--layer", "1"], ["--heads", "2"], ["--variants", "dot"]):
        r = attn(*base, *extra)
        assert r.exit_code == 2 and "several --model compare their tokenizers" in r.stderr and extra[0] in r.stderr
    with pytest.raises(ConfigError, match="drop layer"):
        api.compare("x", model=[str(GOLDEN / "gpt2"), str(GOLDEN / "bert")], layer=1)


def test_one_model_keeps_its_layer_as_one_more_column():
    doc = json.loads(attn("compare", "a b", "--model", str(GOLDEN / "gpt2"), "-f", "json").stdout)
    assert doc["schema"] == "attncli.compare/1" and doc["model"]["name"] == "gpt2"


@pytest.mark.parametrize("given", ["SmolLM2.gguf", "GOLDEN"])
def test_a_model_given_to_tokenizers_is_sent_to_model(given):
    given = str(GOLDEN / "gpt2") if given == "GOLDEN" else given
    r = attn("compare", "x", "--tokenizers", f"char,{given}")
    assert r.exit_code == 2 and "give it with --model" in r.stderr


@pytest.mark.skipif(smollm2_path() is None, reason=SKIP)
def test_a_gguf_file_compares_with_a_folder():
    rows = _rows("--model", smollm2_path(), "--model", str(GOLDEN / "gpt2"))
    assert rows[0]["vocab_size"] == 49152 and rows[0]["ids"] == [t["id"] for t in _listed(smollm2_path())]
