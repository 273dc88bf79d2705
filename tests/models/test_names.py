"""The names people type, resolved offline in stores faked in tmp_path: Ollama's hf.co/USER/REPO:QUANT, llama.cpp's
-hf cache (both layouts), and `attn models` listing every store (attncli/models/opening/catalog.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from attncli.models import ModelError, load_model
from attncli.models.opening.hub import resolve_model
from tests.conftest import attn
from tests.models.test_gguf import _tiny, _with
from tests.models.test_golden import GOLDEN


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty machine: HOME in tmp_path, no store variable set."""
    for var in ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "OLLAMA_MODELS", "LLAMA_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def ollama_pull(store: Path, blob: Path, *parts: str) -> Path:
    """`blob` in the Ollama `store` as `ollama pull` leaves it under manifests/HOST/NAMESPACE/MODEL/TAG."""
    digest = hashlib.sha256(blob.read_bytes()).hexdigest()
    (store / "blobs").mkdir(parents=True, exist_ok=True)
    shutil.copy(blob, store / "blobs" / f"sha256-{digest}")
    manifest = store.joinpath("manifests", *parts)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"}
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": [layer]}), encoding="utf-8")
    return store / "blobs" / f"sha256-{digest}"


def test_ollama_hf_co_names_as_ollama_stores_them(home, tmp_path):
    store = home / ".ollama" / "models"
    blob = ollama_pull(store, _tiny(tmp_path), "hf.co", "Org", "Tiny-GGUF", "Q4_K_M")
    assert resolve_model("hf.co/Org/Tiny-GGUF:Q4_K_M") == blob
    model = load_model("hf.co/Org/Tiny-GGUF:Q4_K_M")
    assert model.name == "hf.co/Org/Tiny-GGUF:Q4_K_M" and model.model_type == "qwen3"
    ollama_pull(store, _tiny(tmp_path), "huggingface.co", "org", "tiny-gguf", "latest")  # lower-cased, as newer
    assert resolve_model("huggingface.co/Org/Tiny-GGUF") == blob  # Ollama versions write it; tag latest
    with pytest.raises(ModelError, match="neither a folder nor in the Hugging Face cache"):
        resolve_model("hf.co/Org/Tiny-GGUF:Q8_0")


