"""A model folder read as untrusted: bounded JSON, paths kept inside, sizes priced before they are allocated.

A folder from anywhere is data that can lie. Everything here is checked before the work it would cause:

- every JSON (config.json, tokenizer.json, tokenizer_config.json, the safetensors index) is read at most
  its cap of bytes (MAX_BYTES) and refused when it nests deeper than MAX_JSON_DEPTH, before it is parsed;
- a file the folder names (a shard of the index) and every file read from it stays inside the folder: no
  absolute path, no `..`, no symlink out (a Hugging Face cache snapshot may link into its own `blobs/`);
- the sizes config.json declares (layers, hidden size, heads, vocabulary) are checked against
  the tensors the checkpoint holds, read from the safetensors headers only, before anything is built
  for them; then the tensors a run reads, as float32, against ATTN_MAX_MEMORY;
- a tensor is checked finite when it is read, and named when it is not;
- the model's own tokenizer is loaded and run in a contained child (`attncli.pipeline.contain`), as a
  tokenizer.json given with `-t` is.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from attncli.models.files.hparams import ModelError
from attncli.models.files.tensorfile import TensorFileError, header_bytes
from attncli.pipeline.budget import ENV, machine_bytes, max_bytes_from
from attncli.pipeline.contain import contained
from attncli.pipeline.read import MAX_JSON_DEPTH, decode, human_bytes, json_depth, read_bounded
from attncli.pipeline.tokenize import MAX_TOKENIZER_BYTES

MAX_BYTES = {  # the largest real ones are a few KB (config), about 1 MB (index, tokenizer_config), tens of MB
    "config.json": 4 * 2**20,
    "tokenizer_config.json": 16 * 2**20,
    "model.safetensors.index.json": 16 * 2**20,
    "tokenizer.json": MAX_TOKENIZER_BYTES,
}
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")  # the tensors counted as weights (F16 and BF16 become float32)
_INDEX = re.compile(r"(?:^|\.)(\d+)(?=\.)")  # a layer index in a tensor name: encoder.layer.3.…, h.3.…


def why(e: BaseException) -> str:
    """An exception as one line."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# ---- paths ------------------------------------------------------------------------------------------------


def _roots(folder: Path) -> list[Path]:
    """Where a file of `folder` may resolve to: the folder, and for a Hugging Face cache snapshot its blobs."""
    real = folder.resolve()
    roots = [real]
    if real.parent.name == "snapshots" and real.parent.parent.name.startswith("models--"):
        roots.append(real.parent.parent / "blobs")
    return roots


def inside(folder: Path, name: str, what: str) -> Path:
    """`folder / name` when `name` is a plain relative path that stays inside the folder (symlinks resolved).

    >>> inside(Path("."), "../x.safetensors", "shard")
    Traceback (most recent call last):
    attncli.models.files.hparams.ModelError: shard '../x.safetensors' leaves the model folder: no '..' in a path
    """
    if not isinstance(name, str) or not name or "\x00" in name:
        raise ModelError(f"{what} {name!r} is not a file name")
    parts = Path(name).parts
    if not parts:  # "." or "./": the folder itself
        raise ModelError(f"{what} {name!r} is not a file name")
    if Path(name).is_absolute() or name.startswith("\\") or ":" in parts[0]:
        raise ModelError(f"{what} {name!r} is an absolute path; a model folder names its files relative to itself")
    if ".." in parts:
        raise ModelError(f"{what} {name!r} leaves the model folder: no '..' in a path")
    return within(_roots(folder), folder / name, f"{what} {name!r} in {folder}", "the model folder")


def within(roots: list[Path], path: Path, what: str, where: str) -> Path:
    """`path` when, every link followed, it is one of `roots` (resolved) or inside one; else ModelError saying
    where it leads. The one rule of every model store and folder (a name the data gives, a folder, a link in it):
    nothing is read outside through a link; a store's own root may be a link, since roots are resolved first.

    >>> within([Path("/tmp")], Path("/etc/passwd"), "the file /etc/passwd", "/tmp")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    attncli.models.files.hparams.ModelError: the file /etc/passwd leads to /etc/passwd, outside /tmp: ...
    """
    real, tops = path.resolve(), [root.resolve() for root in roots]
    if not any(real == top or top in real.parents for top in tops):
        raise ModelError(
            f"{what} leads to {real}, outside {where}: attn follows no link out of a model store or folder "
            f"(to open that file itself, give its path: --model {real})"
        )
    return path


