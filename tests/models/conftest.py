"""Tiny random BERT and GPT-2 models, built once per session (nothing is downloaded)."""

import pytest

from attncli.models import load_model
from tests.model_fixtures import make_bert, make_gpt2


@pytest.fixture(scope="session")
def bert(tmp_path_factory):
    return load_model(make_bert(tmp_path_factory.mktemp("m") / "bert-tiny"))


@pytest.fixture(scope="session")
def gpt2(tmp_path_factory):
    return load_model(make_gpt2(tmp_path_factory.mktemp("m") / "gpt2-tiny"))
