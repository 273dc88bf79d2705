"""llama.cpp's `-hf` download cache, read offline: `--model USER/REPO:QUANT` opens what
`llama-cli -hf USER/REPO:QUANT` downloaded.

The cache is $LLAMA_CACHE, else the system's cache folder's `llama.cpp/` (Linux: $XDG_CACHE_HOME or ~/.cache;
macOS: ~/Library/Caches; Windows: %LOCALAPPDATA%), as llama.cpp's `fs_get_cache_directory` finds it. Two layouts,
by llama.cpp's version:

- flat, until llama.cpp moved to the Hugging Face cache (its PR 20775, March 2026): `manifest=USER=REPO=TAG.json`,
  the Hub's answer naming the tag's file (`{"ggufFile": {"rfilename": "F"}}`), beside the file itself as
  `USER_REPO_F` (each "/" of F a "_"); the tag `latest` when none is given;
- the Hugging Face cache's own (`models--USER--REPO/snapshots/<commit>/F`, in the Hugging Face cache or in
  $LLAMA_CACHE), read as any cached repo (`hub.py`); there the QUANT picks the GGUF file whose name holds it
  (`quant_file`), as llama.cpp matches a tag to a file of the repo.

Nothing is downloaded, and nothing outside the cache is read: a manifest is read bounded (`folder.read_json`),
and the file it names must be a plain name of the cache folder (`folder.inside`).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from attncli.models.files.folder import inside, read_json
from attncli.models.files.hparams import ModelError

TAGGED = re.compile(r"([\w][\w.-]{0,95})/([\w][\w.-]{0,95}):(\w[\w.-]{0,79})")  # USER/REPO:QUANT
MANIFEST = re.compile(r"manifest=([\w][\w.-]{0,95})=([\w][\w.-]{0,95})=(\w[\w.-]{0,79})\.json")


def llamacpp_cache() -> Path:
    """$LLAMA_CACHE, else llama.cpp's default cache folder on this system."""
    env = os.environ
    if env.get("LLAMA_CACHE"):
        return Path(env["LLAMA_CACHE"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "llama.cpp"
    if sys.platform == "win32" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "llama.cpp"
    base = Path(env["XDG_CACHE_HOME"]).expanduser() if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "llama.cpp"


def llamacpp_file(name: str) -> Path | None:
    """The GGUF file the flat llama.cpp cache holds for `name` ("USER/REPO:QUANT", or "USER/REPO": tag latest),
    or None when it has no manifest of that name; ModelError when the manifest is unusable or its file missing."""
    tagged = TAGGED.fullmatch(name) or TAGGED.fullmatch(name + ":latest")
    if tagged is None:
        return None
    user, repo, tag = tagged.groups()
    cache = llamacpp_cache()
    manifest = cache / f"manifest={user}={repo}={tag}.json"
    if not manifest.is_file():
        return None
    data = read_json(cache, manifest.name)
    picked = data.get("ggufFile") if isinstance(data, dict) else None
    rfilename = picked.get("rfilename") if isinstance(picked, dict) else None
    if not isinstance(rfilename, str) or not rfilename or rfilename.startswith("."):
        raise ModelError(f"the llama.cpp manifest {manifest} names no GGUF file (ggufFile.rfilename)")
    stored = f"{user}_{repo}_{rfilename.replace('/', '_')}"
    path = inside(cache, stored, "the llama.cpp manifest's file")
    if not path.is_file():
        raise ModelError(f"the llama.cpp manifest {manifest} names {stored}, which is not in {cache}")
    return path


def llamacpp_names(limit: int) -> tuple[list[str], bool]:
    """The "USER/REPO:TAG" of each manifest of the flat llama.cpp cache (at most `limit` entries looked at), and
    whether the listing stopped there."""
    names: list[str] = []
    cache = llamacpp_cache()
    try:
        entries = sorted(os.scandir(cache), key=lambda e: e.name) if cache.is_dir() else []
    except OSError:
        return [], False
    for seen, entry in enumerate(entries, 1):
        if seen > limit:
            return names, True
        found = MANIFEST.fullmatch(entry.name)
        if found is not None:
            names.append("{}/{}:{}".format(*found.groups()))
    return names, False


def quant_file(files: list[Path], quant: str, where: str) -> Path | None:
    """The one of `files` (a repo's GGUF files) whose name holds `quant` ("Q4_K_M", any case) as a part of it,
    as llama.cpp picks a file for a tag; None when none does, ModelError naming them when several do (the first
    part of a split model counts once).

    >>> quant_file([Path("m-Q4_K_M.gguf"), Path("m-Q8_0.gguf")], "q8_0", "repo").name
    'm-Q8_0.gguf'
    """
    pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(quant)}(?![A-Za-z0-9])", re.IGNORECASE)
    found = [f for f in files if pattern.search(f.stem) and not re.search(r"-0*[2-9]\d*-of-\d+$", f.stem)]
    if len(found) > 1:
        listed = ", ".join(f.name for f in found)
        raise ModelError(
            f"{where}: the tag {quant} matches {len(found)} GGUF files ({listed}): choose one with --gguf-file"
        )
    return found[0] if found else None