# ---- JSON -------------------------------------------------------------------------------------------------


def read_bytes(folder: Path, name: str, limit: int) -> bytes:
    """The bytes of `folder/name`, at most `limit` (a bigger file, a FIFO or /dev/zero ends here)."""
    path = inside(folder, name, "file")
    if not path.is_file():
        raise ModelError(f"{path} is not a regular file")
    try:
        with open(path, "rb") as f:
            return read_bounded(f, str(path), f"a {name} is never this large", limit)
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror or e}") from None


def json_text(folder: Path, name: str, limit: int | None = None) -> str:
    """The text of the JSON `folder/name`, unparsed, once its size (`limit`, else by its name: MAX_BYTES) and nesting
    (MAX_JSON_DEPTH) passed."""
    data = read_bytes(folder, name, limit or MAX_BYTES.get(name, MAX_BYTES["config.json"]))
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise ModelError(f"{folder / name} nests {depth:,} levels deep, more than the {MAX_JSON_DEPTH} attn reads")
    return decode(data, str(folder / name))


def read_json(folder: Path, name: str, limit: int | None = None) -> Any:
    """`folder/name` parsed, after its size (`limit`, else by its name) and nesting were checked (`json_text`)."""
    import json  # late: start-up (json only when a model's files are read)

    text = json_text(folder, name, limit)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ModelError(f"cannot read {folder / name}: {why(e)}") from None


def json_object(folder: Path, name: str) -> dict:
    """`read_json` that must give an object."""
    data = read_json(folder, name)
    if not isinstance(data, dict):
        raise ModelError(f"{folder / name} is not a JSON object")
    return data


# ---- the checkpoint: names, files, dtypes and shapes from the headers ------------------------------------


BIN_TO_SAFETENSORS = (  # the conversion, run where the model and torch already are: nothing is downloaded
    'convert it in that folder, where torch is installed: python -c "import torch; '
    "from safetensors.torch import save_file; "
    "sd = torch.load('pytorch_model.bin', map_location='cpu', weights_only=True); "
    "save_file({k: v.clone().contiguous() for k, v in sd.items()}, 'model.safetensors', metadata={'format': 'pt'})\""
)


Header = dict[str, tuple[Path, str, tuple[int, ...]]]  # stored name -> (file, dtype, shape)


def _header(path: Path, names: set[str] | None = None) -> Header:
    """The tensors of one safetensors file from its header (nothing else is read), or those of `names`."""
    from safetensors import SafetensorError, safe_open  # late: start-up (safetensors only when weights are read)

    try:
        with open(path, "rb") as fh:  # its own OSError (EACCES: permission denied), and the header's bounds
            header_bytes(fh)  # before safetensors parses it
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror or why(e)}") from None
    except TensorFileError as e:
        raise ModelError(f"cannot read {path}: {e}") from None
    try:
        with safe_open(str(path), framework="np") as f:
            out = {}
            for key in f.keys():  # noqa: SIM118  (safe_open is not a dict)
                if names is None or key in names:
                    s = f.get_slice(key)
                    out[key] = (path, s.get_dtype(), tuple(int(n) for n in s.get_shape()))
            return out
    except (OSError, SafetensorError, ValueError) as e:
        raise ModelError(f"cannot read {path}: {why(e)}") from None


