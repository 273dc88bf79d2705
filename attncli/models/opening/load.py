"""Open a model: a Hugging Face folder (config.json, safetensors weights, its own tokenizer) or a GGUF file.

A folder is a `Model` (model.py): its family (attncli/models/network/families/), its hyper-parameters, its weights
(weights.py: read lazily from the safetensors files) and its tokenizer (folder_tokenizer.py); a GGUF file gives
the same parts (gguf_model.py). Both end in the shared `_check_hp` and `_model`. tokens.py cuts a text with the
model's tokenizer. Nothing here imports PyTorch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attncli.models.files.folder import ContainedTokenizer, check_budget, check_declared, checkpoint, json_object
from attncli.models.files.hparams import ModelError
from attncli.models.network.blocks import ACTIVATION_FNS
from attncli.models.network.families import Family, architecture_type, family_of, model_types, out_of_scope
from attncli.models.network.model import Model, Weights
from attncli.models.opening.hub import resolve_model
from attncli.models.opening.weights import open_weights
from attncli.models.text.chat import ChatTemplate, folder_template
from attncli.models.text.folder_tokenizer import load_tokenizer

SUPPORTED = tuple(model_types())  # every config.json model_type some family serves


def _display_name(folder: Path) -> str:
    """The folder's name; for a Hugging Face cache snapshot "org/name"; for a folder called "model" "parent/model"."""
    p = folder.resolve()
    if p.parent.name == "snapshots" and p.parent.parent.name.startswith("models--"):
        return p.parent.parent.name[len("models--") :].replace("--", "/")
    return f"{p.parent.name}/{p.name}" if p.name == "model" and p.parent.name else p.name


def load_model(path: str | Path, gguf_file: str | None = None) -> Model:
    """Open a Hugging Face folder (config.json, model.safetensors or a sharded index, a tokenizer),
    a GGUF file, or a model NAME: "gpt2", "Qwen/Qwen2.5-0.5B" from the local Hugging Face cache, an Ollama
    "NAME:TAG", an LM Studio "ORG/NAME" (`hub.resolve_model`; `gguf_file` picks one of a folder's GGUF files);
    a file of it that cannot be read (no permission, a link to nothing) is a ModelError naming it."""
    try:
        return _load_model(path, gguf_file)
    except OSError as e:
        raise ModelError(f"cannot read the model: {e.filename or path}: {e.strerror or e}") from None


def _load_model(path: str | Path, gguf_file: str | None) -> Model:
    found = resolve_model(path, gguf_file)
    if found.is_file():  # a GGUF file (anything else: one line saying it is not one)
        return _load_gguf(found, str(path))
    folder = found
    if not folder.is_dir():
        raise ModelError(f"model folder not found: {folder}" if not folder.exists() else f"not a folder: {folder}")
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise ModelError(f"no config.json in {folder}: not a Hugging Face model folder")
    config = json_object(folder, config_path.name)
    model_type = config.get("model_type")
    why = out_of_scope(config)
    if why is not None:
        raise ModelError(f"{config_path} ({model_type!r}) is {why}")
    family = family_of(model_type) if isinstance(model_type, str) else None
    if family is None or not isinstance(model_type, str):
        raise ModelError(f"unsupported model_type {model_type!r} in {config_path}; supported: {', '.join(SUPPORTED)}")
    _check_architectures(config, model_type, config_path)
    tensors = checkpoint(folder)
    check_declared(config, tensors, str(config_path))  # before the reader builds anything for those sizes
    hp, wanted = family.read_config(config)
    _check_hp(hp)
    # the output matrix, read only by a next-token run (network/unembed.py): the checkpoint's own when it has
    # one (transformers 5 does not tie a head saved with other values, whatever tie_word_embeddings says), else the
    # word table when tied, else none (a base model saved without its head)
    head = None if family.head is None else family.head[0]
    optional = ({head: (None, hp["d_model"])} if head else {}) | (family.decoder.optional if family.decoder else {})
    weights = open_weights(folder, tensors, wanted, family.word, optional, tables=(family.word, head))
    tokenizer = load_tokenizer(folder, family.vocab_files, config)
    tied = family.head is not None and config.get("tie_word_embeddings", family.head[1])
    unembed = head if head in weights else family.word if tied else None
    chat = folder_template(folder)
    return _model(folder, _display_name(folder), config, family, hp, weights, tokenizer, unembed, chat)


