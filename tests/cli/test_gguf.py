"""GGUF files and --gguf-file through the command line: the same output as the safetensors folder, one-line errors."""

from __future__ import annotations

import json

import pytest

from tests.conftest import attn
from tests.models.gguf_files import GOLDEN, from_folder

TEXT = "time flies like an arrow"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder holding the qwen3 golden model as two GGUF files."""
    out = tmp_path_factory.mktemp("gguf")
    from_folder(GOLDEN / "qwen3", out / "qwen3-F32.gguf", "qwen3")
    from_folder(GOLDEN / "qwen3", out / "qwen3-F16.gguf", "qwen3", kind="F16")
    return out


def test_a_gguf_file_shows_what_its_safetensors_show(folder):
    got = attn("show", TEXT, "--model", str(folder / "qwen3-F32.gguf"), "--layer", "1", "-f", "json")
    same = attn("show", TEXT, "--model", str(GOLDEN / "qwen3"), "--layer", "1", "-f", "json")
    assert got.exit_code == 0 and same.exit_code == 0, got.output
    assert json.loads(got.stdout)["heads"] == json.loads(same.stdout)["heads"]


@pytest.mark.parametrize("command", ["show", "steps", "tokens", "heads"])
def test_gguf_file_chooses_one_of_a_folders_files(folder, command):
    r = attn(command, TEXT, "--model", str(folder), "--gguf-file", "qwen3-F16.gguf")
    assert r.exit_code == 0, r.output
    r = attn(command, TEXT, "--model", str(folder))
    assert r.exit_code == 1
    assert r.output.strip().splitlines()[-1].startswith("Error: ") and "choose one with --gguf-file NAME" in r.output


def test_gguf_file_without_model_and_a_damaged_file_are_one_line(folder, tmp_path):
    r = attn("show", TEXT, "--gguf-file", "x.gguf")
    assert r.exit_code == 2 and "--gguf-file needs --model" in r.output
    bad = tmp_path / "bad.gguf"
    bad.write_bytes((folder / "qwen3-F32.gguf").read_bytes()[:3000])
    r = attn("show", TEXT, "--model", str(bad))
    assert r.exit_code == 1 and r.output.count("Error:") == 1 and "is cut short" in r.output


def test_a_corpus_runs_on_a_gguf_chosen_in_a_folder(folder):
    """heads --lines hands its worker processes the file --model and --gguf-file resolved to."""
    r = attn(
        "heads",
        "time flies like an arrow\nfruit flies like a banana",
        "--model",
        str(folder),
        "--gguf-file",
        "qwen3-F32.gguf",
        "--lines",
        "--workers",
        "2",
        "-f",
        "json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["texts"] == 2 and doc["model"] == "qwen3-F32.gguf"