def checkpoint(folder: Path) -> Header:
    """Every stored tensor of model.safetensors, or of the shards model.safetensors.index.json names."""
    single, index = folder / "model.safetensors", "model.safetensors.index.json"
    if single.is_file():
        return _header(inside(folder, single.name, "weights file"))
    if (folder / index).is_file():
        weight_map = json_object(folder, index).get("weight_map")
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise ModelError(f"{folder / index} has no weight_map of tensor names to shard files")
        shards: dict[str, set[str]] = {}
        for name, shard in weight_map.items():
            shards.setdefault(shard, set()).add(name)
        found: Header = {}
        for shard, names in shards.items():
            path = inside(folder, shard, f"{index} names shard")
            if not path.is_file():
                raise ModelError(f"{index} names shard {shard}, which is not in {folder}")
            found |= _header(path, names)
        lost = sorted(set(weight_map) - set(found))
        if lost:
            raise ModelError(f"{index} puts {lost[0]} in {weight_map[lost[0]]}, which does not hold it")
        return found
    found_other = [p.name for p in sorted(folder.glob("*.bin")) + sorted(folder.glob("*.h5"))]
    hint = f" (found {found_other[0]}: convert it to safetensors, PyTorch is not used)" if found_other else ""
    if "pytorch_model.bin" in found_other:
        hint = f" (found pytorch_model.bin, which attn does not read: {BIN_TO_SAFETENSORS})"
    raise ModelError(f"no weights in {folder}: need model.safetensors or model.safetensors.index.json{hint}")


# ---- declared sizes against what is there -----------------------------------------------------------------

# The names Hugging Face configs give each size (transformers' attribute_map: BERT's, GPT-2's, Llama's and the
# like). Positions are not here: a learned table bounds them (Model.max_positions), rotary ones cost nothing
# until a text is priced by its tokens (check_run).
DECLARED = {
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden size": ("hidden_size", "n_embd", "d_model"),
    "heads": ("num_attention_heads", "n_head", "num_key_value_heads"),
    "vocabulary": ("vocab_size",),
    "intermediate size": ("intermediate_size", "n_inner"),
    "head size": ("head_dim",),  # RoPE's tables are as wide: checked before the reader builds them
}


def check_declared(config: dict, tensors: Header, source: str) -> None:
    """Each size config.json declares must be one the tensors could hold: no more layers than there are tensors,
    no size above the largest dimension of a tensor. Run before anything is built for them (a family's reader
    then names a tensor that is missing or has the wrong shape).
    """
    layers = {int(m) for name in tensors for m in _INDEX.findall(name)}
    largest = max((n for _, _, shape in tensors.values() for n in shape), default=0)
    for size, keys in DECLARED.items():
        for key in keys:
            value = config.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                continue  # absent, or wrong: the family's own reader names it
            if size == "layers" and value > len(tensors):
                raise ModelError(
                    f"{source} declares {value:,} layers ({key}), but the weights hold {len(tensors):,} tensors "
                    f"numbering {len(layers)} layers: a wrong config.json, or weights of another model"
                )
            if value > largest:
                raise ModelError(
                    f"{source} declares {size} {value:,} ({key}), but no tensor in the weights has a dimension "
                    f"that large (the largest is {largest:,})"
                )


def float32_bytes(tensors: Header, names: list[str]) -> int:
    """The bytes of the tensors `names` as float32 (the whole model, kept whole)."""
    return sum(4 * math.prod(tensors[n][2]) for n in names if n in tensors)


def check_budget(least: int, what: str) -> None:
    """The weights a pass holds at least (`Weights.least`: the tensors of no layer, the largest layer streamed, a
    chunk of the word table and the head) against ATTN_MAX_MEMORY: a file that declares a layer larger than the
    budget is refused here, before anything of that size exists."""
    budget = max_bytes_from(os.environ)
    if budget is not None and least > budget:
        raise ModelError(
            f"{what} needs {human_bytes(least)} for its weights as float32, more than {ENV} ({human_bytes(budget)}) "
            f"even a layer at a time: raise {ENV} if the machine has the memory"
        )


