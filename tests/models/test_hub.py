"""`--model NAME` resolves in a Hugging Face cache built in tmp_path; a name not there says attn never downloads."""

from __future__ import annotations

import shutil

import pytest

from attncli.models import ModelError, load_model
from tests.conftest import attn, refused
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


def _refused(name, env, needle):
    refused(attn("show", TEXT, "--model", name, env=env), needle)


@pytest.mark.parametrize(
    "ref, needle",
    [  # hostile round III: refs/main was read whole, decoded strictly and joined as a path
        (b"\xff\xfe0123", "does not hold a commit hash"),
        (b"../../../outside", "does not hold a commit hash"),
        (b"/etc", "does not hold a commit hash"),
    ],
)
def test_refs_main_names_a_commit_or_is_refused(tmp_path, ref, needle):
    snap = fake_cache(tmp_path, "org/m")
    (snap.parent.parent / "refs" / "main").write_bytes(ref)
    _refused("org/m", {"HF_HUB_CACHE": str(tmp_path)}, needle)


def test_a_huge_refs_main_is_not_read(tmp_path):
    snap = fake_cache(tmp_path, "org/m")
    with (snap.parent.parent / "refs" / "main").open("wb") as f:
        f.truncate(3 << 30)  # 3 GiB, sparse: reading it whole took 35 s and 9.5 GB
    _refused("org/m", {"HF_HUB_CACHE": str(tmp_path)}, "does not hold a commit hash")


def test_a_snapshot_linked_out_of_the_cache_is_refused(tmp_path):
    cache = tmp_path / "cache"
    snap = fake_cache(cache, "org/m")
    shutil.move(snap, tmp_path / "elsewhere")
    snap.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    _refused("org/m", {"HF_HUB_CACHE": str(cache)}, "outside its cache folder")


@pytest.mark.parametrize("length", [5_000, 100_000])
def test_a_name_or_cache_too_long_for_the_system_is_one_line(tmp_path, length):
    _refused("a" * length, {"HF_HUB_CACHE": str(tmp_path)}, f"(a name of {length:,} characters)")
    _refused("org/m", {"HF_HOME": "/" + "h" * length}, "cannot read the model 'org/m' or its cache")


def test_a_model_or_cache_attn_may_not_read_is_reported_as_such(tmp_path, monkeypatch):
    """Hostile round III: an unreadable folder or cache came out as "cannot write the output" or "No such file"."""
    import errno

    import attncli.models.opening.load

    def denied(path, gguf_file=None):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "cache"))

    monkeypatch.setattr(
        attncli.models.opening.load, "resolve_model", denied
    )  # as root, chmod 000 would not stop a read
    _refused("org/m", None, f"Error: cannot read the model: {tmp_path / 'cache'}: Permission denied")
