"""attncli: inspect attention in the terminal, exact and reproducible.

    >>> from attncli import run, RunConfig
    >>> run("time flies like an arrow", RunConfig(heads=2)).weights.shape
    (2, 5, 5)
"""

__version__ = "0.1.0"

from attncli.attention import VARIANTS, attend  # noqa: E402
from attncli.pipeline import AttentionResult, RunConfig, run  # noqa: E402
from attncli.tokenize import TOKENIZERS, tokenize  # noqa: E402

__all__ = ["__version__", "run", "RunConfig", "AttentionResult", "attend", "tokenize", "VARIANTS", "TOKENIZERS"]
