"""Fuzz what arrives from outside the command line: model folders (configs, tokenizers, weights and indexes of the
tiny models of tests/model_fixtures.py, corrupted at random), tokenizer.json internals (normalizers and
pre-tokenizer regexes), compute JSON of any shape, and environment variables.

The bar is test_fuzz.py's (`invoke`): never a traceback or an "internal error" (that path is a bug report),
exit 0, 1 or 2, one `Error:` line, nothing unsafe on the terminal, no temporary file left; and what a success
writes as JSON is strict (no NaN) with weight rows that sum to 1. Examples: EXAMPLES under the `ci` profile,
twenty times as many under `HYPOTHESIS_PROFILE=thorough`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.cli.test_fuzz import (
    TEXT,
    check_attention_json,
    fmt_of,
    invoke,
    opt,
    output_options,
    precision_of,
    strict_json,
)
from tests.cli.test_fuzz import (
    fuzz_settings as _fuzz_settings,
)
from tests.model_fixtures import make_bert, make_gpt2

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="tokenizers run in a forked child")

EXAMPLES = {"folders": 60, "tokenizer_internals": 40, "compute_json": 60, "environment": 40}
THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
LIMITS = {"ATTN_TOKENIZER_SECONDS": "3", "ATTN_MAX_MEMORY": "512M", "COLUMNS": "120"}  # a hostile run stays short


def fuzz_settings(test: str):
    """test_fuzz.py's settings, without the shrink phase: an example builds a folder and forks, so shrinking a
    failure took minutes; the failing example is printed as found."""
    from hypothesis import Phase, settings

    phases = [Phase.explicit, Phase.reuse, Phase.generate]
    return settings(_fuzz_settings("show"), max_examples=EXAMPLES[test] * (20 if THOROUGH else 1), phases=phases)


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bases")
    return {
        "bert": make_bert(root / "bert"),
        "bert-vocab": make_bert(root / "bert-vocab", tokenizer="vocab", shards=2),
        "gpt2": make_gpt2(root / "gpt2"),
        "gpt2-bpe": make_gpt2(root / "gpt2-bpe", tokenizer="bpe", shards=2),
    }


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("out")


# ---- model folders --------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.sampled_from([0, -1, 10**9, 10**12, 2**63, 10**400, 1e-300, 1e300, 0.5, "gelu", "", "bert", "gpt2"]),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=6,
)
CONFIG_KEYS = [
    "model_type",
    "num_hidden_layers",
    "n_layer",
    "hidden_size",
    "n_embd",
    "num_attention_heads",
    "n_head",
    "intermediate_size",
    "n_inner",
    "max_position_embeddings",
    "n_positions",
    "vocab_size",
    "hidden_act",
    "activation_function",
    "layer_norm_eps",
    "layer_norm_epsilon",
    "position_embedding_type",
    "is_decoder",
    "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx",
]
TOKENIZER_PARTS = ["normalizer", "pre_tokenizer", "model", "post_processor", "decoder", "added_tokens", "truncation"]
HOSTILE_PARTS = [
    {"type": "Replace", "pattern": {"String": "a"}, "content": "aaaaaaaaaa"},
    {"type": "Split", "pattern": {"Regex": r"(\w+\s?)*$"}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"Regex": ""}, "behavior": "Removed", "invert": True},
    {"type": "Sequence", "normalizers": []},
    {"type": "WordLevel", "vocab": {}, "unk_token": None},
    {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "b"]]},
]
DEEP = "[" * 5000 + "]" * 5000


def _read_json(path: Path):
    """The document, or None when an earlier mutation left it unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError):
        return None


def _write_json(path: Path, doc) -> None:
    path.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8")


def corrupt_bytes(path: Path, data, how: str) -> None:
    """Truncate, overwrite a stretch, or replace the file with nesting or non-UTF-8."""
    raw = path.read_bytes()
    cut = data.draw(st.integers(0, len(raw)))
    if how == "truncate":
        path.write_bytes(raw[:cut])
    elif how == "overwrite":
        path.write_bytes(raw[:cut] + data.draw(st.binary(min_size=1, max_size=16)) + raw[cut + 16 :])
    elif how == "deep":
        path.write_text('{"model_type": "bert", "x": ' + DEEP + "}")
    else:
        path.write_bytes(b"\xff\xfe" + raw[:cut])


def mutate_config(folder: Path, data) -> None:
    path = folder / "config.json"
    how = data.draw(st.sampled_from(["set", "set", "set", "delete", "truncate", "overwrite", "deep", "other"]))
    doc = _read_json(path)
    if how in ("set", "delete") and isinstance(doc, dict):
        key = data.draw(st.sampled_from(CONFIG_KEYS))
        if how == "set":
            doc[key] = data.draw(JSON_VALUES)
        else:
            doc.pop(key, None)
        _write_json(path, doc)
    elif how in ("set", "delete", "other"):
        _write_json(path, data.draw(JSON_VALUES))
    else:
        corrupt_bytes(path, data, how)


