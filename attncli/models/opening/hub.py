"""`--model NAME`: a Hugging Face model name found in the local Hugging Face cache, never downloaded.

The caches searched, in order: HF_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub and
~/.cache/huggingface/hub (huggingface_hub's own precedence); a model `Org/Name` lives in
models--Org--Name/, whose refs/main names the snapshot (snapshots/<commit>/) holding its files.

    resolve_model("Qwen/Qwen2.5-0.5B")   # ~/.cache/huggingface/hub/models--Qwen--Qwen2.5-0.5B/snapshots/<commit>
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from attncli.errors import ConfigError
from attncli.models.files.folder import within
from attncli.models.files.hparams import ModelError
from attncli.models.opening import stores
from attncli.models.opening.llamacpp import TAGGED, llamacpp_cache, llamacpp_file, quant_file
from attncli.models.opening.stores import (
    OLLAMA_NAME,
    gguf_in,
    lmstudio_folder,
    lmstudio_store,
    ollama_blob,
    ollama_store,
)

FILE_SUFFIXES = (".gguf", ".safetensors", ".bin")  # a --model ending so names a file, never a store's model name
REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?")  # "gpt2", "Qwen/Qwen2.5-0.5B"


def hub_caches() -> list[Path]:
    """Where the Hugging Face cache may be, searched in this order (huggingface_hub's precedence)."""
    env = os.environ
    found = [Path(env["HF_HUB_CACHE"]).expanduser()] if env.get("HF_HUB_CACHE") else []
    found += [Path(env["HF_HOME"]).expanduser() / "hub"] if env.get("HF_HOME") else []
    found += [Path(env["XDG_CACHE_HOME"]).expanduser() / "huggingface" / "hub"] if env.get("XDG_CACHE_HOME") else []
    found.append(Path.home() / ".cache" / "huggingface" / "hub")
    return list(dict.fromkeys(found))


COMMIT = re.compile(r"[0-9A-Za-z][\w.-]{0,127}")  # what refs/main holds: a commit hash, never a path
REF_BYTES = 256  # refs/main is read no further than this: a commit hash is 40 characters


def _inside(snap: Path, repo: Path) -> Path:
    """`snap` if it is a folder of `repo` once links are followed, else ModelError (a cache never points out)."""
    return within([repo], snap, f"the snapshot {snap}", f"its cache folder {repo} (a damaged or hostile cache)")


def _snapshot(repo: Path) -> Path | None:
    """refs/main's snapshot, else the newest snapshot folder, else None; never a folder outside `repo`."""
    ref = repo / "refs" / "main"
    if ref.is_file():
        with ref.open("rb") as f:
            raw = f.read(REF_BYTES + 1)
        commit = raw.decode("utf-8", "replace").strip()
        if len(raw) > REF_BYTES or not COMMIT.fullmatch(commit):
            raise ModelError(f"{ref} does not hold a commit hash: a damaged or hostile cache")
        snap = repo / "snapshots" / commit
        if snap.is_dir():
            return _inside(snap, repo)
    snaps = [p for p in (repo / "snapshots").glob("*") if p.is_dir()]
    return _inside(max(snaps, key=lambda p: p.stat().st_mtime), repo) if snaps else None


def _shown(name: str) -> str:
    """A name as an error shows it: whole when short, else its start and how long it is (it is never cut silently)."""
    return repr(name) if len(name) <= 200 else f"{name[:60]!r}… (a name of {len(name):,} characters)"


def resolve_model(path: str | Path, gguf_file: str | None = None) -> Path:
    """A folder or file as given if it exists (or is plainly a path), else the model NAME: a Hugging Face cache
    snapshot, an Ollama model (NAME:TAG), an LM Studio folder (ORG/NAME); a folder holding GGUF files and no
    config.json means its GGUF file (`stores.gguf_in`, `gguf_file` choosing among several).

    A name found nowhere is a ModelError saying that attn never downloads and how to get it.
    """
    name = str(path)
    if not name.strip():
        raise ConfigError("the model is empty: give a model folder, a GGUF file or a model name")
    if name.lower().endswith(FILE_SUFFIXES) and not Path(path).expanduser().exists():
        raise ModelError(f"no such file: {_shown(name)}")  # a mistyped file, not a model name to look up
    try:
        return _resolve(Path(path).expanduser(), name, gguf_file)
    except OSError as e:  # a name or HF_HOME too long for the system, a cache attn may not read
        raise ModelError(f"cannot read the model {_shown(name)} or its cache: {e.strerror or e}") from None


def _resolve(folder: Path, name: str, gguf_file: str | None) -> Path:
    typed = REPO_ID.fullmatch(name) or OLLAMA_NAME.fullmatch(name) or stores.OLLAMA_HOSTED.fullmatch(name)
    if folder.exists() or not typed:
        return _in_folder(folder, gguf_file)
    caches = hub_caches()
    for cache in caches:
        snap = _snapshot(cache / ("models--" + name.replace("/", "--"))) if REPO_ID.fullmatch(name) else None
        if snap is not None:
            return _in_folder(snap, gguf_file)
    blob = ollama_blob(name)
    if blob is not None:
        return _in_folder(blob, gguf_file)
    studio = lmstudio_folder(name)
    if studio is not None:
        return _in_folder(studio, gguf_file)
    found = _by_quant(name, gguf_file)
    if found is not None:
        return found
    raise ModelError(
        f"model {name!r} is neither a folder nor in the Hugging Face cache ({', '.join(map(str, caches))}), "
        f"the Ollama store ({ollama_store()}) or LM Studio's ({lmstudio_store()}); "
        f"attn never downloads: on a connected machine run `hf download {name}` or `ollama pull {name}` "
        "(then copy it here, or set HF_HUB_CACHE or OLLAMA_MODELS), or give --model the path of a model folder"
    )


def _in_folder(found: Path, gguf_file: str | None) -> Path:
    """A folder's GGUF model file when it holds one (or `gguf_file`), else `found` itself."""
    if found.is_dir():
        return gguf_in(found, gguf_file) or found
    if gguf_file is not None:
        raise ConfigError(f"--gguf-file chooses a file in a model folder, but {found} is not a folder")
    return found


def _by_quant(name: str, gguf_file: str | None) -> Path | None:
    """`USER/REPO:QUANT` as llama.cpp's `-hf` takes it (or Ollama's `hf.co/USER/REPO:QUANT` not in its store): the
    repo in a Hugging Face cache, in llama.cpp's ($LLAMA_CACHE, laid out as one since March 2026) or in LM
    Studio's, its GGUF file whose name holds QUANT; else the flat llama.cpp cache's manifest of that name."""
    hosted = stores.OLLAMA_HOSTED.fullmatch(name)
    if hosted is not None:
        name = f"{hosted.group(2)}/{hosted.group(3)}" + (f":{hosted.group(4)}" if hosted.group(4) else "")
    tagged = TAGGED.fullmatch(name)
    repo = tagged.group(1) + "/" + tagged.group(2) if tagged else name
    folders = [(_snapshot(c / ("models--" + repo.replace("/", "--"))), c) for c in [*hub_caches(), llamacpp_cache()]]
    folders.append((lmstudio_folder(repo), Path("~/.lmstudio/models")))
    for folder, where in folders:
        if folder is None:
            continue
        if tagged is None or gguf_file is not None:
            return _in_folder(folder, gguf_file)
        picked = quant_file(stores.ggufs(folder), tagged.group(3), f"{repo} in {where}")
        if picked is not None:
            return picked
    flat = llamacpp_file(name)
    return None if flat is None else _in_folder(flat, gguf_file)


def cached_repos(limit: int) -> tuple[list[tuple[str, Path | str, Path]], bool]:
    """("ORG/NAME", its snapshot, the cache) of every repo in the Hugging Face caches and in llama.cpp's (as
    `_snapshot` finds each: never a folder outside its repo; in the snapshot's place, why it cannot be read), and
    whether more than `limit` entries of the caches stopped the listing. A repo without a snapshot is left out."""
    found: list[tuple[str, Path | str, Path]] = []
    seen = 0
    for cache in dict.fromkeys([*hub_caches(), llamacpp_cache()]):
        try:
            entries = sorted(p for p in cache.iterdir() if p.name.startswith("models--")) if cache.is_dir() else []
        except OSError:
            continue
        for repo in entries:
            seen += 1
            if seen > limit:
                return found, True
            name = repo.name.removeprefix("models--").replace("--", "/")
            try:
                snap = _snapshot(repo) if repo.is_dir() and not repo.is_symlink() else None
            except ModelError as e:
                found.append((name, str(e), cache))
                continue
            except OSError as e:
                found.append((name, f"cannot read {repo}: {e.strerror or e}", cache))
                continue
            if snap is not None:
                found.append((name, snap, cache))
    return found, False
