"""--chat: a text as the model sees it in its own chat template (attncli/models/text/chat.py).

The ids are transformers' `apply_chat_template(messages, add_generation_prompt=True, tokenize=True)`, committed by
tools/golden_chat.py in tests/models/golden/chat/expected.json: for the Qwen2, Llama 3 and Gemma templates on
tiny tokenizers that have their special tokens, and for SmolLM2-135M-Instruct's GGUF (its own template).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from attncli.errors import DataError
from attncli.models.files.hparams import ModelError
from attncli.models.text.chat import (
    MAX_RENDERED_CHARS,
    MAX_TEMPLATE_CHARS,
    Chat,
    ChatTemplate,
    folder_template,
    gguf_template,
    render,
)
from attncli.models.text.folder_tokenizer import load_tokenizer
from tests.conftest import attn, refused

GOLDEN = Path(__file__).parent / "golden"
CHATS = GOLDEN / "chat"
EXPECTED = json.loads((CHATS / "expected.json").read_text(encoding="utf-8"))
FOLDERS = ("qwen2", "llama3", "gemma")


@pytest.mark.parametrize("name", FOLDERS)
def test_folder_templates_give_transformers_ids(name):
    template = folder_template(CHATS / name)
    assert template is not None
    tok = load_tokenizer(CHATS / name, None, {})
    for case in EXPECTED[name]:
        messages = Chat(case["system"]).messages(case["text"])
        if "refused" in case:  # Gemma has no system role: the template's own words, one line
            with pytest.raises(ModelError, match=case["refused"]):
                render(template, messages)
            continue
        got = tok.encode([render(template, messages)], ends=False)[0]
        assert got["ids"] == case["ids"], (name, case["text"])


def test_the_special_tokens_a_template_writes_are_one_id_each():
    tok = load_tokenizer(CHATS / "qwen2", None, {})
    start = tok.token_to_id("<|im_start|>")
    ids = tok.encode(["<|im_start|>user\nhi<|im_end|>"], ends=False)[0]["ids"]
    assert ids[0] == start and ids.count(start) == 1 and tok.token_to_id("<|im_end|>") in ids


@pytest.fixture(scope="module")
def qwen2_chat(tmp_path_factory) -> Path:
    """The qwen2 golden model with the chat golden's tokenizer (320 tokens, as the model's table) and template."""
    folder = tmp_path_factory.mktemp("chat") / "qwen2"
    shutil.copytree(GOLDEN / "qwen2", folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(CHATS / "qwen2" / name, folder / name)
    return folder


def test_a_folder_chat_end_to_end_marks_each_tokens_segment(qwen2_chat):
    from attncli import api

    shown = api.show("What is a cat?", model=str(qwen2_chat), chat=True, generate=2)
    tokens = shown.result.tokens
    assert list(tokens.prompt().ids) == EXPECTED["qwen2"][0]["ids"]
    assert tokens.segments[0] == "template"  # <|im_start|>, which the template wrote
    assert "user" in tokens.segments and "system" not in tokens.segments  # the template's own system prompt
    assert tokens.segments[-2:] == ("assistant", "assistant")  # what the model wrote after the chat
    assert tokens.chat_text.endswith("<|im_start|>assistant\n")
    user = [s for s, seg in zip(tokens.strings, tokens.segments) if seg == "user"]
    assert "".join(user).replace("Ġ", " ") == "What is a cat?"


def test_chat_on_the_command_line_is_captioned_and_in_json(qwen2_chat):
    r = attn("show", "What is a cat?", "--model", qwen2_chat, "--chat", "--system", "Be brief.", "--head", 0)
    assert r.exit_code == 0, r.output
    caption = " ".join(r.output.split())  # the caption wraps at the terminal's width
    assert "--chat, the text as the model's chat template writes it: tokens 0–7 template, 8–15 system," in caption
    r = attn("tokens", "What is a cat?", "--model", qwen2_chat, "--chat", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["text"].startswith("<|im_start|>system\nYou are a helpful assistant.")
    assert [r["segment"] for r in doc["rows"]] == doc["segments"]
    assert doc["segments"][0] == "template" and "user" in doc["segments"]
    r = attn("tokens", "What is a cat?", "--model", qwen2_chat, "--chat")
    header = r.output.splitlines()[1].split()
    assert header[-1] == "chat" and "user" in r.output


@pytest.mark.parametrize("command", ["steps", "heads", "lens", "view"])
def test_every_command_of_a_text_takes_the_chat(qwen2_chat, command, tmp_path):
    out = ["-o", tmp_path / "page.html"] if command == "view" else []
    r = attn(command, "What is a cat?", "--model", qwen2_chat, "--chat", *out)
    assert r.exit_code == 0, r.output
    shown = (tmp_path / "page.html").read_text(encoding="utf-8") if out else " ".join(r.output.split())
    assert "--chat, the text as the model's chat template writes it: tokens 0–34 template, 35–42 user" in shown
    if out:  # the page's exact command runs the same chat
        assert "--chat --layer {layer}" in shown


def test_ablate_watches_the_chats_last_token(qwen2_chat):
    r = attn("ablate", "What is a cat?", "--model", qwen2_chat, "--chat", "-f", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["position"] == len(EXPECTED["qwen2"][0]["ids"]) - 1


def test_chat_options_are_refused_where_they_mean_nothing(qwen2_chat):
    refused(attn("show", "hi", "--chat"), "--chat", code=2)  # no model
    refused(attn("show", "hi", "--model", qwen2_chat, "--system", "x"), "--system", "--chat", code=2)
    no_template = GOLDEN / "qwen2"
    refused(attn("show", "hi", "--model", no_template, "--chat"), "no chat template", code=2)
    refused(attn("lens", "le chat", "--model", GOLDEN / "t5", "--chat"), "encoder–decoder", code=2)


def test_a_failing_template_is_one_line():
    bad = ChatTemplate("{{ messages[0]['content'] | no_such_filter }}", "a test template")
    with pytest.raises(DataError, match="cannot be rendered"):
        render(bad, Chat().messages("hi"))
    for reach in ("messages.__class__.__mro__", "messages.append(1)"):  # the sandbox: no internals, no changes
        with pytest.raises(DataError, match="cannot be rendered: SecurityError: access to attribute"):
            render(ChatTemplate("{{ " + reach + " }}", "a test template"), Chat().messages("hi"))


def test_a_huge_template_and_a_huge_rendering_are_stopped():
    huge = ChatTemplate("{% for i in range(99999) %}{% for j in range(99999) %}xx{% endfor %}{% endfor %}", "t")
    with pytest.raises(DataError, match=f"more than {MAX_RENDERED_CHARS:,} characters"):
        render(huge, Chat().messages("hi"))
    from attncli.models.text.chat import template_text

    with pytest.raises(ModelError, match="not read"):
        template_text("x" * (MAX_TEMPLATE_CHARS + 1), "a test template")


def test_a_gguf_template_is_read_with_its_ends_and_checked():
    meta = {
        "tokenizer.chat_template": "{{ bos_token }}{{ messages[0]['content'] }}{{ eos_token }}",
        "tokenizer.ggml.tokens": ["<s>", "</s>", "a"],
        "tokenizer.ggml.bos_token_id": 0,
        "tokenizer.ggml.eos_token_id": 7,  # not a token: no string
    }
    template = gguf_template(meta, "x.gguf")
    assert template is not None and (template.bos, template.eos) == ("<s>", "")
    assert render(template, Chat().messages("hi")) == "<s>hi"
    assert gguf_template({}, "x.gguf") is None
    with pytest.raises(ModelError, match=r"tokenizer\.chat_template of x\.gguf is not a string"):
        gguf_template({"tokenizer.chat_template": 3}, "x.gguf")


def test_a_looping_template_is_stopped_in_bounded_time(monkeypatch):
    monkeypatch.setenv("ATTN_TOKENIZER_SECONDS", "0.5")
    looping = ChatTemplate("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", "t")
    with pytest.raises(DataError, match=r"ran for more than 0\.5 s"):
        render(looping, Chat().messages("hi"))


def test_smollm2_chat_ids_equal_transformers(smollm2):
    from attncli.models.runs.run import model_tokens

    for case in EXPECTED["smollm2"]:
        tokens = model_tokens(dataclasses.replace(smollm2, chat=Chat(case["system"])), case["text"])
        assert list(tokens.ids) == case["ids"], case["text"]
        assert "user" in tokens.segments and tokens.segments[0] == "template"
        assert ("system" in tokens.segments) == (case["system"] is not None)  # else the template's own prompt
