"""A model folder is untrusted: every lie it can tell ends in one line, before the work it would cause."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import attncli.models.runs.tokens as tokens_module
from attncli.models import ModelError, load_model
from attncli.models.files.folder import MAX_BYTES, check_run, inside
from attncli.models.network.model import Weights
from attncli.pipeline.read import MAX_JSON_DEPTH
from tests.conftest import attn, refused
from tests.model_fixtures import make_bert

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the model's tokenizer runs in a forked child")


def one_line(r, *needles: str) -> str:
    """A refusal (tests.conftest.refused) that printed nothing on stdout."""
    assert r.stdout == "", r.stdout
    return refused(r, *needles)


def poke(folder, suffix: str, value: float, cells: slice = slice(3, 4)) -> str:
    """Set `cells` (default one) of the tensor whose name ends with `suffix`; its stored name."""
    from safetensors.numpy import load_file, save_file

    path = folder / "model.safetensors"
    tensors = load_file(str(path))
    name = next(k for k in tensors if k.endswith(suffix))
    tensors[name] = tensors[name].copy()
    tensors[name].flat[cells] = value
    save_file(tensors, str(path), metadata={"format": "pt"})
    return name


def edit_tokenizer(folder, **fields) -> None:
    path = folder / "tokenizer.json"
    doc = json.loads(path.read_text())
    doc.update(fields)
    path.write_text(json.dumps(doc))


@pytest.fixture
def own_bert(bert, tmp_path) -> Path:
    """A copy of the session's tiny BERT folder (tests/conftest.py) that this test may edit."""
    return Path(shutil.copytree(bert.path, tmp_path / "bert"))


def test_an_absurd_layer_count_is_refused_from_the_headers(tmp_path):
    folder = make_bert(tmp_path / "m", config={"num_hidden_layers": 10**9})
    tracemalloc.start()
    try:
        with pytest.raises(ModelError, match=r"declares 1,000,000,000 layers \(num_hidden_layers\), but the weights"):
            load_model(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"{peak:,} bytes: the reader looped over the declared layers"


@pytest.mark.parametrize("key", ["hidden_size", "num_attention_heads", "vocab_size", "intermediate_size"])
def test_a_size_no_tensor_could_hold_is_refused(tmp_path, key):
    folder = make_bert(tmp_path / "m", config={key: 10**12})
    with pytest.raises(ModelError, match=rf"declares .* 1,000,000,000,000 \({key}\), but no tensor"):
        load_model(folder)


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "tokenizer_config.json", "index"])
def test_json_nested_too_deep_is_one_line(tmp_path, name):
    folder = make_bert(
        tmp_path / "m", shards=2 if name == "index" else 1, tokenizer="vocab" if "config" in name else "json"
    )
    file = "model.safetensors.index.json" if name == "index" else name
    head = '{"model_type": "bert", "x": ' if name == "config.json" else '{"x": '
    (folder / file).write_text(head + "[" * 100_000 + "]" * 100_000 + "}")
    one_line(attn("show", "time flies", "--model", folder), f"{file} nests 100,001 levels deep", str(MAX_JSON_DEPTH))


def test_a_json_past_its_cap_is_not_read(tmp_path):
    folder = make_bert(tmp_path / "m")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"pad": "x" * MAX_BYTES["config.json"]}))
    one_line(attn("show", "time flies", "--model", folder), "config.json is larger than 4 MiB")


