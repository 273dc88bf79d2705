"""Text from an argument, stdin or a file, strictly UTF-8."""

import pytest

from attncli.errors import ConfigError, DataError
from attncli.io.inputs import read_text
from attncli.pipeline.read import decode


def test_invalid_utf8_names_the_offset():
    with pytest.raises(DataError, match="byte 0xff at offset 3"):
        decode(b"abc\xff", "stdin")


def test_file_and_text(tmp_path):
    (tmp_path / "t.txt").write_text("time flies", encoding="utf-8")
    assert read_text(None, str(tmp_path / "t.txt")) == "time flies"
    with pytest.raises(ConfigError):
        read_text("x", str(tmp_path / "t.txt"))
    with pytest.raises(ConfigError, match="no text"):
        read_text(None, None)
    with pytest.raises(DataError, match="no such file"):
        read_text(None, str(tmp_path / "missing.txt"))
    with pytest.raises(DataError, match="directory"):
        read_text(None, str(tmp_path))