def mutate_tokenizer(folder: Path, data) -> None:
    path = folder / "tokenizer.json"
    if not path.exists():
        victim = data.draw(st.sampled_from([p for p in sorted(folder.iterdir()) if p.suffix in (".txt", ".json")]))
        corrupt_bytes(victim, data, data.draw(st.sampled_from(["truncate", "overwrite", "deep", "other"])))
        return
    how = data.draw(st.sampled_from(["part", "part", "hostile", "truncate", "overwrite", "deep", "delete"]))
    doc = _read_json(path)
    if how in ("part", "hostile") and isinstance(doc, dict):
        part = data.draw(st.sampled_from(TOKENIZER_PARTS))
        doc[part] = data.draw(JSON_VALUES if how == "part" else st.sampled_from(HOSTILE_PARTS))
        _write_json(path, doc)
    elif how == "delete":
        path.unlink()
    else:
        corrupt_bytes(path, data, "truncate" if how in ("part", "hostile") else how)


def mutate_weights(folder: Path, data) -> None:
    from safetensors.numpy import load_file, save_file

    files = sorted(folder.glob("*.safetensors"))
    path = data.draw(st.sampled_from(files))
    how = data.draw(st.sampled_from(["poke", "poke", "drop", "reshape", "dtype", "truncate", "overwrite"]))
    if how in ("truncate", "overwrite"):
        corrupt_bytes(path, data, how)
        return
    try:
        tensors = load_file(str(path))
    except Exception:  # an earlier mutation broke the file: break it some more
        return corrupt_bytes(path, data, "overwrite")
    name = data.draw(st.sampled_from(sorted(tensors)))
    t = tensors[name]
    if how == "poke" and t.size and t.dtype.kind == "f":
        t = t.copy()
        cells = slice(None) if data.draw(st.booleans()) else slice(0, 1)
        t.reshape(-1)[cells] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf, 3e38, -3e38, 0.0, 1e-45]))
        tensors[name] = t
    elif how == "drop":
        del tensors[name]
    elif how == "reshape":
        tensors[name] = t.reshape(-1)
    elif how == "dtype":
        with np.errstate(invalid="ignore", over="ignore"):
            tensors[name] = t.astype(data.draw(st.sampled_from([np.float16, np.float64, np.int32, np.int8])))
    save_file(tensors, str(path), metadata={"format": "pt"})


def mutate_index(folder: Path, data) -> None:
    path = folder / "model.safetensors.index.json"
    if not path.exists():
        return mutate_weights(folder, data)
    doc = _read_json(path)
    how = data.draw(st.sampled_from(["shard", "shard", "map", "truncate", "deep"]))
    if not isinstance(doc, dict) or not isinstance(doc.get("weight_map"), dict) or not doc["weight_map"]:
        how = how if how in ("truncate", "deep") else "truncate"
    if how == "shard":
        name = data.draw(st.sampled_from(sorted(doc["weight_map"])))
        doc["weight_map"][name] = data.draw(
            st.one_of(
                st.sampled_from(["../x.safetensors", "/etc/hostname", "", ".", "config.json", "nope.safetensors", 3]),
                st.text(max_size=6),
            )
        )
        _write_json(path, doc)
    elif how == "map":
        doc["weight_map"] = data.draw(JSON_VALUES)
        _write_json(path, doc)
    else:
        corrupt_bytes(path, data, how)


MUTATIONS = [mutate_config, mutate_tokenizer, mutate_weights, mutate_index]


def model_command(folder: Path, text: str, data) -> list[str]:
    command = data.draw(st.sampled_from(["show", "show", "steps", "tokens", "heads", "compare"]))
    args = [command, "--model", str(folder)]
    if command in ("show", "steps", "compare"):
        args += data.draw(opt("--layer", st.sampled_from([0, -1, 1]), st.just(99)))
        args += data.draw(opt("--head", st.sampled_from([0, 1]), st.just(-99)))
    if command == "show":
        args += data.draw(st.sampled_from([[], [], ["--rollout"]]))
    formats = {"tokens": ("table", "json", "csv"), "heads": ("table", "json", "csv"), "compare": ("table", "json")}
    args += data.draw(output_options(formats.get(command, ("table", "json", "jsonl", "csv", "npy"))))
    if "--rollout" in args and "--head" in args:
        args.remove("--rollout")
    return [*args, "--", text]


@fuzz_settings("folders")
@given(data=st.data(), text=TEXT)
def test_fuzz_model_folders(bases, tmp_path_factory, out_dir, data, text):
    base = data.draw(st.sampled_from(sorted(bases)))
    folder = tmp_path_factory.mktemp("model") / base
    shutil.copytree(bases[base], folder)
    for mutate in data.draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3)):
        mutate(folder, data)
    args = model_command(folder, text, data)
    r, _ = invoke(args, out_dir, env=LIMITS)
    if r.exit_code == 0 and fmt_of(args) == "json":
        doc = strict_json(r.stdout)  # never NaN or Infinity
        if "heads" in doc and "config" in doc:
            check_attention_json(doc, precision_of(args))
    shutil.rmtree(folder)