@pytest.mark.parametrize(
    "header, needle",
    [  # hostile round III, still open in IV (8): 10^6 empty entries took 14.5 s and 978 MB before the refusal
        (b"{" + b'"":{},' * (10**6 - 1) + b'"":{}}', "the header holds more entries than 65,536 tensors would"),
        (None, "header of 1,099,511,627,776 bytes is larger than safetensors allows"),
    ],
    ids=["a million empty entries", "a length of 2**40"],
)
def test_a_safetensors_header_is_bounded_before_it_is_parsed(tmp_path, header, needle):
    folder = make_bert(tmp_path / "m")
    path = folder / "model.safetensors"
    if header is None:  # a length no header has: refused from the 8 bytes
        path.write_bytes((2**40).to_bytes(8, "little") + b"{}")
    else:
        path.write_bytes(len(header).to_bytes(8, "little") + header)
    one_line(attn("show", "time flies", "--model", folder), f"cannot read {path}: {needle}")


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_an_unreadable_safetensors_file_is_permission_denied():
    """Hostile round III, still open in IV (8): EACCES was reported as "No such file or directory". As root (who
    reads any file) it is read in a forked child that became nobody, everything it needs imported before."""
    import tempfile

    import safetensors  # noqa: F401  (imported here: nobody may not read the packages)

    from attncli.models.files.folder import checkpoint

    top = Path(tempfile.mkdtemp())  # pytest's own tmp_path sits in a folder only its owner may enter
    folder = make_bert(top / "m")
    (folder / "model.safetensors").chmod(0o000)
    for p in (top, folder):
        p.chmod(0o755)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: say what checkpoint() raised, and leave
        try:
            if os.geteuid() == 0:
                os.setuid(65534)
            checkpoint(folder)
            said = "read"
        except BaseException as e:  # whatever it is, the parent reports it
            said = f"{type(e).__name__}: {e}"
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    said = os.read(read, 4096).decode()
    os.waitpid(pid, 0)
    shutil.rmtree(top)
    assert said == f"ModelError: cannot read {folder / 'model.safetensors'}: Permission denied", said


@pytest.mark.parametrize("shard", [".", "./", ""])
def test_a_shard_that_names_no_file_is_one_line(tmp_path, shard):
    """Found by the thorough fuzz: an index that puts a tensor in "." was an internal error."""
    folder = make_bert(tmp_path / "m", tokenizer="vocab", shards=2)
    index = folder / "model.safetensors.index.json"
    doc = json.loads(index.read_text())
    doc["weight_map"]["bert.embeddings.position_ids"] = shard
    index.write_text(json.dumps(doc))
    one_line(attn("heads", "time flies", "--model", folder), f"names shard {shard!r} is not a file name")


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_a_shard_outside_the_folder_is_refused(tmp_path, kind):
    folder = make_bert(tmp_path / "m", shards=2)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    first = sorted(set(index["weight_map"].values()))[0]
    outside = tmp_path / "outside.safetensors"
    shutil.move(str(folder / first), outside)
    if kind == "symlink":
        os.symlink(outside, folder / first)
    target = {"dotdot": "../outside.safetensors", "absolute": str(outside), "symlink": first}[kind]
    index["weight_map"] = {k: target if v == first else v for k, v in index["weight_map"].items()}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    needle = {"dotdot": "leaves the model folder", "absolute": "is an absolute path", "symlink": "outside the model"}
    one_line(attn("show", "time flies", "--model", folder), needle[kind])


def test_links_inside_the_folder_and_a_cache_snapshot_into_its_blobs_are_fine(tmp_path):
    repo = tmp_path / "models--org--tiny"
    folder = make_bert(repo / "snapshots" / "abc", shards=2)
    (repo / "blobs").mkdir()
    for f in sorted(folder.iterdir()):
        blob = repo / "blobs" / f.name
        shutil.move(str(f), blob)
        os.symlink(os.path.relpath(blob, folder), f)
    assert load_model(folder).name == "org/tiny"
    assert inside(folder, "config.json", "file") == folder / "config.json"


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
@pytest.mark.parametrize(
    "args",
    [[], ["--rollout"], ["--rollout", "-f", "json"], ["-f", "csv"], ["heads", "-f", "csv"], ["steps", "-f", "json"]],
)
def test_a_weight_that_is_not_finite_is_named_and_nothing_is_written(tmp_path, value, args):
    folder = make_bert(tmp_path / "m")
    name = poke(folder, "encoder.layer.0.attention.self.query.weight", value)
    command = ["show"] if not args or (args[0] != "heads" and args[0] != "steps") else [args.pop(0)]
    one_line(attn(*command, "time flies", "--model", folder, *args), f"{name} in the weights holds {value}")