def check_run(weights_bytes: int, n_layer: int, n_head: int, d_model: int, n: int, what: str) -> int | None:
    """A forward pass over `n` tokens against ATTN_MAX_MEMORY and what the machine can give (budget.py's
    `machine_bytes`: its memory, `ulimit -v`): the weights it holds at least (`Weights.least`), and per layer the
    scores, the weights and the masked scores of every head ([n_head, n, n] float32 each) and a few [n, 4 d_model]
    arrays (the stream, the MLP's, the KV cache). -> the bytes left for weights (`Weights.fit`; None: no limit)."""
    arrays = n_layer * (3 * n_head * n * n + 8 * n * d_model) * 4
    need = weights_bytes + arrays
    budget, machine = max_bytes_from(os.environ), machine_bytes()
    if budget is not None and need > budget:
        raise ModelError(
            f"{what} on {n:,} tokens needs about {human_bytes(need)}, more than {ENV} ({human_bytes(budget)}): "
            f"a shorter text, or raise {ENV}"
        )
    if machine is not None and need > machine.bytes:
        raise ModelError(
            f"{what} on {n:,} tokens needs about {human_bytes(need)}, more than this machine can give "
            f"({human_bytes(machine.bytes)}: {machine.what}): a shorter text, or a smaller model"
        )
    limits = [b for b in (budget, None if machine is None else machine.bytes) if b is not None]
    return min(limits) - arrays if limits else None


def finite(array: np.ndarray, name: str, where: str) -> np.ndarray:
    """`array` itself, or ModelError naming the tensor when it holds NaN or an infinity."""
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ModelError(
            f"{name} in {where} holds {array[tuple(bad)]} at {list(bad.tolist())}: the weights are damaged"
        )
    return array


# ---- the tokenizer, contained -----------------------------------------------------------------------------


class ContainedTokenizer:
    """A model's tokenizer (a `tokenizers.Tokenizer`, built by `build()`) that runs in a contained child.

    Built once in a child first: a file that panics, aborts, runs away or needs more than ATTN_MAX_MEMORY
    while it is loaded ends there as one line. Then it is built here too (for its vocabulary and special
    tokens), and every `encode` runs in a child forked from this process, under the same limits.
    """

    def __init__(self, build: Callable[[], Any], what: str):
        # mapped here, before the fork, so that the child's memory is the tokenizer's alone
        import tokenizers  # noqa: F401  # late: start-up (tokenizers: a model's only)

        self.what = what
        contained(_vocab_size, build, what=what, memory=max_bytes_from(os.environ), errors=(ModelError,))
        self.tokenizer = build()

    def encode(self, texts: list[str | tuple[str, str]], ends: bool = True) -> list[dict | str]:
        """Each text's (or `(text, pair)`'s) `{"ids", "tokens", "offsets", "types", "special", "second"}`, or the
        one line of why the tokenizer could not encode it; `ends`: with the special tokens the tokenizer adds
        around a text (BOS, [CLS] ... [SEP]), not for a chat its template wrote whole (chat.py)."""
        memory = max_bytes_from(os.environ)
        return contained(_encode_all, self.tokenizer, texts, ends, what=self.what, memory=memory)

    def __getattr__(self, name: str) -> Any:  # vocabulary, special tokens, the model: the tokenizer's own
        return getattr(self.__dict__["tokenizer"], name)


def _vocab_size(build: Callable[[], Any]) -> int:  # in the child
    return build().get_vocab_size(with_added_tokens=True)


def _encode_all(tok: Any, texts: list[str | tuple[str, str]], ends: bool) -> list[dict | str]:  # in the child
    out: list[dict | str] = []
    for text in texts:
        try:
            pair = (text,) if isinstance(text, str) else text
            enc = tok.encode(*pair, add_special_tokens=ends)
        except Exception as e:  # a model without [UNK] meets an unknown character, and the like
            out.append(why(e))
            continue
        second = None if isinstance(text, str) else next((i for i, s in enumerate(enc.sequence_ids) if s == 1), None)
        out.append(
            {
                "ids": enc.ids,
                "tokens": enc.tokens,
                "offsets": [list(o) for o in enc.offsets],
                "types": enc.type_ids,
                "special": [bool(m) for m in enc.special_tokens_mask],
                "second": second,  # a pair: the index of its second segment's first token
            }
        )
    return out