# ---- tokenizer.json internals ---------------------------------------------------------------------------

REGEX_PIECES = [
    r"\w+",
    r"\s",
    r"\s?",
    r"[^\w\s]+",
    r"(a|a)*",
    r"(\w+\s?)*$",
    r"\p{L}+",
    r"(?<=a)",
    r"\b",
    r"",
    "(",
    "*",
]
NORMALIZERS = st.sampled_from(
    [
        {"type": "Lowercase"},
        {"type": "NFKC"},
        {"type": "NFD"},
        {"type": "StripAccents"},
        {"type": "Strip", "strip_left": True, "strip_right": True},
        {"type": "Prepend", "prepend": "▁"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁▁"},
        {"type": "Replace", "pattern": {"String": "a"}, "content": "aaaaaaaaaa"},
        {"type": "Replace", "pattern": {"Regex": "(?=.)"}, "content": "x"},
        {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "lowercase": True},
    ]
)


@st.composite
def pre_tokenizers(draw):
    kind = draw(st.sampled_from(["Split", "Split", "Whitespace", "ByteLevel", "Metaspace", "Digits", "Punctuation"]))
    if kind != "Split":
        return {"type": kind} | ({"add_prefix_space": True, "trim_offsets": True} if kind == "ByteLevel" else {})
    pattern = "".join(draw(st.lists(st.sampled_from(REGEX_PIECES), min_size=1, max_size=3)))
    behavior = draw(st.sampled_from(["Isolated", "Removed", "MergedWithPrevious", "Contiguous"]))
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": draw(st.booleans())}


@fuzz_settings("tokenizer_internals")
@given(data=st.data(), text=TEXT)
def test_fuzz_tokenizer_internals(wordpiece_json, tmp_path_factory, out_dir, data, text):
    doc = json.loads(Path(wordpiece_json).read_text(encoding="utf-8"))
    normalizers = data.draw(st.lists(NORMALIZERS, max_size=4))
    doc["normalizer"] = {"type": "Sequence", "normalizers": normalizers} if normalizers else None
    tokenizers = data.draw(st.lists(pre_tokenizers(), min_size=1, max_size=2))
    doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": tokenizers}
    path = tmp_path_factory.mktemp("tok") / "hostile.json"
    _write_json(path, doc)
    command = data.draw(st.sampled_from(["show", "tokens"]))
    args = [command, "-t", str(path), *data.draw(opt("--max-tokens", st.sampled_from([3, 100]))), "--", text]
    invoke(args, out_dir, env=LIMITS)


# ---- compute inputs and the environment -----------------------------------------------------------------


@fuzz_settings("compute_json")
@given(data=st.data(), doc=JSON_VALUES, shape=st.sampled_from(["raw", "q", "qkv", "deep"]))
def test_fuzz_compute_json(out_dir, data, doc, shape):
    if shape == "q":
        doc = {"q": doc}
    elif shape == "qkv":
        doc = {"q": [[1.0, 2.0]], "k": doc, "v": [[0.5]]}
    text = json.dumps(doc, allow_nan=True) if shape != "deep" else '{"q": ' + DEEP + "}"
    args = ["compute", *data.draw(output_options(("table", "json", "csv")))]
    r, _ = invoke(args, out_dir, input=text)
    if r.exit_code == 0 and fmt_of(args) == "json":
        check_attention_json(strict_json(r.stdout), precision_of(args))


ENV_VALUES = st.one_of(
    st.sampled_from(["", " ", "0", "-1", "1", "3", "99999999", "1e9", "nan", "inf", "1K", "2G", "9" * 300, "\x1b[2J"]),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=8),
)
ENV_NAMES = ["COLUMNS", "LINES", "ATTN_MAX_MEMORY", "ATTN_TOKENIZER_SECONDS", "NO_COLOR", "TERM", "ATTN_DEBUG"]


@fuzz_settings("environment")
@given(data=st.data(), env=st.dictionaries(st.sampled_from(ENV_NAMES), ENV_VALUES, min_size=1, max_size=4))
def test_fuzz_environment(wordpiece_json, out_dir, data, env):
    env.pop("ATTN_DEBUG", None)  # ATTN_DEBUG=1 asks for the traceback: not an odd value
    command = data.draw(st.sampled_from([["show"], ["show", "-t", wordpiece_json], ["tokens"], ["steps"]]))
    args = [*command, *data.draw(output_options(("table", "json", "csv"))), "--", "time flies like an arrow"]
    invoke(args, out_dir, env={"COLUMNS": "120", **env})
