"""A chat as the model sees it (`--chat`): the text as the user's message, put in the model's own chat template.

The template is a Jinja2 program that comes with the model (GGUF `tokenizer.chat_template`, a folder's
`tokenizer_config.json` `chat_template` or `chat_template.jinja`), as transformers' `apply_chat_template` and
llama.cpp read it: it is given `messages` ([{"role", "content"}]: the `--system` text, if any, then the text as
the user's), `add_generation_prompt=True` (it ends where the assistant's answer begins, so `--generate` continues
as the assistant) and the tokenizer's `bos_token` / `eos_token` strings. The special tokens it writes
(`<|im_start|>`) are then encoded as the special tokens they name, one id each, and no BOS/EOS is added around it
(transformers' `tokenize=True` encodes the rendered chat with `add_special_tokens=False`).

A template is untrusted input: it is rendered by Jinja2's `ImmutableSandboxedEnvironment` in a contained child
(pipeline/contain.py: the tokenizer's time limit, ATTN_TOKENIZER_SECONDS, and memory limit), a template longer
than MAX_TEMPLATE_CHARS is refused unread, and a rendering that grows past MAX_RENDERED_CHARS is stopped; each
failure is one DataError line.

Each token is then given its segment (`SEGMENTS`): the message whose content it was cut from (`system`, `user`),
`assistant` for what the model writes after it, or `template` for what the template wrote around them (its
special tokens, role names, and its own default system prompt when it has one, as SmolLM2's does).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from attncli.models.files.folder import json_object, read_bytes
from attncli.models.files.hparams import ModelError
from attncli.pipeline.budget import max_bytes_from
from attncli.pipeline.contain import contained
from attncli.pipeline.tokenize import CHAT_TEMPLATE_SEGMENT

MAX_TEMPLATE_CHARS = 100_000  # the largest template read (the longest real ones, tool-calling Llama 3.1's, are ~10 k)
MAX_RENDERED_CHARS = 1_000_000  # a rendering that grows past this is stopped: a runaway loop, not a chat
SEGMENTS = ("system", "user", "assistant", CHAT_TEMPLATE_SEGMENT)  # what a token of a chat can be


@dataclass(frozen=True)
class ChatTemplate:
    """A model's chat template and the special-token strings it is given, as its files say them."""

    source: str  # the Jinja2 text
    where: str  # where it was read from, for messages: "tokenizer.chat_template of FILE.gguf"
    bos: str = ""
    eos: str = ""


@dataclass(frozen=True)
class Chat:
    """`--chat`: the text is the user's message; `system` (`--system TEXT`) a system message before it (none:
    whatever the template writes without one)."""

    system: str | None = None

    def messages(self, text: str) -> list[dict[str, str]]:
        """The messages the template is given.

        >>> Chat("Be brief.").messages("Hi")
        [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}]
        """
        head = [] if self.system is None else [{"role": "system", "content": self.system}]
        return [*head, {"role": "user", "content": text}]


def template_text(value: object, where: str) -> str | None:
    """A chat template as stored: a string, or transformers' list of named ones ({"name", "template"}: the one
    named "default"); None when there is none; ModelError when it is something else or too long."""
    if value is None:
        return None
    if isinstance(value, list):
        named = {v.get("name"): v.get("template") for v in value if isinstance(v, dict)}
        value = named.get("default")
        if value is None:
            return None
    if not isinstance(value, str):
        raise ModelError(f"{where} is not a string (a chat template)")
    if len(value) > MAX_TEMPLATE_CHARS:
        raise ModelError(
            f"{where} is {len(value):,} characters long; a chat template of more than {MAX_TEMPLATE_CHARS:,} is "
            "not read"
        )
    return value


def _special(value: object) -> str:
    """A special token as tokenizer_config.json writes it: a string, or {"content": ...}."""
    value = value.get("content") if isinstance(value, dict) else value
    return value if isinstance(value, str) else ""


