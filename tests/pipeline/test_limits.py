"""The resource guard: token counts and memory estimates are checked before anything of size n² exists."""

import doctest
import itertools
import json
import random
import sys
import tracemalloc

import numpy as np
import pytest

import attncli.pipeline.limits
from attncli.cli.hints import HEAD_STATISTICS
from attncli.errors import ConfigError, DataError
from attncli.pipeline.budget import parse_size
from attncli.pipeline.config import RunConfig
from attncli.pipeline.limits import NO_LIMITS, Limits, MemoryRefused, run_bytes
from attncli.pipeline.run import run
from tests.conftest import ROOT, attn, refused

tokenize_module = sys.modules["attncli.pipeline.tokenize"]


def traced_peak(fn):
    """`fn()` and the most memory Python allocated while it ran (tracemalloc): what a refusal built."""
    tracemalloc.start()
    try:
        value = fn()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def ten_mb() -> str:
    words = (ROOT / "sample_texts" / "bpe_corpus.txt").read_text(encoding="utf-8").split()
    rng = random.Random(0)
    return " ".join(rng.choice(words) for _ in range(2_000_000))[:10_000_000]


def test_doctests():
    assert doctest.testmod(attncli.pipeline.limits).failed == 0
    assert doctest.testmod(tokenize_module).failed == 0


@pytest.mark.parametrize(
    "tokenizer, count", [("char", "10,000,000 char tokens"), ("word", "about 2,1"), ("bpe", "about 2,")]
)
def test_a_10_mb_text_is_refused_before_it_is_tokenized(ten_mb, tmp_path, tokenizer, count):
    """Refused from its count: 10 million tokens would be gigabytes of strings and offsets; the refusal
    allocates a few copies of the text at most."""
    path = tmp_path / "big.txt"
    path.write_text(ten_mb, encoding="utf-8")
    assert attn("show", "warm up", "-t", tokenizer).exit_code == 0  # the tokenizer loaded before the peak counts
    for args in (["show", ten_mb], ["show", "--file", str(path)], ["steps", "--file", str(path), "-f", "json"]):
        r, peak = traced_peak(lambda: attn(*args, "-t", tokenizer))  # noqa: B023  (called at once)
        message = refused(
            r,
            "Error: the text has ",
            count,
            "more than --max-tokens 4,096",
            "its attention weights alone would take 1 head × ",
            "TiB",
            "Try a shorter text",
        )
        assert peak < 8 * len(ten_mb), f"{peak:,} bytes"
    assert "--lines" in message or args[0] == "steps"
    if tokenizer == "char":
        assert "the word or bpe tokenizer (fewer tokens)" in message
    r = attn("show", "-", "--lines", "-t", tokenizer, input=ten_mb[:200_000] + "\nshort line\n")
    refused(r, "Error: stdin line 1: the text has", "more than --max-tokens")


def test_compare_and_tokens_refuse_too_many_tokens_too(ten_mb):
    assert attn("show", "warm up", "-t", "bpe").exit_code == 0  # the tokenizer loaded before the peak counts
    for args, needles in (
        (["compare", ten_mb], ["the text has 10,000,000 char tokens", "the word or bpe tokenizer"]),
        (["compare", ten_mb, "--tokenizers", "word,bpe"], ["word tokens"]),
        (["tokens", ten_mb, "-t", "bpe"], ["bpe tokens", "attn tokens lists every one"]),
        (["show", "a", "--context", ten_mb], ["the context has about"]),
    ):
        r, peak = traced_peak(lambda: attn(*args))  # noqa: B023  (called at once)
        refused(r, *needles)
        assert peak < 8 * len(ten_mb), (args[0], f"{peak:,} bytes")


def test_the_exact_count_is_checked_after_tokenizing(wordpiece_json):
    # BERT adds [CLS] and [SEP]: 24 characters, 8 tokens; a byte-level BPE makes several tokens of one emoji.
    refused(
        attn("show", "time flies like an arrow", "-t", wordpiece_json, "--max-tokens", "7"),
        "8 wordpiece.json tokens, more than --max-tokens 7",
    )  # [CLS] time flies like an arr ##ow [SEP]
    assert attn("show", "time flies like an arrow", "-t", wordpiece_json, "--max-tokens", "8").exit_code == 0
    n_bpe = len(json.loads(attn("tokens", "😀🙃", "-t", "bpe", "-f", "json").stdout)["rows"])
    assert n_bpe > 2
    refused(attn("show", "😀🙃", "-t", "bpe", "--max-tokens", "2"), f"{n_bpe} bpe tokens, more than --max-tokens 2")
    refused(attn("tokens", "😀🙃", "-t", "bpe", "--max-tokens", "2"), f"{n_bpe} bpe tokens")


