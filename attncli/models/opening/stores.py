"""Where the local model apps keep their GGUF files: Ollama's store, LM Studio's folders, a folder of .gguf files.

Never a download. An Ollama name `NAME:TAG` (`NAME` alone: tag `latest`; `USER/NAME:TAG` outside the library)
is read from its store, `$OLLAMA_MODELS` or `~/.ollama/models`:

    manifests/registry.ollama.ai/library/NAME/TAG     a JSON manifest (read bounded, as any JSON of a model)
      -> its layer whose mediaType is application/vnd.ollama.image.model, {"digest": "sha256:HEX"}
      -> blobs/sha256-HEX                              the GGUF file

The names and the digest are checked to be plain (a digest is 64 hex digits, a name part never starts with a
dot); the manifest is read under its own small cap (MANIFEST_BYTES), whatever its tag, before it is parsed.
Every store keeps one rule (`folder.within`): a path the data names (a manifest, a digest, a ref, a folder
name) or a link inside the store never leads outside the store once resolved (its own root may be a link);
a refused one says where it leads and that `--model PATH` opens a file directly. An LM Studio model
`ORG/NAME` is the folder `~/.lmstudio/models/ORG/NAME/`; a folder (LM Studio's, a Hugging Face cache snapshot,
any) that holds GGUF files and no config.json means its one model file (`gguf_in`; `--gguf-file` picks one).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from attncli.models.files.folder import inside, read_json, within
from attncli.models.files.hparams import ModelError

OLLAMA_NAME = re.compile(r"(?:([a-z0-9][\w.-]{0,79})/)?([a-z0-9][\w.-]{0,79})(?::(\w[\w.-]{0,79}))?", re.IGNORECASE)
MODEL_LAYER = "application/vnd.ollama.image.model"
DIGEST = re.compile(r"sha256[:-]([0-9a-f]{64})")
OLLAMA_HOSTED = re.compile(  # HOST/USER/REPO[:TAG], as `ollama pull hf.co/USER/REPO:QUANT` takes a Hub repo
    r"((?:hf|huggingface)\.co)/([\w][\w.-]{0,95})/([\w][\w.-]{0,95})(?::(\w[\w.-]{0,79}))?", re.IGNORECASE
)
SIDE_FILES = ("mmproj",)  # GGUF files beside a model that are not the model: vision towers
MANIFEST_BYTES = 2**20  # an Ollama manifest: a real one is under 2 KB (a few layers, each a digest and a size)


def ollama_store() -> Path:
    """$OLLAMA_MODELS, else ~/.ollama/models (Ollama's own default)."""
    env = os.environ.get("OLLAMA_MODELS")
    return Path(env).expanduser() if env else Path.home() / ".ollama" / "models"


def lmstudio_store() -> Path:
    """LM Studio's folder of models, ~/.lmstudio/models."""
    return Path.home() / ".lmstudio" / "models"


def ollama_blob(name: str) -> Path | None:
    """The GGUF blob of the Ollama model `name` ("smollm2:135m", "qwen2.5", "user/model:tag",
    "hf.co/user/repo:Q4_K_M"), or None if the store has no manifest of that name."""
    named = ollama_manifest(name)
    if named is None:
        return None
    store, manifest = named
    if not manifest.is_file():
        return None
    within([store], manifest, f"the Ollama manifest {manifest}", f"the Ollama store {store}")
    data = read_json(manifest.parent, manifest.name, MANIFEST_BYTES)  # its own cap, whatever the tag spells
    layers = data.get("layers") if isinstance(data, dict) else None
    if not isinstance(layers, list):
        raise ModelError(f"the Ollama manifest {manifest} has no list of layers")
    models = [l for l in layers if isinstance(l, dict) and l.get("mediaType") == MODEL_LAYER]
    if not models:
        raise ModelError(f"the Ollama manifest {manifest} has no layer of mediaType {MODEL_LAYER}")
    digest = models[0].get("digest")
    found = DIGEST.fullmatch(digest) if isinstance(digest, str) else None
    if found is None:
        raise ModelError(f"the Ollama manifest {manifest} gives the digest {digest!r}, not sha256:<64 hex digits>")
    blob = store / "blobs" / f"sha256-{found.group(1)}"
    if not blob.is_file():
        raise ModelError(f"the Ollama manifest {manifest} names {blob.name}, which is not in {blob.parent}")
    return within([store], blob, f"the Ollama blob {blob}", f"the Ollama store {store}")


def lmstudio_folder(name: str) -> Path | None:
    """~/.lmstudio/models/ORG/NAME when `name` is "ORG/NAME" and that folder exists, else None."""
    parts = name.split("/")
    if len(parts) != 2 or not all(re.fullmatch(r"[\w][\w.-]{0,95}", p) for p in parts):
        return None
    store = lmstudio_store()
    folder = store / parts[0] / parts[1]
    if not folder.is_dir():
        return None
    return within([store], folder, f"the LM Studio model folder {folder}", f"LM Studio's store {store}")


def gguf_in(folder: Path, choice: str | None) -> Path | None:
    """The GGUF file of `folder`: `choice` (a file name inside it), else its one .gguf file when it has no
    config.json (vision towers, mmproj-*.gguf, are not counted); None when the folder is a safetensors folder."""
    if choice is not None:
        path = inside(folder, choice, "--gguf-file")
        if not path.is_file():
            found = ", ".join(p.name for p in _ggufs(folder)) or "none"
            raise ModelError(f"--gguf-file {choice}: no such file in {folder} (its GGUF files: {found})")
        return path
    if (folder / "config.json").is_file():
        return None
    files = _ggufs(folder)
    if len(files) > 1:
        listed = ", ".join(p.name for p in files)
        raise ModelError(f"{folder} holds {len(files)} GGUF files ({listed}): choose one with --gguf-file NAME")
    return inside(folder, files[0].name, "the GGUF file") if files else None  # picked, it is checked as if chosen


def ggufs(folder: Path) -> list[Path]:
    """The model GGUF files of `folder`, sorted (vision towers, mmproj-*.gguf, left out)."""
    return _ggufs(folder)


def _ggufs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.gguf") if p.is_file() and not p.name.lower().startswith(SIDE_FILES))


def ollama_manifest(name: str) -> tuple[Path, Path] | None:
    """(the store, the manifest) the Ollama name `name` means, or None when it is not one; the manifest may be
    missing. As `ollama pull` lays a store out, `manifests/HOST/NAMESPACE/MODEL/TAG`: NAME[:TAG] and
    USER/NAME[:TAG] under registry.ollama.ai (namespace `library` for a bare NAME), hf.co/USER/REPO[:QUANT] and
    huggingface.co/... under the host they name; the tag `latest` when none is given. Ollama versions differ on
    lower-casing the path, so the name as typed is tried first, then lower-cased.

    >>> [p.relative_to(ollama_store()).as_posix() for p in ollama_manifest("hf.co/bartowski/Qwen-GGUF:Q4_K_M")]
    ['.', 'manifests/hf.co/bartowski/Qwen-GGUF/Q4_K_M']
    """
    hosted, plain = OLLAMA_HOSTED.fullmatch(name), OLLAMA_NAME.fullmatch(name)
    if hosted is not None:
        parts = [hosted.group(1), hosted.group(2), hosted.group(3), hosted.group(4) or "latest"]
    elif plain is not None:
        parts = ["registry.ollama.ai", plain.group(1) or "library", plain.group(2), plain.group(3) or "latest"]
    else:
        return None
    if any(p.startswith(".") for p in parts):
        return None
    store = ollama_store()
    manifest = store.joinpath("manifests", *parts)
    lower = store.joinpath("manifests", *(p.lower() for p in parts))
    return store, manifest if manifest.is_file() or not lower.is_file() else lower


def ollama_names(limit: int) -> tuple[list[str], bool]:
    """The names of the models in the Ollama store, as the user types them ("NAME:TAG" for the library,
    "USER/NAME:TAG", "hf.co/USER/REPO:TAG"), and whether more than `limit` entries of its manifests' folders
    stopped the walk; a folder spelled as no name can be (a dot first) is left out."""
    root = ollama_store() / "manifests"
    manifests, cut = _walk(root, 4, limit)
    names: list[str] = []
    for manifest in manifests:
        host, namespace, model, tag = manifest.relative_to(root).parts
        if host == "registry.ollama.ai":
            name = f"{model}:{tag}" if namespace == "library" else f"{namespace}/{model}:{tag}"
        else:
            name = f"{host}/{namespace}/{model}:{tag}"
        if ollama_manifest(name) is not None:
            names.append(name)
    return names, cut


def lmstudio_models(limit: int) -> tuple[list[tuple[str, list[Path]]], bool]:
    """("ORG/NAME", its GGUF files) of each model folder in LM Studio's store, and whether more than `limit`
    entries stopped the walk."""
    folders, cut = _walk(Path.home() / ".lmstudio" / "models", 2, limit, folders=True)
    return [(f"{d.parent.name}/{d.name}", _ggufs(d)) for d in folders if _ggufs(d)], cut


def _walk(root: Path, depth: int, limit: int, folders: bool = False) -> tuple[list[Path], bool]:
    """The files (or folders) exactly `depth` levels below `root`, sorted, and whether the walk stopped after
    `limit` entries; links are not followed on the way down (what is found is resolved, and checked, by the
    function that opens it)."""
    level, seen = [root] if root.is_dir() else [], 0
    for step in range(depth):
        last, below = step == depth - 1, list[Path]()
        for folder in level:
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > limit:
                    return (below if last else []), True
                if entry.name.startswith("."):
                    continue
                if (entry.is_dir() if folders else entry.is_file()) if last else entry.is_dir(follow_symlinks=False):
                    below.append(Path(entry.path))
        level = below
    return level, False
