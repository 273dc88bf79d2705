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

from .hparams import ModelError
from .stores import OLLAMA_NAME, gguf_in, lmstudio_folder, ollama_blob, ollama_store

REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?")  # "gpt2", "Qwen/Qwen2.5-0.5B"


def hub_caches() -> list[Path]:
    """Where the Hugging Face cache may be, searched in this order (huggingface_hub's precedence)."""
    env = os.environ
    found = [Path(env["HF_HUB_CACHE"]).expanduser()] if env.get("HF_HUB_CACHE") else []
    found += [Path(env["HF_HOME"]).expanduser() / "hub"] if env.get("HF_HOME") else []
    found += [Path(env["XDG_CACHE_HOME"]).expanduser() / "huggingface" / "hub"] if env.get("XDG_CACHE_HOME") else []
    found.append(Path.home() / ".cache" / "huggingface" / "hub")
    return list(dict.fromkeys(found))


def _snapshot(repo: Path) -> Path | None:
    """refs/main's snapshot, else the newest snapshot folder, else None."""
    ref = repo / "refs" / "main"
    if ref.is_file():
        snap = repo / "snapshots" / ref.read_text(encoding="utf-8").strip()
        if snap.is_dir():
            return snap
    snaps = [p for p in (repo / "snapshots").glob("*") if p.is_dir()]
    return max(snaps, key=lambda p: p.stat().st_mtime) if snaps else None


def resolve_model(path: str | Path, gguf_file: str | None = None) -> Path:
    """A folder or file as given if it exists (or is plainly a path), else the model NAME: a Hugging Face cache
    snapshot, an Ollama model (NAME:TAG), an LM Studio folder (ORG/NAME); a folder holding GGUF files and no
    config.json means its GGUF file (`stores.gguf_in`, `gguf_file` choosing among several).

    A name found nowhere is a ModelError saying that attn never downloads and how to get it.
    """
    folder = Path(path).expanduser()
    name = str(path)
    if folder.exists() or not (REPO_ID.fullmatch(name) or OLLAMA_NAME.fullmatch(name)):
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
    raise ModelError(
        f"model {name!r} is neither a folder nor in the Hugging Face cache ({', '.join(map(str, caches))}), "
        f"the Ollama store ({ollama_store()}) or LM Studio's (~/.lmstudio/models); "
        f"attn never downloads: on a connected machine run `huggingface-cli download {name}` or `ollama pull {name}` "
        "(then copy it here, or set HF_HUB_CACHE or OLLAMA_MODELS), or give --model the path of a model folder"
    )


def _in_folder(found: Path, gguf_file: str | None) -> Path:
    """A folder's GGUF model file when it holds one (or `gguf_file`), else `found` itself."""
    if found.is_dir():
        return gguf_in(found, gguf_file) or found
    if gguf_file is not None:
        raise ModelError(f"--gguf-file chooses a file in a model folder, but {found} is not a folder")
    return found