def folder_template(folder: Path) -> ChatTemplate | None:
    """A folder's chat template: tokenizer_config.json's `chat_template`, else chat_template.jinja; None without."""
    config = json_object(folder, "tokenizer_config.json") if (folder / "tokenizer_config.json").is_file() else {}
    where = f"chat_template of {folder / 'tokenizer_config.json'}"
    source = template_text(config.get("chat_template"), where)
    if source is None and (folder / "chat_template.jinja").is_file():
        where = str(folder / "chat_template.jinja")
        data = read_bytes(folder, "chat_template.jinja", MAX_TEMPLATE_CHARS * 4 + 1)  # UTF-8: at most 4 bytes a char
        source = template_text(data.decode("utf-8", errors="replace"), where)
    if source is None:
        return None
    return ChatTemplate(source, where, _special(config.get("bos_token")), _special(config.get("eos_token")))


def gguf_template(meta: dict, source: str) -> ChatTemplate | None:
    """A GGUF file's chat template (`tokenizer.chat_template`) with its BOS and EOS tokens' strings; None without."""
    text = template_text(meta.get("tokenizer.chat_template"), f"tokenizer.chat_template of {source}")
    if text is None:
        return None
    tokens = meta.get("tokenizer.ggml.tokens")
    tokens = tokens if isinstance(tokens, list) else []

    def named(key: str) -> str:
        i = meta.get(f"tokenizer.ggml.{key}")
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(tokens):
            return ""
        return tokens[i] if isinstance(tokens[i], str) else ""

    return ChatTemplate(text, f"tokenizer.chat_template of {source}", named("bos_token_id"), named("eos_token_id"))


def render(template: ChatTemplate, messages: list[dict[str, str]]) -> str:
    """The chat `messages` as `template` writes them, ending where the assistant's answer begins; rendered
    contained (bounded in time and memory), one DataError line when the template fails."""
    what, memory = f"the chat template ({template.where})", max_bytes_from(os.environ)
    args = (template.source, messages, template.bos, template.eos)
    return contained(_render, *args, what=what, memory=memory, errors=(ModelError,))


def _render(source: str, messages: list[dict[str, str]], bos: str, eos: str) -> str:  # in the contained child
    from jinja2 import TemplateError  # late: start-up (jinja2: --chat only)
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: object) -> None:  # what templates call to refuse a conversation
        raise ModelError(f"the chat template refuses this chat: {str(message)[:200]}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    out: list[str] = []
    size = 0
    try:
        pieces = env.from_string(source).generate(
            messages=messages, add_generation_prompt=True, bos_token=bos, eos_token=eos
        )
        for piece in pieces:
            size += len(piece)
            if size > MAX_RENDERED_CHARS:
                raise ModelError(
                    f"the chat template wrote more than {MAX_RENDERED_CHARS:,} characters and was stopped "
                    "(a runaway loop?)"
                )
            out.append(piece)
    except TemplateError as e:
        raise ModelError(f"the chat template cannot be rendered: {type(e).__name__}: {str(e)[:200]}") from None
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as e:
        raise ModelError(f"the chat template fails on this chat: {type(e).__name__}: {str(e)[:200]}") from None
    return "".join(out)


def segments(
    rendered: str, messages: list[dict[str, str]], offsets: tuple[tuple[int, int], ...]
) -> tuple[str, ...]:  # -> one segment per token
    """Each token's segment: the role of the message whose content it overlaps (the contents found in the
    rendered chat in order), else `template` (what the template wrote).

    >>> segments("<s>user: hi</s>", [{"role": "user", "content": "hi"}], ((0, 3), (3, 8), (9, 11), (11, 15)))
    ('template', 'template', 'user', 'template')
    """
    spans: list[tuple[int, int, str]] = []
    at = 0
    for m in messages:
        start = rendered.find(m["content"], at) if m["content"] else -1
        if start >= 0:
            at = start + len(m["content"])
            spans.append((start, at, m["role"]))
    return tuple(next((role for s, e, role in spans if a < e and b > s), CHAT_TEMPLATE_SEGMENT) for a, b in offsets)
