"""Hypothesis profiles: `ci` (the default) is derandomized with no deadline, so a noisy
machine never fails a run; `thorough` runs many more examples by hand:

    HYPOTHESIS_PROFILE=thorough pytest
"""

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from attncli.cli.app import app

ROOT = Path(__file__).resolve().parents[1]  # the checkout: README.md, docs/, sample_texts/

settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_runner = CliRunner()


def attn(*args, input=None, env=None):
    """Run `attn ARGS...` in-process, as a user would type it (arguments may be paths or numbers)."""
    return _runner.invoke(app, [str(a) for a in args], input=input, env=env)


def refused(r, *needles: str, code: int = 1) -> str:
    """An `attn` run that refused: exit `code` (1: unusable data, 2: a wrong command line), no traceback, and
    exactly one line on stderr, `Error: ...`, naming each of `needles`, never an internal error. -> that line."""
    assert r.exit_code == code, (r.exit_code, r.output)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.output, r.output
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)
    return r.stderr


SGR = re.compile(rb"\x1b\[[0-9;]*m")  # Rich's colour codes: the only escape sequences attn may print
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\u2028\u2029\ufeff]")


def inert(data: bytes, context=None) -> str:
    """The text a terminal gets, checked: only SGR colour codes may carry ESC; nothing else may act or hide."""
    text = SGR.sub(b"", data).decode("utf-8")
    bad = sorted({f"U+{ord(c):04X}" for c in UNSAFE.findall(text)})
    assert not bad, (context, f"raw {bad} reached the terminal")
    return text


@pytest.fixture(scope="session")
def wordpiece_json(tmp_path_factory) -> str:
    """A tiny BERT-style tokenizer.json (lowercasing, [UNK], [CLS] ... [SEP]), 9 tokens."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "time": 3, "flies": 4, "like": 5, "an": 6, "arr": 7, "##ow": 8}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    path = tmp_path_factory.mktemp("tok") / "wordpiece.json"
    tok.save(str(path))
    return str(path)


# ---- models: each fixture defined once, here, with one type ------------------------------------------------


@pytest.fixture(scope="session")
def bert(tmp_path_factory):  # -> Model
    """A tiny random BERT (2 layers, 2 heads, d_model 16; tests/model_fixtures.py's make_bert), loaded once per
    session; its folder, bert-tiny, is `bert.path`."""
    from attncli.models import load_model
    from tests.model_fixtures import make_bert

    return load_model(make_bert(tmp_path_factory.mktemp("m") / "bert-tiny"))


@pytest.fixture(scope="session")
def bert_3x4(tmp_path_factory) -> Path:
    """A tiny random BERT folder of 3 layers and 4 heads: a last layer that is not the next one, and heads to
    rank, for the commands' tests."""
    from tests.model_fixtures import make_bert

    return make_bert(tmp_path_factory.mktemp("m") / "bert-tiny", n_layer=3, n_head=4)


@pytest.fixture(scope="session")
def gpt2(tmp_path_factory):  # -> Model
    """A tiny random GPT-2 (2 layers, 2 heads, d_model 16; make_gpt2), loaded once per session; its folder,
    gpt2-tiny, is `gpt2.path`."""
    from attncli.models import load_model
    from tests.model_fixtures import make_gpt2

    return load_model(make_gpt2(tmp_path_factory.mktemp("m") / "gpt2-tiny"))


@pytest.fixture(scope="session")
def llama():  # -> Model
    """The golden Llama folder (tests/models/golden/llama, random weights checked against transformers)."""
    from attncli.models import load_model

    return load_model(ROOT / "tests" / "models" / "golden" / "llama")


@pytest.fixture(scope="module")
def smollm2():  # -> Model
    """SmolLM2-135M-Instruct Q4_1 (tests/smollm2.py says where it is), loaded once per module that uses it (a
    module's runs may leave what they dequantized on it); skips, saying why, where it is not on this machine."""
    from attncli.models import load_model
    from tests.smollm2 import SKIP, smollm2_path

    path = smollm2_path()
    if path is None:
        pytest.skip(SKIP)
    return load_model(path)
