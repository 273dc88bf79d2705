"""The reference environment of the tools that make goldens: the torch and transformers the goldens came from.

Make it once, next to the checkout (never attncli's dependencies; CI and the tests never need it):

    python3 -m venv ref && ref/bin/pip install torch==2.13.0 transformers==5.23.0 gguf==0.19.0 \\
        tokenizers==0.23.3 safetensors accelerate numpy

and run a tool with it from the repository's root (`ref/bin/python tools/golden_decoders.py`; a tool imports
attncli from this checkout). Each tool calls
`require` before it touches torch or transformers: another version, or none, stops it with one line, for a golden
made by other versions could differ from the committed one by more than the bounds the tests hold.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PINNED = {"torch": "2.13.0", "transformers": "5.23.0"}  # what every committed golden was made with


def installed(name: str) -> str | None:
    """The installed version of a distribution, without a local tag (`2.13.0+cpu` is 2.13.0); None if absent.

    >>> installed("no-such-distribution-here") is None
    True
    """
    try:
        return version(name).split("+")[0]
    except PackageNotFoundError:
        return None


def require(tool: str, **extra: str) -> None:
    """Stop with one line (exit 1) unless torch, transformers and `extra` are the pinned versions.

    >>> require("tools/x.py", **{"no-such-distribution-here": "1.0"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    SystemExit: Error: tools/x.py needs torch==2.13.0 transformers==5.23.0 no-such-distribution-here==1.0 (found ...
    """
    wanted = {**PINNED, **extra}
    wrong = {name: installed(name) for name, pin in wanted.items() if installed(name) != pin}
    if wrong:
        pins = " ".join(f"{name}=={pin}" for name, pin in wanted.items())
        found = ", ".join(f"{name} {got or 'not installed'}" for name, got in wrong.items())
        sys.exit(f"Error: {tool} needs {pins} (found {found}); tools/reference.py makes that environment")


def mark_weights(folder: Path, said: str) -> None:
    """Write into `folder`'s config.json what its weights are (attncli's WEIGHTS_MARK, which captions show), so that
    a test model is never called trained: `said` as "random weights, never trained (...)". The file keeps
    save_pretrained's layout (indent 2, sorted keys) when it had it."""
    from attncli.models.network.model import WEIGHTS_MARK

    path = folder / "config.json"
    text = path.read_text(encoding="utf-8")
    config = json.loads(text)
    ordered = json.dumps(config, indent=2, sort_keys=True) + "\n" == text
    config[WEIGHTS_MARK] = said
    path.write_text(json.dumps(config, indent=2, sort_keys=ordered) + "\n", encoding="utf-8")


def random_weights(tool: str) -> str:
    """The marker of a golden made with random weights by `tool`."""
    return f"random weights, never trained (a test model of {tool})"
