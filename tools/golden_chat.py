"""The chat goldens of tests/models/golden/chat/: chat templates and the ids transformers gives a chat with them.

    ref/bin/python tools/golden_chat.py GGUF_FILE [OUT_DIR]     (GGUF_FILE: SmolLM2-135M-Instruct's; default
                                                                 OUT_DIR tests/models/golden/chat)

Pinned: torch==2.13.0, transformers==5.23.0, gguf==0.19.0 (never attncli's dependencies; the environment
tools/reference.py makes, checked when run). For the Qwen2, Llama 3 and Gemma instruct templates (as their
model repositories' tokenizer_config.json have them) it writes a folder: a byte-level BPE of 320 tokens trained
on the project's corpus whose special tokens are the template's, and a tokenizer_config.json holding the
template and the BOS/EOS strings; then, for each of CHATS, the ids of transformers'
`apply_chat_template(messages, add_generation_prompt=True, tokenize=True)` on that folder, and on GGUF_FILE
(transformers reads its `tokenizer.chat_template` with `gguf_file=`), into expected.json; a chat the template
refuses (Gemma has no system role) is written with transformers' message instead of ids.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHATS = [  # (the user's text, the system text or None)
    ("What is a cat?", None),
    ("time flies like an arrow", "Be brief."),
    ("  the heads agreed.  ", None),  # Llama 3's and Gemma's templates trim a message
]
QWEN2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim "
    "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
GEMMA = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
    "{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"
)
TEMPLATES = {  # name -> (template, its special tokens (BOS first, EOS second))
    "qwen2": (QWEN2, ["<|endoftext|>", "<|im_end|>", "<|im_start|>"]),
    "llama3": (LLAMA3, ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"]),
    "gemma": (GEMMA, ["<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"]),
}


def tokenizer(special: list[str]):
    """A byte-level BPE of 320 tokens trained on the project's corpus, `special` its first ids (and added as
    special tokens: matched whole in a text); nothing added around a text."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors, trainers
    from tokenizers.models import BPE

    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = (ROOT / "sample_texts" / "bpe_corpus.txt").read_text(encoding="utf-8").splitlines()
    tok.train_from_iterator(corpus, trainer=trainer)
    return tok


def messages(text: str, system: str | None) -> list[dict[str, str]]:
    return ([] if system is None else [{"role": "system", "content": system}]) + [{"role": "user", "content": text}]


def expected(tok) -> list[dict]:
    """Each of CHATS through `tok.apply_chat_template`: its ids, or the message of the template's refusal."""
    from jinja2 import TemplateError

    out = []
    for text, system in CHATS:
        case: dict = {"text": text, "system": system}
        try:
            ids = tok.apply_chat_template(messages(text, system), add_generation_prompt=True, tokenize=True)
            case["ids"] = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        except TemplateError as e:
            case["refused"] = str(e)
        out.append(case)
    return out


def main() -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/golden_chat.py", gguf="0.19.0")
    from transformers import AutoTokenizer

    if len(sys.argv) < 2:
        sys.exit("usage: tools/golden_chat.py GGUF_FILE [OUT_DIR]")
    gguf = Path(sys.argv[1]).resolve()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "tests" / "models" / "golden" / "chat"
    result: dict = {}
    for name, (template, special) in TEMPLATES.items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        tokenizer(special).save(str(folder / "tokenizer.json"))
        config = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": special[0],
            "eos_token": special[1],
            "chat_template": template,
        }
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        result[name] = expected(AutoTokenizer.from_pretrained(str(folder)))
    result["smollm2"] = expected(AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name))
    (out / "expected.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
