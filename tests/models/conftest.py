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


@pytest.fixture(params=["numpy", "mkl"])
def backend(request, monkeypatch):
    """The blocks' GELU and products with NumPy alone, then through Intel MKL (attncli.core.mkl); the "mkl" run
    is skipped where the optional mkl package is not installed, the "numpy" one runs even where it is."""
    from attncli.core import mkl
    from attncli.models.network import blocks

    if request.param == "numpy":
        monkeypatch.setattr(blocks, "_mkl", lambda: None)
    elif mkl.load() is None:
        pytest.skip("the optional mkl package is not installed")
    return request.param
