"""Untrusted native code runs contained: a crash, a runaway or a blow-up is one DataError, never the end of attn."""

from __future__ import annotations

import os
import sys

import pytest

from attncli.errors import ConfigError, DataError
from attncli.pipeline.contain import contained, seconds_from
from tests.conftest import attn, refused

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="containment forks")


def _forever() -> None:
    while True:
        pass


def _config_error() -> None:
    raise ConfigError("a message of ours")


def _allocate(n: int) -> int:
    return len(bytearray(n))


def test_a_value_comes_back_and_an_error_keeps_its_class():
    assert contained(sorted, [3, 1, 2], what="x") == [1, 2, 3]
    with pytest.raises(ConfigError, match=r"^a message of ours$"):
        contained(_config_error, what="x")


def test_a_runaway_is_stopped_after_its_time():
    with pytest.raises(DataError, match=r"x ran for more than 0\.2 s and was stopped"):
        contained(_forever, what="x", seconds=0.2)


def test_an_abort_is_a_crash_not_the_end_of_attn():
    with pytest.raises(DataError, match=r"x crashed \(signal SIGABRT\)"):
        contained(os.abort, what="x")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory limit reads /proc")
def test_memory_beyond_the_budget_is_refused():
    with pytest.raises(DataError, match="needed more than its memory"):
        contained(_allocate, 2**31, what="x", memory=2**28)


def test_the_time_limit_is_checked():
    assert seconds_from({"ATTN_TOKENIZER_SECONDS": "1.5"}) == 1.5
    for bad in ("0", "-1", "abc", "1e9"):
        with pytest.raises(ConfigError, match="ATTN_TOKENIZER_SECONDS must be a number of seconds"):
            seconds_from({"ATTN_TOKENIZER_SECONDS": bad})


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory limit reads /proc")
def test_a_normalizer_that_multiplies_the_text_is_one_line(tmp_path, monkeypatch):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.normalizer = normalizers.Sequence([normalizers.Replace("a", "a" * 10)] * 9)  # 1 char -> 10^9
    path = tmp_path / "blowup.json"
    tok.save(str(path))
    monkeypatch.setenv("ATTN_MAX_MEMORY", "256M")
    r = attn("show", "aaaa", "-t", path)
    assert refused(r).startswith(f"Error: tokenizer {path} ")
