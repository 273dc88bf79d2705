"""`attn models`: every model attn can open on this machine, found offline, each read no further than its header.

Where it looks (SOURCES, in this order): the Hugging Face caches (`hub.hub_caches`) and llama.cpp's (`llamacpp.py`,
both layouts), Ollama's store, LM Studio's, and the folders given (`--path DIR`: DIR itself, its GGUF files, and
the model folders one level below it). Each model is one row:

    {"name": "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M", "source": "ollama", "path": ".../sha256-...",
     "family": "llama", "parameters": 134515008, "quant": "Q4_K_M", "bytes": 105454592, "supported": true,
     "why": null}

`name` is what `--model` takes (a name that needs `--gguf-file FILE` says so); `family` the GGUF architecture or
config.json's model_type; `parameters` the number of stored weights, counted from the tensor table or the
safetensors header; `quant` the GGUF file type (llama.cpp's LLAMA_FTYPE, else its most common tensor type) or the
safetensors dtype; `bytes` the file's size (a folder: its weight files'); `supported` whether attn opens it as it
stands, and `why` not in one line. A GGUF is checked as `--model` would check it (`gguf_model.gguf_parts`: its
header, architecture, tensors and memory budget; no weight is read); a folder by its config.json and its
safetensors header. Every store is walked without following a link down, at most LIMIT entries each (a listing
stopped there says so), and every file found is resolved as `--model` resolves it: never a link out of its store.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attncli.models.files.folder import checkpoint, inside, json_object
from attncli.models.files.hparams import ModelError
from attncli.models.network.families import family_of
from attncli.models.network.families.registry import out_of_scope
from attncli.models.opening.hub import cached_repos
from attncli.models.opening.llamacpp import llamacpp_cache, llamacpp_file, llamacpp_names, quant_file
from attncli.models.opening.stores import ggufs, lmstudio_models, ollama_blob, ollama_names

LIMIT = 10_000  # entries of one store looked at: a real store holds tens of models
QUANT_IN_NAME = re.compile(r"(?<![A-Za-z0-9])(I?Q\d_?\w*?|TQ\d_\d|MXFP4|BF16|F16|F32)(?=[.-]|$)", re.IGNORECASE)


@dataclass(frozen=True)
class Found:
    """A model a store holds: its name as `--model` takes it, the source, and its file or folder (or the error
    resolving it: a manifest naming a missing blob, a link out of the store)."""

    name: str
    source: str
    path: Path | None
    error: str | None = None


def _folder_models(name: str, source: str, folder: Path, files: list[Path]) -> list[Found]:
    """A folder's model: itself when it holds config.json, else each of its GGUF files (named `name` when it is
    the only one, `name:QUANT` when the quant picks it, else with --gguf-file)."""
    if (folder / "config.json").is_file():
        return [Found(name, source, folder)]
    out = []
    for f in files:
        try:
            path = inside(folder, f.name, "the GGUF file")
        except ModelError as e:
            out.append(Found(name if len(files) == 1 else f"{name} --gguf-file {f.name}", source, None, str(e)))
            continue
        if len(files) == 1:
            out.append(Found(name, source, path))
            continue
        tag = QUANT_IN_NAME.search(f.stem)
        try:
            picked = quant_file(files, tag.group(1), name) if tag and ":" not in name else None
        except ModelError:
            picked = None
        shown = f"{name}:{tag.group(1)}" if tag and picked == f else f"{name} --gguf-file {f.name}"
        out.append(Found(shown, source, path))
    return out


def _caches(paths: Sequence[Path]) -> tuple[list[Found], bool]:
    repos, cut = cached_repos(LIMIT)
    found: list[Found] = []
    for repo, snap, cache in repos:
        source = "llama.cpp" if cache == llamacpp_cache() else "huggingface"
        if isinstance(snap, str):  # why its snapshot cannot be read
            found.append(Found(repo, source, None, snap))
            continue
        found += _folder_models(repo, source, snap, ggufs(snap))
    return found, cut


def _resolved(name: str, source: str, resolve: Callable[[str], Path | None]) -> Found:
    try:
        return Found(name, source, resolve(name))
    except (ModelError, OSError) as e:
        return Found(name, source, None, str(e) if isinstance(e, ModelError) else f"cannot read it: {e}")


def _ollama(paths: Sequence[Path]) -> tuple[list[Found], bool]:
    names, cut = ollama_names(LIMIT)
    return [_resolved(n, "ollama", ollama_blob) for n in names], cut


def _lmstudio(paths: Sequence[Path]) -> tuple[list[Found], bool]:
    models, cut = lmstudio_models(LIMIT)
    found = []
    for name, files in models:
        found += _folder_models(name, "lmstudio", files[0].parent, files)
    return found, cut


def _llamacpp_flat(paths: Sequence[Path]) -> tuple[list[Found], bool]:
    names, cut = llamacpp_names(LIMIT)
    return [_resolved(n, "llama.cpp", llamacpp_file) for n in names], cut


def _paths(paths: Sequence[Path]) -> tuple[list[Found], bool]:
    found, cut = [], False
    for top in paths:
        if top.is_file():
            found.append(Found(str(top), "path", top))
            continue
        if not top.is_dir():
            found.append(Found(str(top), "path", None, f"{top} is neither a folder nor a file"))
            continue
        folders = [top]
        try:
            below = sorted(p for p in top.iterdir() if p.is_dir() and not p.is_symlink())
            cut, folders = cut or len(below) > LIMIT, folders + below[:LIMIT]
        except OSError as e:
            found.append(Found(str(top), "path", None, f"cannot read {top}: {e.strerror or e}"))
        for folder in folders:
            files = ggufs(folder)
            if (folder / "config.json").is_file() or files:
                found += _folder_models(str(folder), "path", folder, files)
    return found, cut


SOURCES: dict[str, Callable[[Sequence[Path]], tuple[list[Found], bool]]] = {  # source -> its lister, in order
    "huggingface": _caches,  # and llama.cpp's cache laid out as the Hugging Face cache: rows say which
    "ollama": _ollama,
    "lmstudio": _lmstudio,
    "llama.cpp": _llamacpp_flat,
    "path": _paths,
}


def installed(paths: Sequence[Path] = ()) -> tuple[list[dict], list[str]]:
    """Every model of every source (SOURCES), one row each (see the module's docstring), and a note for each
    listing stopped at LIMIT entries."""
    rows, notes = [], []
    for source, lister in SOURCES.items():
        found, cut = lister(paths)
        rows += [row_of(f) for f in found]
        if cut:
            notes.append(f"{source}: the listing stopped after {LIMIT:,} entries; the rest are not shown")
    return rows, notes


def row_of(found: Found) -> dict:
    """One row for `found`: its header read (a GGUF's metadata and tensor table, a folder's config.json and
    safetensors header), and whether attn opens it, and why not."""
    row: dict[str, Any] = {"name": found.name, "source": found.source}
    row["path"] = None if found.path is None else str(found.path)
    row |= {"family": None, "parameters": None, "quant": None, "bytes": None, "supported": False, "why": found.error}
    if found.path is None:
        return row
    try:
        row |= _gguf(found.path) if found.path.is_file() else _folder(found.path)
    except ModelError as e:
        row["why"] = str(e)
    except OSError as e:
        row["why"] = f"cannot read {found.path}: {e.strerror or e}"
    if row["why"] is not None:  # the path is the row's own column: the reason says "the file" ("the folder")
        row["why"] = row["why"].replace(str(found.path), "the file" if found.path.is_file() else "the folder")
    return row


def _gguf(path: Path) -> dict:
    from attncli.models.files.gguf import open_gguf  # late: start-up (the GGUF reader: only a GGUF listed)
    from attncli.models.opening.gguf_model import gguf_parts

    meta, tensors = open_gguf(path)
    names = tensors.names()
    out: dict[str, Any] = {"bytes": path.stat().st_size, "family": meta.get("general.architecture")}
    out["parameters"] = sum(math.prod(tensors.shape(n)) for n in names)
    out["quant"] = _file_type(meta.get("general.file_type")) or _most_common(tensors.type_name(n) for n in names)
    try:
        gguf_parts(path)  # every check --model makes before reading a weight
    except ModelError as e:
        return out | {"why": str(e)}
    return out | {"supported": True}


def _file_type(value: object) -> str | None:
    """llama.cpp's general.file_type as its quant name ("Q4_K_M"), or None when it is not one."""
    from gguf import LlamaFileType  # late: optional (gguf, the gguf extra)

    try:
        name = LlamaFileType(value).name if isinstance(value, int) and not isinstance(value, bool) else None
    except ValueError:
        return None
    return None if name in (None, "GUESSED") else name.removeprefix("MOSTLY_").removeprefix("ALL_")


def _most_common(kinds: Iterable[str]) -> str | None:
    counts = Counter(kinds)
    return counts.most_common(1)[0][0] if counts else None


def _folder(folder: Path) -> dict:
    config = json_object(folder, "config.json")
    model_type = config.get("model_type")
    header = checkpoint(folder)
    out: dict[str, Any] = {"family": model_type if isinstance(model_type, str) else None}
    out["parameters"] = sum(math.prod(shape) for *_, shape in header.values())
    out["quant"] = _most_common(dtype for _, dtype, _ in header.values())
    out["bytes"] = sum(p.stat().st_size for p in folder.glob("*.safetensors") if p.is_file())
    why = out_of_scope(config)
    if why is None and (not isinstance(model_type, str) or family_of(model_type) is None):
        why = f"its model_type {model_type!r} is not one attn runs"
    return out | {"supported": why is None, "why": None if why is None else f"config.json: {why}"}
