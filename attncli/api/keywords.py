"""Every keyword of the Python API declared once: what it takes, and which functions take it.

`KEYWORDS` is one table (a `Keyword` per row: its name, its `Kind`, the functions that take it); `@checked` on
each API function checks every argument of a call against its row before the function runs, so that a wrong
type is a ConfigError naming the keyword (as the command line writes the option, which is also the keyword) and
what it takes, never Python's TypeError from deep inside. The command line calls the same functions, so its
options pass the same check. Each value is also made plain: a NumPy integer becomes an int, a NumPy float a
float, a NumPy bool a bool, ablate's head pairs a list of (int, int).

    >>> from attncli.api import show
    >>> show("time flies", heads="2")
    Traceback (most recent call last):
    attncli.errors.ConfigError: --heads takes an integer, got '2' (str)

None is accepted exactly where the function's default is None. Every option is declared once, with its default and
help, as a row of api/options.py's table or api/own.py's (`EVERY`), which adds its rows here; the rows written here
are the keywords only the API has (the text, a corpus's lines, callbacks, limits). The values' ranges (--heads from
1 to 256) are pipeline/ranges.py's, each checked by its one `check_range` where it is used (pipeline/config.py's
RunConfig, models/runs/generate.py, ...), and a layer the model has by the model's run, with the same words on the
command line and here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from attncli.api.kinds import (
    CALLABLE,
    EXCEPTIONS,
    LIMITS,
    LINES,
    PARAMS,
    STR,
    TEXT,
    Kind,
)
from attncli.api.options import API, KEEP, check_model
from attncli.api.options import signature as options_signature
from attncli.api.own import EVERY
from attncli.errors import ConfigError


@dataclass(frozen=True)
class Keyword:
    """One keyword: its name, what it takes, and the API functions that take it (space-separated)."""

    name: str
    kind: Kind
    functions: str


RUNS = "show steps view compare"  # the text runs
KEYWORDS: tuple[Keyword, ...] = (
    *(Keyword(o.name, o.kind, o.functions) for o in EVERY),  # every option's row: api/options.py, api/own.py
    Keyword("text", TEXT, "show steps view compare tokens heads lens ablate rollout patch dla knockout"),
    Keyword("mask", STR, "compute"),  # one mask name or several, comma-separated: no list
    Keyword("limits", LIMITS, RUNS + " compute"),
    Keyword("params", PARAMS, "compute"),
    Keyword("lines", LINES, "corpus show_lines"),
    Keyword("name", STR, "corpus show_lines"),
    Keyword("on_warning", CALLABLE, "show_lines"),
    Keyword("progress", CALLABLE, "corpus"),
    Keyword("stops", EXCEPTIONS, "corpus"),
)
KINDS: dict[tuple[str, str], Kind] = {(f, k.name): k.kind for k in KEYWORDS for f in k.functions.split()}


def option(name: str) -> str:
    """A keyword as the command line writes its option: `max_tokens` -> `--max-tokens`; the text is TEXT."""
    return "TEXT" if name == "text" else "--" + name.replace("_", "-")


def plain(function: str, name: str, value: Any) -> Any:
    """`value` of the keyword `name` of `function`, made plain; ConfigError naming the keyword and what it takes.

    >>> import numpy as np
    >>> plain("show", "generate", np.int64(2)), plain("ablate", "heads", [[0, 1]])
    (2, [(0, 1)])
    >>> plain("ablate", "heads", [(0,)])
    Traceback (most recent call last):
    attncli.errors.ConfigError: --heads takes (layer, head) pairs of integers, e.g. [(0, 1), (2, 3)], got [(0,)] (list)
    """
    kind = KINDS.get((function, name))
    if kind is None:  # a keyword not in the table yet: tests/api/test_keywords.py says so
        return value
    made = kind.plain(value)
    if made is None:
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:60] + "…"
        raise ConfigError(f"{option(name)} takes {kind.takes}, got {shown} ({type(value).__name__})")
    return made


F = TypeVar("F", bound=Callable[..., Any])


def checked(function: F) -> F:
    """`function` with every argument of a call checked and made plain (`plain`) before it runs; a call Python
    itself refuses (a keyword it does not take, one missing) is a ConfigError too. A function's `**run` stands for
    the options of a text run it takes (api/options.py's `RUN`): its signature lists each with its default, and it
    receives all of them. A function that takes `model=` and has a rule for it (api/options.py's `KEEP`) has its
    keywords checked against the model by `check_model`, the command line's rule."""
    name = function.__name__
    signature = options_signature(function, name)

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise ConfigError(f"{name}(): {e}") from None
        for key, value in bound.arguments.items():
            if value is None and signature.parameters[key].default is None:
                continue
            bound.arguments[key] = plain(name, key, value)
        if name in KEEP:
            given = {k: v for k, v in bound.arguments.items() if v is not None and v is not False}
            check_model(name, given.get("model") is not None, given, API)
        bound.apply_defaults()
        return function(*bound.args, **bound.kwargs)

    call.__signature__ = signature  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]