def test_the_flat_llama_cpp_cache(home, tmp_path, monkeypatch):
    """llama.cpp before March 2026: manifest=USER=REPO=TAG.json names the file, stored as USER_REPO_FILE."""
    cache = home / ".cache" / "llama.cpp"  # Linux's default, without LLAMA_CACHE or XDG_CACHE_HOME
    cache.mkdir(parents=True)
    gguf = _tiny(cache, "Org_Tiny-GGUF_sub_tiny-Q4_K_M.gguf")
    manifest = {"ggufFile": {"rfilename": "sub/tiny-Q4_K_M.gguf"}}
    (cache / "manifest=Org=Tiny-GGUF=Q4_K_M.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert resolve_model("Org/Tiny-GGUF:Q4_K_M") == gguf
    assert load_model("Org/Tiny-GGUF:Q4_K_M").model_type == "qwen3"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    assert resolve_model("Org/Tiny-GGUF:Q4_K_M") == gguf
    monkeypatch.setenv("LLAMA_CACHE", str(tmp_path / "elsewhere"))
    with pytest.raises(ModelError, match="neither a folder"):
        resolve_model("Org/Tiny-GGUF:Q4_K_M")
    monkeypatch.setenv("LLAMA_CACHE", str(cache))
    refusals = (
        ("../../etc/passwd", "names no GGUF file"),
        ("a/../../x.gguf", r"names Org_Tiny-GGUF_a_\.\._\.\._x\.gguf, which is not in"),
    )
    for rfilename, refused in (*refusals, ("gone.gguf", "which is not in")):  # "/" is "_": never a folder
        (cache / "manifest=Org=Tiny-GGUF=bad.json").write_text(json.dumps({"ggufFile": {"rfilename": rfilename}}))
        with pytest.raises(ModelError, match=refused):
            resolve_model("Org/Tiny-GGUF:bad")


def test_a_quant_picks_the_file_of_a_cached_repo(home, tmp_path, monkeypatch):
    """llama.cpp since March 2026 (and `hf download`): the Hugging Face cache layout; USER/REPO:QUANT is the
    repo's GGUF file whose name holds QUANT, in the Hugging Face cache or in LLAMA_CACHE."""
    monkeypatch.setenv("LLAMA_CACHE", str(tmp_path / "llama"))
    snap = tmp_path / "llama" / "models--Org--Tiny-GGUF" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    for name in ("tiny-Q4_K_M.gguf", "tiny-Q8_0.gguf", "mmproj-tiny-Q8_0.gguf"):
        _tiny(snap, name)
    assert resolve_model("Org/Tiny-GGUF:q8_0").name == "tiny-Q8_0.gguf"  # llama.cpp matches any case
    assert resolve_model("hf.co/Org/Tiny-GGUF:Q4_K_M").name == "tiny-Q4_K_M.gguf"  # not in Ollama: the cache's
    with pytest.raises(ModelError, match="holds 2 GGUF files"):
        resolve_model("Org/Tiny-GGUF")
    _tiny(snap, "tiny-Q8_0-imat.gguf")
    with pytest.raises(ModelError, match=r"the tag Q8_0 matches 2 GGUF files .*choose one with --gguf-file"):
        resolve_model("Org/Tiny-GGUF:Q8_0")


def _rows(*args: str) -> list[dict]:
    r = attn("models", *args, "-f", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["rows"]


def test_attn_models_lists_every_store(home, tmp_path, monkeypatch):
    import gguf

    hub = home / ".cache" / "huggingface" / "hub" / "models--Qwen--Tiny" / "snapshots" / "c0ffee"
    shutil.copytree(GOLDEN / "qwen2", hub)
    ollama_pull(home / ".ollama" / "models", _tiny(tmp_path), "registry.ollama.ai", "library", "tiny", "0.6b")
    ollama_pull(home / ".ollama" / "models", _tiny(tmp_path), "hf.co", "Org", "Tiny-GGUF", "Q4_K_M")
    studio = home / ".lmstudio" / "models" / "org" / "tiny-GGUF"
    studio.mkdir(parents=True)
    _tiny(studio, "tiny-Q8_0.gguf")
    _tiny(studio, "tiny-F16.gguf")
    cache = home / ".cache" / "llama.cpp"
    cache.mkdir()
    _tiny(cache, "Org_Tiny-GGUF_tiny-Q4_0.gguf")
    (cache / "manifest=Org=Tiny-GGUF=Q4_0.json").write_text(json.dumps({"ggufFile": {"rfilename": "tiny-Q4_0.gguf"}}))
    other = tmp_path / "mine"
    other.mkdir()
    shutil.move(_with(tmp_path, "moe.gguf", {"qwen3.expert_count": 8}), other / "moe.gguf")
    rows = _rows("--path", str(other))
    by_name = {r["name"]: r for r in rows}
    assert list(by_name) == [
        "Qwen/Tiny",
        "hf.co/Org/Tiny-GGUF:Q4_K_M",
        "tiny:0.6b",
        "org/tiny-GGUF:F16",
        "org/tiny-GGUF:Q8_0",
        "Org/Tiny-GGUF:Q4_0",
        str(other),
    ]
    assert [r["source"] for r in rows] == [
        "huggingface",
        "ollama",
        "ollama",
        "lmstudio",
        "lmstudio",
        "llama.cpp",
        "path",
    ]
    assert all(
        set(r) == {"name", "source", "path", "family", "parameters", "quant", "bytes", "supported", "why"} for r in rows
    )
    hf = by_name["Qwen/Tiny"]
    assert hf["family"] == "qwen2" and hf["quant"] == "F32" and hf["supported"] and hf["why"] is None
    tiny = by_name["tiny:0.6b"]
    assert tiny["family"] == "qwen3" and tiny["supported"] and tiny["bytes"] == Path(tiny["path"]).stat().st_size
    assert tiny["parameters"] == sum(int(np.prod(t.shape)) for t in gguf.GGUFReader(tiny["path"]).tensors)
    moe = by_name[str(other)]
    assert not moe["supported"] and "mixture" in moe["why"] and moe["family"] == "qwen3"
    for name in by_name:  # every name listed is one --model opens (the names with a quant too)
        if by_name[name]["supported"]:
            assert resolve_model(name) == Path(by_name[name]["path"]), name


def test_attn_models_never_follows_a_link_out_of_a_store(home, tmp_path):
    outside = _tiny(tmp_path, "secret.gguf")
    blob = ollama_pull(home / ".ollama" / "models", outside, "registry.ollama.ai", "library", "tiny", "latest")
    blob.unlink()
    blob.symlink_to(outside)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "linked.gguf").symlink_to(outside)
    rows = {r["name"]: r for r in _rows("--path", str(folder))}
    assert not rows["tiny:latest"]["supported"] and "outside" in rows["tiny:latest"]["why"]
    linked = rows[str(folder)]
    assert not linked["supported"] and linked["family"] is None and "outside" in linked["why"]


def test_attn_models_on_an_empty_machine_and_its_table(home, tmp_path):
    assert _rows() == []
    r = attn("models", "--color", "never")
    assert r.exit_code == 0 and "No model found" in r.stdout
    (tmp_path / "mine").mkdir()
    _tiny(tmp_path / "mine", "m.gguf")
    r = attn("models", "--path", str(tmp_path / "mine"), "--color", "never", "--width", "200")
    assert r.exit_code == 0 and "qwen3" in r.stdout and "yes" in r.stdout and "file size" in r.stdout, r.output


def test_a_damaged_cache_repo_is_listed_with_why(home):
    repo = home / ".cache" / "huggingface" / "hub" / "models--org--bad"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("../../../../etc")
    (repo / "snapshots" / "x").mkdir(parents=True)
    (row,) = _rows()
    assert row["name"] == "org/bad" and not row["supported"] and "does not hold a commit hash" in row["why"]


def test_llama_cpp_cache_folder_per_system(home, monkeypatch):
    """llama.cpp's fs_get_cache_directory: LLAMA_CACHE, else the system's cache folder's llama.cpp/."""
    from attncli.models.opening import llamacpp

    monkeypatch.setattr(llamacpp.sys, "platform", "darwin")
    assert llamacpp.llamacpp_cache() == home / "Library" / "Caches" / "llama.cpp"
    monkeypatch.setattr(llamacpp.sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(home / "AppData" / "Local"))
    assert llamacpp.llamacpp_cache() == home / "AppData" / "Local" / "llama.cpp"
    monkeypatch.setattr(llamacpp.sys, "platform", "linux")
    assert llamacpp.llamacpp_cache() == home / ".cache" / "llama.cpp"
    monkeypatch.setenv("LLAMA_CACHE", "~/models")
    assert llamacpp.llamacpp_cache() == home / "models"
