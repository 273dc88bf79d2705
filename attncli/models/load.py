"""Read a Hugging Face model folder: config.json, safetensors weights, the model's own tokenizer.

A folder is a `Model` (model.py): its family (attncli/models/families/), its hyper-parameters, its
weights (read lazily from the safetensors files by tensorfile.py, one tensor at a time, kept
once read; F32, F16, BF16 and F64 all become float32) and its tokenizer. Nothing here imports
PyTorch; `tokenizers` is imported inside the functions that need it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attncli.errors import ConfigError

from .blocks import ACTIVATION_FNS
from .families import Family, architecture_type, family_of, model_types, out_of_scope
from .folder import (
    ContainedTokenizer,
    Header,
    check_budget,
    check_declared,
    check_run,
    checkpoint,
    inside,
    json_object,
    json_text,
)
from .hparams import ModelError
from .hub import resolve_model
from .model import Model, Weights
from .tensorfile import TensorFile, TensorFileError

SUPPORTED = tuple(model_types())  # every config.json model_type some family serves


def _why(e: Exception) -> str:  # an exception as one line
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _open_weights(
    folder: Path, tensors: Header, wanted: dict[str, tuple[int | None, ...]], anchor: str, optional: dict | None = None
) -> Weights:
    """Open the checkpoint and check that every wanted tensor is there with the wanted shape; the `optional` ones
    (a decoder's untied output head) are opened, checked, when the file has them, by their names outside the prefix.

    Names are matched after removing the prefix found in front of `anchor` (`bert.`,
    `transformer.`, or none); everything else in the file (pooler, heads, int64 position_ids,
    GPT-2's attn.bias masks) is never read. `None` in a wanted shape accepts any size.
    """
    files = {name: path for name, (path, _, _) in tensors.items()}
    prefixes = [name[: -len(anchor)] for name in files if name.endswith(anchor)]
    if not prefixes:
        raise ModelError(f"the weights in {folder} have no {anchor}: not a checkpoint of this model type")
    prefix = min(prefixes, key=len)  # "" before "bert."
    names = {name[len(prefix) :]: name for name in files if name.startswith(prefix)}
    names.update({k[:-6] + ".weight": v for k, v in names.items() if k.endswith("LayerNorm.gamma")})
    names.update({k[:-5] + ".bias": v for k, v in names.items() if k.endswith("LayerNorm.beta")})
    for name in (optional or {}).keys() & files.keys():
        names.setdefault(name, name)
    wanted = wanted | {name: shape for name, shape in (optional or {}).items() if name in names}
    handles: dict[Path, Any] = {}
    sources = {}
    for name, shape in wanted.items():
        if name not in names:
            raise ModelError(f"the weights in {folder} lack {prefix + name}")
        path = files[names[name]]
        if path not in handles:
            try:
                handles[path] = TensorFile(path)
            except (OSError, TensorFileError) as e:
                raise ModelError(f"cannot read {path}: {_why(e)}") from None
        sliced = handles[path].get_slice(names[name])
        dtype, got = sliced.get_dtype(), tuple(sliced.get_shape())
        if dtype not in ("F32", "F16", "BF16", "F64"):
            raise ModelError(f"{prefix + name} is {dtype}; only F32, F16, BF16 and F64 weights are supported")
        if len(got) != len(shape) or any(w is not None and w != g for w, g in zip(shape, got)):
            want = "[" + ", ".join("*" if w is None else str(w) for w in shape) + "]"
            raise ModelError(f"{prefix + name} has shape {list(got)}, config.json implies {want}")
        sources[name] = (handles[path], names[name])
    return Weights(sources, check_budget(tensors, [names[n] for n in wanted], str(folder)))


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
    head = None
    if family.head is not None and not config.get("tie_word_embeddings", family.head[1]):
        head = family.head[0]  # the untied output matrix, read only by a next-token run (attncli.models.head)
    weights = _open_weights(folder, tensors, wanted, family.word, {head: (None, hp["d_model"])} if head else None)
    tokenizer = _load_tokenizer(folder, family, config)
    unembed = family.word if family.head is not None and head is None else head if head in weights else None
    return _model(folder, _display_name(folder), config, family, hp, weights, tokenizer, unembed)


def _load_gguf(path: Path, given: str) -> Model:
    """A GGUF file (`gguf_model.gguf_parts`): its family's hyper-parameters, weights and tokenizer."""
    from .gguf_model import gguf_parts  # late: start-up (GGUF code only for a GGUF file)

    parts = gguf_parts(path)
    _check_hp(parts.hp)
    sources, unembed = dict(parts.sources), None
    if parts.family.head is not None:  # llama.cpp's rule: the file's output.weight, else the token embeddings (tied)
        handle = next(iter(sources.values()))[0]
        if "output.weight" in handle.tensors.names():
            sources[parts.family.head[0]] = (handle, "output.weight")
        unembed = parts.family.head[0] if parts.family.head[0] in sources else parts.family.word
    weights = Weights(sources, parts.nbytes)
    tokenizer = ContainedTokenizer(parts.tokenizer, f"the tokenizer of {path}")
    name = given if not Path(given).expanduser().exists() else path.name  # an Ollama name as the user wrote it
    return _model(path, name, parts.config, parts.family, parts.hp, weights, tokenizer, unembed)


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
    path: Path, name: str, config: dict, family: Family, hp: dict, weights: Weights, tokenizer: Any, unembed: str | None
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


# ---- tokenizer ------------------------------------------------------------------------------------


def _read_json(path: Path) -> dict:
    return json_object(path.parent, path.name) if path.is_file() else {}


def _special(tok_config: dict, key: str, default: str) -> str:
    value = tok_config.get(key, default)
    return value.get("content", default) if isinstance(value, dict) else str(value)


def _wordpiece_from_vocab(folder: Path, config: dict) -> Any:
    """BERT's tokenizer from vocab.txt, as transformers' BertTokenizerFast builds it."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors  # late: start-up (tokenizer building)
    from tokenizers.models import WordPiece

    tok_config = _read_json(folder / "tokenizer_config.json")
    lower = tok_config.get("do_lower_case", config.get("do_lower_case", True))
    cls, sep = _special(tok_config, "cls_token", "[CLS]"), _special(tok_config, "sep_token", "[SEP]")
    unk = _special(tok_config, "unk_token", "[UNK]")
    try:
        vocab = WordPiece.read_file(str(folder / "vocab.txt"))
    except Exception as e:
        raise ModelError(f"cannot read {folder / 'vocab.txt'}: {_why(e)}") from None
    missing = [t for t in (cls, sep, unk) if t not in vocab]
    if missing:
        raise ModelError(f"{folder / 'vocab.txt'} lacks the special token {missing[0]}")
    tok = Tokenizer(WordPiece(vocab, unk_token=unk, continuing_subword_prefix="##", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=tok_config.get("strip_accents"), lowercase=bool(lower)
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])],
    )
    pad, mask = _special(tok_config, "pad_token", "[PAD]"), _special(tok_config, "mask_token", "[MASK]")
    tok.add_special_tokens([t for t in (pad, unk, cls, sep, mask) if t in vocab])
    return tok


def _byte_level_bpe(folder: Path) -> Any:
    """GPT-2's tokenizer from vocab.json and merges.txt, as transformers' GPT2TokenizerFast builds it."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors  # late: start-up (tokenizer building)
    from tokenizers.models import BPE

    try:
        tok = Tokenizer(BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt")))
    except Exception as e:
        raise ModelError(f"cannot read vocab.json/merges.txt in {folder}: {_why(e)}") from None
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


_VOCAB_FILES = {  # a family's vocab_files -> (the files, the tokenizer built from them)
    "vocab.txt": (("vocab.txt",), lambda folder, config: _wordpiece_from_vocab(folder, config)),
    "vocab.json + merges.txt": (("vocab.json", "merges.txt"), lambda folder, config: _byte_level_bpe(folder)),
}


def _load_tokenizer(folder: Path, family: Family, config: dict) -> Any:
    """tokenizer.json if present, else the family's vocab_files (BERT: vocab.txt, GPT-2: vocab.json + merges.txt).

    Padding and truncation are switched off: one text is never padded, and a text longer
    than the model's positions is an error in `encode` (transformers does not apply a
    tokenizer.json's own truncation either unless asked).
    """
    path = folder / "tokenizer.json"
    if path.is_file():
        text = json_text(folder, path.name)

        def build() -> Any:
            from tokenizers import Tokenizer  # late: start-up (tokenizer building)

            try:
                tok = Tokenizer.from_str(text)
            except Exception as e:
                raise ModelError(f"cannot read {path}: {_why(e)}") from None
            tok.no_padding()
            tok.no_truncation()
            return tok

    elif family.vocab_files and all((folder / f).is_file() for f in _VOCAB_FILES[family.vocab_files][0]):
        files, make = _VOCAB_FILES[family.vocab_files]
        for name in files:
            inside(folder, name, "tokenizer file")

        def build() -> Any:
            tok = make(folder, config)
            tok.no_padding()
            tok.no_truncation()
            return tok

    else:
        other = f" or {family.vocab_files}" if family.vocab_files else ""
        raise ModelError(f"no tokenizer in {folder}: need tokenizer.json{other}")
    return ContainedTokenizer(build, f"the tokenizer of {folder}")


@dataclass(frozen=True)
class ModelTokens:
    """A text (or a pair) as the model's tokenizer cuts it: parallel tuples, special tokens included."""

    strings: tuple[str, ...]  # the tokenizer's own strings: "[CLS]", "##s", "Ġtime"
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]  # character offsets into the text (or the pair's second text)
    types: tuple[int, ...]  # token type ids: 0, and 1 for a pair's second segment where the model has types
    special: tuple[bool, ...]  # added by the tokenizer ([CLS], [SEP], <s>, BOS), not cut from the text
    second: int | None = None  # a pair: the index of the second segment's first token

    def __len__(self) -> int:
        return len(self.ids)


PROBE_CHARS_PER_POSITION = 16  # a long text is first tokenized as a prefix of 16 characters per position


def _answer(model: Model, enc: dict | str) -> dict:
    """One answer of the contained tokenizer: the encoding, or ModelError with the tokenizer's reason."""
    if isinstance(enc, str):
        raise ModelError(f"the tokenizer of {model.name} cannot encode this text: {enc}")
    return enc


def _encoded(model: Model, text: str, pair: str | None = None) -> dict:
    """`text` (and a second text `pair`, with the tokenizer's pair template) through the model's tokenizer, run
    contained: {"ids", "tokens", "offsets", "types", "special", "second"}."""
    return _answer(model, model.tokenizer.encode([text if pair is None else (text, pair)])[0])


def _counted(model: Model, text: str, what: str = "text") -> None:
    """A text longer than PROBE_CHARS_PER_POSITION characters per position is first counted on such a prefix
    (cut where a word ends): more tokens there than positions, and the rest is never tokenized."""
    probe = PROBE_CHARS_PER_POSITION * model.max_positions
    if len(text) > probe:
        space = text.rfind(" ", probe // 2, probe)
        prefix = text[: space if space > 0 else probe]
        count = len(_encoded(model, prefix)["ids"])
        if count > model.max_positions + 1:  # + 1: a word cut in two may make one token more
            raise ModelError(
                f"the {what} is more than {model.max_positions} tokens long (its first {len(prefix):,} of "
                f"{len(text):,} characters make {count}), but {model.name} takes at most {model.max_positions} "
                f"({model.hp['positions_key']})"
            )


def _tokens(model: Model, enc: dict, pair: str | None = None, what: str = "text") -> ModelTokens:
    """An encoding checked: some tokens, no more than the positions, ids inside the table, the run priced."""
    n = len(enc["ids"])
    if n == 0:
        raise ModelError(f"the {what} gives no tokens for {model.name}")
    if n > model.max_positions:
        what = what if pair is None else "pair"
        raise ModelError(
            f"the {what} is {n} tokens long, but {model.name} takes at most {model.max_positions} "
            f"({model.hp['positions_key']})"
        )
    bad = [i for i in enc["ids"] if i >= model.vocab_size]
    if bad:
        raise ModelError(f"token id {bad[0]} is outside the embedding table of {model.name} ({model.vocab_size} rows)")
    second = None
    if pair is not None:
        second = enc["second"]
        if second is None:
            raise ModelError(f"the context gives no tokens for {model.name}")
    check_run(model.weights.nbytes, model.n_layer, model.n_head, model.d_model, n, model.name)
    return ModelTokens(
        tuple(enc["tokens"]),
        tuple(enc["ids"]),
        tuple((int(a), int(b)) for a, b in enc["offsets"]),
        tuple(enc["types"]),
        tuple(bool(m) for m in enc["special"]),
        second,
    )


def encode(model: Model, text: str, pair: str | None = None, what: str = "text") -> ModelTokens:
    """Tokenize `text` (and a second text `pair`) with the model's tokenizer (contained); an error if it gives
    no tokens or more than the positions. A long text is counted on a prefix first (`_counted`), and the run is
    priced (`check_run`) before the forward pass allocates. `what` names `text` in the messages ("context": an
    encoder–decoder's source)."""
    _counted(model, text, what)
    if pair is not None:
        _counted(model, pair, "context")
    return _tokens(model, _encoded(model, text, pair), pair, what)


def encode_many(model: Model, texts: list[str]) -> list[ModelTokens | ModelError]:
    """`encode` for many texts, the short ones in one contained child (a corpus chunk; a long one is counted
    on its prefix first, alone): each its tokens or its ModelError."""
    probe = PROBE_CHARS_PER_POSITION * model.max_positions
    short: list[str | tuple[str, str]] = [t for t in texts if len(t) <= probe]
    answers = iter(model.tokenizer.encode(short) if short else [])
    out: list[ModelTokens | ModelError] = []
    for text in texts:
        try:
            out.append(_tokens(model, _answer(model, next(answers))) if len(text) <= probe else encode(model, text))
        except ModelError as e:
            out.append(e)
    return out


def check_layer(model: Model, layer: int) -> int:
    """`layer` as an index 0..n_layer-1 (negative counts from the end), or ConfigError naming the range."""
    if not -model.n_layer <= layer < model.n_layer:
        raise ConfigError(
            f"layer {layer} is out of range: {model.name} has {model.n_layer} layers, 0..{model.n_layer - 1}"
        )
    return layer % model.n_layer


def check_head(model: Model, head: int) -> int:
    """`head` as an index 0..n_head-1 (negative counts from the end), or ConfigError naming the range."""
    if not -model.n_head <= head < model.n_head:
        raise ConfigError(
            f"head {head} is out of range: {model.name} has {model.n_head} heads per layer, 0..{model.n_head - 1}"
        )
    return head % model.n_head