def test_the_prefix_probe_of_a_tokenizer_json_is_an_underestimate(monkeypatch):
    """The probe never refuses a text that the exact count would accept (the prefix ends where a word does)."""
    rng = random.Random(1)
    words = ["time", "flies", "like", "an", "arrow", "😀", "naïve", "don't", "x" * 30, "\u0301", "漢字"]
    monkeypatch.setattr(tokenize_module, "PROBE_CHARS_PER_TOKEN", 1)  # probe even short texts
    for _ in range(40):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 200)))
        exact = len(tokenize_module.tokenize(text, "bpe"))
        tokenize_module.tokenize(text, "bpe", max_tokens=exact)  # exactly at the limit: accepted
        with pytest.raises(tokenize_module.TooManyTokens):
            tokenize_module.tokenize(text, "bpe", max_tokens=exact - 1)


def test_the_4000_character_json_of_issue_5_fits_the_defaults():
    for output in (None, HEAD_STATISTICS):
        config = RunConfig(tokenizer="char").resolve()
        e = run_bytes(config, 4000, 4000, output=output)
        assert e.total < Limits().max_bytes, attncli.pipeline.limits.human_bytes(e.total)
    assert attncli.pipeline.limits.MAX_TOKENS >= 4000


def test_memory_past_the_limit_is_refused_with_the_estimate_and_what_fits():
    huge = ["--heads", "256", "--dim", "4096", "--dk", "4096", "--dv", "4096"]
    r, peak = traced_peak(lambda: attn("show", "a b", *huge))
    assert peak < 16 * 2**20, f"{peak:,} bytes: the projections were drawn before the refusal"
    message = refused(
        r,
        "this run would need about 128.1 GiB of memory, more than the 2 GiB allowed",
        "W_Q, W_K, W_V, W_O 128 GiB",
        "fewer --heads",
        "a smaller --dim, --dk or --dv",
        "ATTN_MAX_MEMORY",
    )
    text = " ".join(f"w{i}" for i in range(3000))
    message = refused(
        attn("show", text, "--heads", "8", "-f", "json", env={"ATTN_MAX_MEMORY": "1G"}),
        "8 heads × 3,000 × 3,000 = 72,000,000 cells × 16 bytes",
        "fewer --heads",
    )
    assert "-f npz" not in message
    refused(
        attn("steps", text, "-v", "additive", "-f", "json"), "JSON of the largest array", "-f npz", "a smaller --d-a"
    )
    refused(
        attn("steps", text, "-v", "additive", "-f", "npz", "--d-a", "64", "-o", "/dev/null"),
        "additive's tanh(W₁q + W₂k + b) 4.3 GiB",
        "a smaller --d-a",
    )
    refused(attn("show", "a b c", "--heads", "2", env={"ATTN_MAX_MEMORY": "1K"}), "more than the 1 KiB allowed")
    small = " ".join(f"w{i}" for i in range(1000))  # 8 heads × 10⁶ cells × 16 bytes: about 122 MiB
    refused(
        attn("show", small, "--heads", "8", "-f", "npy", "-o", "/dev/null", env={"ATTN_MAX_MEMORY": "100M"}),
        "more than the 100 MiB allowed",
    )
    assert (
        attn("show", small, "--heads", "8", "-f", "npy", "-o", "/dev/null", env={"ATTN_MAX_MEMORY": "200M"}).exit_code
        == 0
    )


def test_the_refusal_carries_the_estimate_and_what_the_cheaper_paths_need():
    """The pipeline speaks bytes: no hint without the CLI's, but the estimate and the cheaper paths' bytes."""
    text = " ".join(f"w{i}" for i in range(3000))
    with pytest.raises(MemoryRefused) as e:
        run(text, RunConfig(), limits=Limits(max_bytes=64 * 2**20))
    assert e.value.estimate.cells == 3000 * 3000
    assert set(e.value.fits) == {"outputs-only", "float32"}
    assert e.value.fits["outputs-only"] < 64 * 2**20 < e.value.estimate.total
    assert "Try or set ATTN_MAX_MEMORY" in str(e.value) and "--no-weights" not in str(e.value)


def test_compare_checks_all_its_runs_together():
    text = " ".join(f"w{i}" for i in range(400))
    alone = run_bytes(RunConfig().resolve(), 400, 400, output=HEAD_STATISTICS).total
    env = {"ATTN_MAX_MEMORY": str(int(alone * 2.5))}
    assert attn("compare", text, "--tokenizers", "word", "-f", "json", env=env).exit_code == 0
    refused(
        attn("compare", text, "--tokenizers", "word", "--variants", "dot,scaled,cosine", "-f", "json", env=env),
        "comparing 3 runs would need about",
        "3 runs of up to 1 head × 400 × 400",
    )


