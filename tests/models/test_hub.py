"""`--model NAME` resolves in a Hugging Face cache built in tmp_path; a name not there says attn never downloads."""

from __future__ import annotations

import shutil

import pytest

from attncli.models import ModelError, load_model
from tests.conftest import attn
from tests.models.test_golden import GOLDEN

TEXT = "time flies like an arrow"


def fake_cache(root, name: str, commit: str = "0123abcd"):  # -> the snapshot folder
    """models--Org--Name/refs/main and snapshots/<commit>/ holding a golden folder's files, as the hub lays it out."""
    repo = root / ("models--" + name.replace("/", "--"))
    snap = repo / "snapshots" / commit
    shutil.copytree(GOLDEN / "qwen2", snap)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snap


def test_a_name_resolves_in_each_cache_location(tmp_path, monkeypatch):
    for var in ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    snap = fake_cache(tmp_path / "home" / ".cache" / "huggingface" / "hub", "Qwen/Tiny")
    model = load_model("Qwen/Tiny")
    assert model.path == snap and model.name == "Qwen/Tiny"
    fake_cache(tmp_path / "hf-home" / "hub", "Qwen/Tiny", "feed")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    assert load_model("Qwen/Tiny").path.name == "feed"
    fake_cache(tmp_path / "hub-cache", "gpt2", "beef")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    assert load_model("gpt2").path.name == "beef" and load_model("Qwen/Tiny").path.name == "feed"


def test_without_refs_main_the_newest_snapshot(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    snap = fake_cache(tmp_path, "org/m")
    (snap.parent.parent / "refs" / "main").unlink()
    assert load_model("org/m").path == snap


def test_a_name_not_in_the_cache_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelError, match=r"attn never downloads: .*hf download Qwen/Qwen2.5-0.5B") as e:
        load_model("Qwen/Qwen2.5-0.5B")
    assert "\n" not in str(e.value)
    with pytest.raises(ModelError, match="model folder not found"):
        load_model(tmp_path / "no" / "such" / "folder")  # a path is a path, never a name


def test_the_cli_takes_a_cached_name(tmp_path):
    fake_cache(tmp_path, "Qwen/Tiny")
    r = attn("show", TEXT, "--model", "Qwen/Tiny", "--color", "never", env={"HF_HUB_CACHE": str(tmp_path)})
    assert r.exit_code == 0 and "Qwen/Tiny: qwen2" in r.stdout, r.output
    r = attn("show", TEXT, "--model", "Org/Missing", env={"HF_HUB_CACHE": str(tmp_path)})
    assert r.exit_code == 1 and r.stderr.startswith("Error: model 'Org/Missing' is neither a folder")
