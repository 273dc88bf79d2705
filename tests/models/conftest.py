"""The backend fixture of the models tests (the tiny models themselves are tests/conftest.py's)."""

import pytest


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