def test_a_finite_weight_that_overflows_writes_nothing(tmp_path):
    folder = make_bert(tmp_path / "m")
    poke(folder, "encoder.layer.0.attention.self.query.weight", 3e38, slice(None))  # q = x W_Q overflows
    for args in (["show", "-f", "json"], ["show", "--rollout", "-f", "json"], ["heads", "-f", "csv"]):
        one_line(attn(*args, "time flies", "--model", folder), "is not finite", "nothing was written")


def test_weights_past_the_memory_budget_are_refused_before_they_are_read(own_bert, monkeypatch):
    monkeypatch.setenv("ATTN_MAX_MEMORY", "16K")
    monkeypatch.setattr(Weights, "__getitem__", lambda *a: pytest.fail("a tensor was read"))
    with pytest.raises(ModelError, match=r"needs .* for its weights as float32, more than ATTN_MAX_MEMORY \(16 KiB\)"):
        load_model(own_bert)


def test_a_run_is_priced_by_its_tokens():
    check_run(10**6, 2, 2, 16, 32, "m")  # fits the default 2 GiB
    with pytest.raises(ModelError, match=r"m on 100,000 tokens needs about .* more than ATTN_MAX_MEMORY"):
        check_run(10**6, 12, 12, 768, 100_000, "m")


def test_a_long_text_is_counted_on_a_prefix_and_never_tokenized_whole(own_bert, monkeypatch):
    model = load_model(own_bert)  # 32 positions: a prefix of 512 characters
    seen: list[int] = []
    real = tokens_module._encoded
    monkeypatch.setattr(tokens_module, "_encoded", lambda m, text: seen.append(len(text)) or real(m, text))
    text = "time flies like an arrow " * 40_000  # a million characters
    with pytest.raises(ModelError, match=r"more than 32 tokens long \(its first \d+ of 1,000,000 characters make"):
        tokens_module.encode(model, text)
    assert seen and max(seen) <= 512, seen


def test_a_character_the_tokenizer_cannot_encode_is_one_line(own_bert):
    doc = json.loads((own_bert / "tokenizer.json").read_text())
    doc["model"]["unk_token"] = "[NOPE]"
    (own_bert / "tokenizer.json").write_text(json.dumps(doc))
    one_line(attn("show", "time ☃", "--model", own_bert), "cannot encode this text")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory limit reads /proc")
def test_a_model_tokenizer_that_blows_the_text_up_is_one_line(own_bert, monkeypatch):
    times_ten = {"type": "Replace", "pattern": {"String": "a"}, "content": "a" * 10}
    edit_tokenizer(own_bert, normalizer={"type": "Sequence", "normalizers": [times_ten] * 9})  # 1 char -> 10^9
    monkeypatch.setenv("ATTN_MAX_MEMORY", "256M")
    one_line(attn("show", "banana", "--model", own_bert), f"Error: the tokenizer of {own_bert} ")


def test_a_model_tokenizer_regex_that_panics_is_one_line(own_bert):
    split = {"type": "Split", "pattern": {"Regex": r"(\w+\s?)*$"}, "behavior": "Isolated", "invert": False}
    edit_tokenizer(own_bert, pre_tokenizer=split)
    one_line(attn("show", "a" * 28 + "!", "--model", own_bert), "retry-limit-in-match")


def test_a_runaway_model_tokenizer_is_stopped(own_bert, monkeypatch):
    split = {"type": "Split", "pattern": {"Regex": r"\w*\w*\w*[^\w]"}, "behavior": "Isolated", "invert": False}
    edit_tokenizer(own_bert, pre_tokenizer=split)  # about n^4 steps: seconds on 300 characters
    monkeypatch.setenv("ATTN_TOKENIZER_SECONDS", "0.2")
    one_line(attn("show", "a" * 300, "--model", own_bert), "ran for more than 0.2 s and was stopped")