def test_compute_checks_m_by_n_before_attending(tmp_path):
    q = json.dumps({"q": [[1.0]] * 3000})
    refused(
        attn("compute", "-f", "json", input=q, env={"ATTN_MAX_MEMORY": "64M"}),
        "attention on these matrices would need about",
        "1 head × 3,000 × 3,000",
        "smaller matrices",
    )
    big = np.lib.format.open_memmap(tmp_path / "q.npy", mode="w+", dtype=np.float64, shape=(60_000, 1))
    del big
    refused(attn("compute", "--q", str(tmp_path / "q.npy")), "1 head × 60,000 × 60,000", "GiB")
    huge = np.lib.format.open_memmap(tmp_path / "huge.npy", mode="w+", dtype=np.float64, shape=(200_000, 1))
    del huge
    refused(attn("compute", "--q", str(tmp_path / "huge.npy")), "200,000 rows of Q, more than 65,536")


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", "a", "--max-tokens", "0"], "--max-tokens must be at least 1"),
        (["tokens", "a", "--max-tokens", "-5"], "--max-tokens must be at least 1"),
        (["compare", "a", "--max-tokens", "x"], "'x' is not a valid int"),
    ],
)
def test_max_tokens_must_be_positive(args, message):
    r = attn(*args)
    assert r.exit_code == 2 and message in r.stderr, r.stderr


def test_attn_max_memory():
    assert parse_size("2G") == 2 * 2**30 and parse_size("1.5 GiB") == 3 * 2**29 and parse_size("123") == 123
    assert parse_size("none") is None and parse_size("0") is None
    with pytest.raises(ConfigError):
        parse_size("lots")
    r = attn("show", "a", env={"ATTN_MAX_MEMORY": "lots"})
    assert r.exit_code == 2 and "ATTN_MAX_MEMORY must be a size such as 2G" in r.stderr


def test_the_estimate_bounds_what_a_run_allocates():
    """tracemalloc's peak over every variant and mask kind, with and without trace: at most the estimate
    (+20% where fixed costs dominate), and not wildly above it either."""
    n = 300
    text = " ".join(f"w{i}" for i in range(n))
    for variant, mask, heads, trace in itertools.product(
        ["dot", "scaled", "cosine", "additive", "multiplicative", "gated"],
        [(), ("causal", "topk:3")],
        [2],
        [False, True],
    ):
        config = RunConfig(variant=variant, mask=mask, heads=heads, dim=48)
        tracemalloc.start()
        run(text, config, trace=trace, limits=NO_LIMITS)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        estimate = run_bytes(config.resolve(), n, n, trace).total
        assert 0.3 < peak / estimate < 1.2, (variant, mask, heads, trace, peak, estimate)


def test_the_library_default_is_guarded_too():
    with pytest.raises(DataError, match="more than --max-tokens 4,096"):
        run("x" * 4097, RunConfig(tokenizer="char"))
    with pytest.raises(DataError, match="the context has 7 char tokens, more than --max-tokens 6"):
        run("x", RunConfig(tokenizer="char"), context="y" * 7, limits=Limits(max_tokens=6))
    assert run("x" * 6, RunConfig(tokenizer="char"), limits=Limits(max_tokens=6)).weights.shape == (1, 6, 6)


def test_the_outputs_only_path_is_estimated_as_it_streams():
    """--no-weights never holds an n × n matrix: a run the weights path could not afford fits."""
    text = " ".join(f"w{i}" for i in range(3000))
    env = {"ATTN_MAX_MEMORY": "64M"}
    refused(
        attn("show", text, "-f", "json", env=env),
        "1 head × 3,000 × 3,000",
        "--no-weights (the outputs only, in blocks: never an n × n matrix)",
        "--dtype float32",
    )
    r = attn("show", text, "--no-weights", "-f", "json", env=env)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["heads"][0]["weights"] is None
    refused(attn("show", text, "-v", "additive", "-f", "json", env=env), "--dtype float32")
    assert "--no-weights" not in refused(attn("show", text, "-v", "additive", "-f", "json", env=env))
    e = run_bytes(RunConfig(weights=False).resolve(), 100_000, 100_000)
    assert e.cells == 0 and e.total < 2**30 and "outputs only" in e.describe()
    half = run_bytes(RunConfig(dtype="float32").resolve(), 3000, 3000).parts["attention"]
    assert half * 2 == run_bytes(RunConfig().resolve(), 3000, 3000).parts["attention"]