def _load_gguf(path: Path, given: str) -> Model:
    """A GGUF file (`gguf_model.gguf_parts`): its family's hyper-parameters, weights and tokenizer."""
    from attncli.models.opening.gguf_model import gguf_parts  # late: start-up (GGUF code only for a GGUF file)

    parts = gguf_parts(path)
    _check_hp(parts.hp)
    sources, unembed = parts.sources, None
    if parts.family.head is not None:  # llama.cpp's rule: the file's output.weight, else the token embeddings (tied)
        unembed = parts.family.head[0] if parts.family.head[0] in sources else parts.family.word
    weights = Weights(sources, parts.nbytes, tables=(parts.family.word, unembed))
    check_budget(weights.least(), str(path))  # before the tokenizer is built
    tokenizer = ContainedTokenizer(parts.tokenizer, f"the tokenizer of {path}")
    name = given if not Path(given).expanduser().exists() else path.name  # an Ollama name as the user wrote it
    return _model(path, name, parts.config, parts.family, parts.hp, weights, tokenizer, unembed, parts.chat_template)


def _check_hp(hp: dict) -> None:
    """The hyper-parameters every family shares: a known activation, heads that divide the width and each other."""
    if not isinstance(hp["activation"], str) or hp["activation"] not in ACTIVATION_FNS:
        raise ModelError(f"unsupported activation {hp['activation']!r}; supported: {', '.join(ACTIVATION_FNS)}")
    if "d_k" not in hp and hp["d_model"] % hp["n_head"]:
        raise ModelError(f"hidden size {hp['d_model']} is not divisible by {hp['n_head']} heads")
    n_kv_head = hp.get("n_kv_head", hp["n_head"])
    if hp["n_head"] % n_kv_head:
        raise ModelError(f"{hp['n_head']} attention heads are not divisible by {n_kv_head} key/value heads")


def _model(
    path: Path,
    name: str,
    config: dict,
    family: Family,
    hp: dict,
    weights: Weights,
    tokenizer: Any,
    unembed: str | None,
    chat_template: ChatTemplate | None,
) -> Model:
    start, vocab = hp.get("decoder_start"), weights.shape(family.word)[0]
    if start is not None and start >= vocab:
        raise ModelError(f"config.json: decoder_start_token_id {start:,} is not a token of the {vocab:,} in {path}")
    max_positions = hp["max_positions"]
    if family.positions is not None:
        max_positions = min(max_positions, weights.shape(family.positions)[0])
    return Model(
        path=path,
        name=name,
        model_type=config["model_type"],
        family=family,
        config=config,
        n_layer=hp["n_layer"],
        n_head=hp["n_head"],
        d_model=hp["d_model"],
        d_k=hp.get("d_k", hp["d_model"] // hp["n_head"]),
        n_kv_head=hp.get("n_kv_head", hp["n_head"]),
        max_positions=max_positions,
        causal=hp["causal"],
        eps=hp["eps"],
        activation=hp["activation"],
        hp=hp,
        weights=weights,
        tokenizer=tokenizer,
        vocab_size=vocab,
        unembed=unembed,
        chat_template=chat_template,
    )


def _check_architectures(config: dict, model_type: str, config_path: Path) -> None:
    """A config whose `architectures` belong to another model_type than its own: ModelError naming both.

    (A RoBERTa checkpoint labelled bert would run with BERT's positions and be silently wrong.)
    """
    names = config.get("architectures") or []
    for name in names if isinstance(names, list) else [names]:
        other = architecture_type(name) if isinstance(name, str) else None
        if other is not None and other != model_type:
            raise ModelError(
                f"{config_path} says model_type {model_type!r} but architectures {name!r}, a {other} model: "
                "refusing to guess which is right (fix one of the two)"
            )
