"""Hypothesis profiles: `ci` (the default) is derandomized with no deadline, so a noisy
machine never fails a run; `thorough` runs many more examples by hand:

    HYPOTHESIS_PROFILE=thorough pytest
"""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def wordpiece_json(tmp_path) -> str:
    """A tiny BERT-style tokenizer.json (lowercasing, [UNK], [CLS] ... [SEP]), 9 tokens."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "time": 3, "flies": 4, "like": 5, "an": 6, "arr": 7, "##ow": 8}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    path = tmp_path / "wordpiece.json"
    tok.save(str(path))
    return str(path)
