"""attncli: inspect attention in the terminal, exact and reproducible.

    >>> from attncli import run, RunConfig
    >>> run("time flies like an arrow", RunConfig(heads=2)).weights.shape
    (2, 5, 5)

The public names are imported on first use, so that `attn` can configure NumPy's BLAS
before NumPy loads (see cli/app.py).
"""

import importlib

__version__ = "0.1.0"

_PUBLIC = {
    "VARIANTS": "attncli.core.attention",
    "attend": "attncli.core.attention",
    "AttentionResult": "attncli.pipeline.result",
    "RunConfig": "attncli.pipeline.config",
    "run": "attncli.pipeline.run",
    "TOKENIZERS": "attncli.pipeline.tokenize",
    "tokenize": "attncli.pipeline.tokenize",
}

__all__ = ["TOKENIZERS", "VARIANTS", "AttentionResult", "RunConfig", "__version__", "attend", "run", "tokenize"]


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'attncli' has no attribute {name!r}")
