"""attncli: inspect attention in the terminal and in a notebook, exact and reproducible.

Each `attn` command is a function here, its options as keywords (the command line is a thin shell over them):

    >>> import attncli
    >>> r = attncli.show("time flies like an arrow", heads=2)
    >>> r.tokens, r.weights.shape
    (['time', 'flies', 'like', 'an', 'arrow'], (2, 5, 5))

and the pieces below them are here too:

    >>> from attncli import run, RunConfig
    >>> run("time flies like an arrow", RunConfig(heads=2)).weights.shape
    (2, 5, 5)

Every public name is imported on first use, so that `import attncli` loads no NumPy and `attn` can configure
NumPy's BLAS before NumPy loads (see cli/app.py).
"""

import importlib

__version__ = "0.1.0"

_PUBLIC = {  # name -> the module that holds it
    "show": "attncli.api",
    "show_lines": "attncli.api",
    "steps": "attncli.api",
    "view": "attncli.api",
    "heads": "attncli.api",
    "tokens": "attncli.api",
    "compare": "attncli.api",
    "compute": "attncli.api",
    "corpus": "attncli.api",
    "variants": "attncli.api",
    "rollout": "attncli.api",
    "lens": "attncli.api",
    "ablate": "attncli.api",
    "catalog": "attncli.api",
    "patch": "attncli.api",
    "dla": "attncli.api",
    "knockout": "attncli.api",
    "Generation": "attncli.models.runs.generate",
    "Attention": "attncli.api",
    "Page": "attncli.api",
    "Records": "attncli.api",
    "Lines": "attncli.api",
    "Output": "attncli.api",
    "load_model": "attncli.models",
    "AttnError": "attncli.errors",
    "ConfigError": "attncli.errors",
    "DataError": "attncli.errors",
    "VARIANTS": "attncli.core.variants",
    "attend": "attncli.core.attention",
    "AttentionResult": "attncli.pipeline.result",
    "RunConfig": "attncli.pipeline.config",
    "run": "attncli.pipeline.run",
    "TOKENIZERS": "attncli.pipeline.tokenize",
    "tokenize": "attncli.pipeline.tokenize",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'attncli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