def test_the_tokenizer_is_the_models_own_and_still_answers(own_bert):
    model = load_model(own_bert)
    assert tokens_module.encode(model, "time flies").strings == ("[CLS]", "time", "flies", "[SEP]")
    assert model.tokenizer.get_vocab_size(with_added_tokens=True) == model.vocab_size
    assert np.isfinite(model.weights["encoder.layer.0.attention.self.query.weight"]).all()


@pytest.mark.parametrize(
    "family, key, value, needle",
    [
        ("bert", "hidden_act", {}, "unsupported activation {}"),  # found by the thorough fuzz: an internal error
        ("bert", "hidden_act", ["gelu"], "unsupported activation ['gelu']"),
        ("llama", "rope_parameters", {"rope_type": ["llama3"]}, "rope type ['llama3'] is not supported"),
        ("llama", "rope_parameters", {"rope_type": "linear", "factor": [2]}, "factor must be a positive number"),
    ],
)
def test_a_config_value_of_the_wrong_type_is_one_line(tmp_path, family, key, value, needle):
    """A value of a config key that is a list or an object where a name or a number belongs: one line naming it."""
    if family == "bert":
        folder = make_bert(tmp_path / "m", config={key: value})
    else:
        folder = tmp_path / "m"
        shutil.copytree(Path(__file__).parent / "golden" / family, folder)
        config = json.loads((folder / "config.json").read_text())
        config[key] = value
        (folder / "config.json").write_text(json.dumps(config))
    one_line(attn("show", "time flies", "--model", folder), needle)


def _golden_with(tmp_path, family: str, **config) -> Path:
    folder = tmp_path / family
    shutil.copytree(Path(__file__).parent / "golden" / family, folder)
    c = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(c | config))  # json writes inf as Infinity, which it reads
    return folder


@pytest.mark.parametrize(
    "family, config, needle",
    [  # hostile round III: each was a MemoryError, RoPE tables of gigabytes, or an internal error
        ("llama", {"head_dim": 10**8}, "head size 100,000,000 (head_dim)"),
        ("llama", {"partial_rotary_factor": 1e6}, "at most 1, not 1000000.0"),
        ("llama", {"partial_rotary_factor": 2.0}, "at most 1, not 2.0"),
        ("llama", {"partial_rotary_factor": math.inf}, "partial_rotary_factor must be a positive number (finite)"),
        ("gemma2", {"query_pre_attn_scalar": math.inf}, "query_pre_attn_scalar must be a positive number (finite)"),
        ("bart", {"decoder_start_token_id": 10**9}, "decoder_start_token_id 1,000,000,000 is not a token"),
    ],
)
def test_a_hostile_size_in_config_json_is_refused_before_anything_is_built(tmp_path, family, config, needle):
    folder = _golden_with(tmp_path, family, **config)
    one_line(attn("show", "time flies", "--model", folder, env={"ATTN_MAX_MEMORY": "256M"}), needle)


def test_a_model_that_overflows_on_a_corpus_says_so_in_one_line(tmp_path):
    """Hostile round III: the workers flooded stderr with NumPy's RuntimeWarnings, then every line was said to be
    "blank or too long"."""
    folder = make_bert(tmp_path / "m")
    poke(folder, "encoder.layer.0.attention.self.query.weight", 3e38, slice(None))  # q = x W_Q overflows
    corpus = tmp_path / "c.txt"
    corpus.write_text("time flies like an arrow\nfruit flies like a banana\n" * 20)
    for workers in ("1", "2"):
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "attncli",
                "heads",
                "--model",
                folder,
                "--lines",
                "--file",
                corpus,
                "--workers",
                workers,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 1 and p.stdout == "", p.stderr
        assert p.stderr == (
            f"Error: no text: on every line of {corpus} it could take (40), m's numbers overflowed "
            "(non-finite attention weights)\n"
        )
