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

None is accepted exactly where the function's default is None. The values' ranges (--heads from 1 to 256, a
layer the model has) are checked where each is used (pipeline/config.py's RunConfig, models/runs/generate.py, ...),
with the same words on the command line and here.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, TypeVar

from attncli.errors import ConfigError
from attncli.pipeline.limits import Limits


@dataclass(frozen=True)
class Kind:
    """What a keyword takes: `takes` as a message says it, and `plain(value)`: the value made plain (a NumPy
    integer as an int), or None when it is not of this kind."""

    takes: str
    plain: Callable[[Any], Any]


def _is_bool(v: Any) -> bool:  # True, False, numpy.bool_ (not 0 and 1: an int is not a switch)
    return isinstance(v, bool) or (type(v).__module__ == "numpy" and type(v).__name__ in ("bool", "bool_"))


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, Integral) and not _is_bool(v) else None


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, Real) and not _is_bool(v) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _path(v: Any) -> str | None:
    return os.fspath(v) if isinstance(v, (str, os.PathLike)) and isinstance(os.fspath(v), str) else None


def _paths(v: Any) -> tuple[str, ...] | None:  # one path or several
    one = _path(v)
    if one is not None:
        return (one,)
    if isinstance(v, (list, tuple)):
        paths = [_path(p) for p in v]
        return None if any(p is None for p in paths) else tuple(p for p in paths if p is not None)
    return None


def _bool(v: Any) -> bool | None:
    return bool(v) if _is_bool(v) else None


def _mask(v: Any) -> Any:  # "causal,window:2" or a sequence of such names
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(p, str) for p in v):
        return tuple(v)
    return None


def _int_or_str(v: Any) -> int | str | None:
    return v if isinstance(v, str) else _int(v)


def _model(v: Any) -> Any:  # a path or name, or a model `attncli.models.load_model` loaded
    if isinstance(v, (str, os.PathLike)):
        return _path(v)
    from attncli.models.network.model import Model  # late: start-up (a loaded model means the model code is loaded)

    return v if isinstance(v, Model) else None


def _models(v: Any) -> Any:  # one model, or a list of them (compare's tokenizers side by side)
    if isinstance(v, (list, tuple)):
        models = [_model(m) for m in v]
        return None if not models or any(m is None for m in models) else models
    return _model(v)


def _generate(v: Any) -> Any:  # N new tokens, or a Generation
    if _int(v) is not None:
        return _int(v)
    from attncli.models.runs.generate import Generation  # late: start-up (model code only with a model)

    return v if isinstance(v, Generation) else None


def _pairs(v: Any) -> list[tuple[int, int]] | None:  # ablate's (layer, head) pairs
    if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
        return None
    pairs = [tuple(p) if isinstance(p, Iterable) and not isinstance(p, (str, bytes)) else () for p in v]
    if not all(len(p) == 2 and _int(p[0]) is not None and _int(p[1]) is not None for p in pairs):
        return None
    return [(int(a), int(b)) for a, b in pairs]


def _lines(v: Any) -> Any:  # an iterable of texts, not one text
    return v if isinstance(v, Iterable) and not isinstance(v, (str, bytes)) else None


def _limits(v: Any) -> Limits | None:
    return v if isinstance(v, Limits) else None


def _callable(v: Any) -> Any:
    return v if callable(v) else None


def _exceptions(v: Any) -> Any:
    ok = isinstance(v, tuple) and all(isinstance(e, type) and issubclass(e, BaseException) for e in v)
    return v if ok else None


def _params(v: Any) -> Any:
    return v if isinstance(v, dict) and all(isinstance(k, str) for k in v) else None


def _array(v: Any) -> Any:  # anything numpy.asarray takes; numpy itself says what it cannot read
    return None if isinstance(v, (str, bytes, dict)) or v is None else v


INT = Kind("an integer", _int)
NUMBER = Kind("a number", _number)
STR = Kind("a string", _str)
TEXT = Kind("a string (the text)", _str)
PATH = Kind("a path (a string or os.PathLike)", _path)
PATHS = Kind("a path or a list of paths (strings or os.PathLike)", _paths)
BOOL = Kind("True or False", _bool)
MASK = Kind('a mask name or several ("causal,window:2", or a list of names)', _mask)
INT_OR_STR = Kind("a query's index (an integer) or its token (a string)", _int_or_str)
MODEL = Kind("a model folder, file or name (a string or os.PathLike), or a model load_model loaded", _model)
MODELS = Kind("a model (a folder, file or name, or a loaded model) or a list of them", _models)
GENERATE = Kind("a number of new tokens (an integer) or an attncli.models.runs.generate.Generation", _generate)
PAIRS = Kind("(layer, head) pairs of integers, e.g. [(0, 1), (2, 3)]", _pairs)
LINES = Kind("an iterable of texts (a list or a file), not one string", _lines)
LIMITS = Kind("an attncli.pipeline.limits.Limits", _limits)
CALLABLE = Kind("a function", _callable)
EXCEPTIONS = Kind("a tuple of exception classes", _exceptions)
PARAMS = Kind("a dict of parameter names to arrays", _params)
ARRAY = Kind("an array (anything numpy.asarray takes: a list of lists, an ndarray)", _array)


@dataclass(frozen=True)
class Keyword:
    """One keyword: its name, what it takes, and the API functions that take it (space-separated)."""

    name: str
    kind: Kind
    functions: str


RUNS = "show steps view compare"  # the text runs' own options
KEYWORDS: tuple[Keyword, ...] = (
    Keyword("text", TEXT, "show steps view compare tokens heads lens ablate rollout patch dla knockout"),
    Keyword("tokenizer", STR, "show steps view tokens"),
    Keyword("tokenizers", STR, "compare"),
    Keyword("variant", STR, "show steps view compute"),
    Keyword("variants", STR, "compare"),
    Keyword("heads", INT, RUNS),
    Keyword("heads", PAIRS, "ablate"),
    Keyword("dim", INT, RUNS),
    Keyword("dk", INT, RUNS),
    Keyword("dv", INT, RUNS),
    Keyword("d_a", INT, RUNS + " compute"),
    Keyword("mask", MASK, RUNS),
    Keyword("mask", STR, "compute"),
    Keyword("positional", STR, RUNS),
    Keyword("projection", STR, RUNS),
    Keyword("context", STR, "show steps view heads lens rollout"),
    Keyword("seed", INT, RUNS + " compute"),
    Keyword("temperature", NUMBER, RUNS + " compute"),
    Keyword("rank", INT, RUNS + " compute"),
    Keyword("features", INT, RUNS + " compute"),
    Keyword("model", MODEL, "show steps view tokens heads lens ablate rollout corpus patch dla knockout"),
    Keyword("model", MODELS, "compare"),
    Keyword("layer", INT, "show steps view compare rollout"),
    Keyword("head", INT, RUNS),
    Keyword("part", STR, "show steps view heads rollout"),
    Keyword("generate", GENERATE, "show steps view heads"),
    Keyword("chat", BOOL, "show steps view tokens heads lens ablate"),
    Keyword("system", STR, "show steps view tokens heads lens ablate"),
    Keyword("stats", BOOL, "show show_lines"),
    Keyword("no_weights", BOOL, "show compute"),
    Keyword("dtype", STR, "show compute"),
    Keyword("mean_heads", BOOL, "show"),
    Keyword("query", INT_OR_STR, "show"),
    Keyword("query", INT_OR_STR, "steps"),
    Keyword("matrix_only", BOOL, "show"),
    Keyword("contrib", STR, "show"),
    Keyword("contrib", STR, "steps heads"),
    Keyword("scale", STR, "show"),
    Keyword("drop_sink", BOOL, "show"),
    Keyword("contrib", STR, "view"),
    Keyword("scale", STR, "view"),
    Keyword("drop_sink", BOOL, "view"),
    Keyword("lens", BOOL, "view"),
    Keyword("ablate", BOOL, "view"),
    Keyword("patch", BOOL, "view"),
    Keyword("dla", BOOL, "view"),
    Keyword("knockout", BOOL, "view"),
    Keyword("target", STR, "view ablate patch dla"),
    Keyword("mode", STR, "view ablate"),
    Keyword("output", PATH, "view"),
    Keyword("stat", STR, "heads"),
    Keyword("top_k", INT, "lens"),
    Keyword("max_tokens", INT, RUNS + " tokens"),
    Keyword("precision", INT, "show show_lines steps view compute heads lens ablate rollout corpus patch dla knockout"),
    Keyword("limits", LIMITS, RUNS + " compute"),
    Keyword("q", ARRAY, "compute"),
    Keyword("k", ARRAY, "compute"),
    Keyword("v", ARRAY, "compute"),
    Keyword("params", PARAMS, "compute"),
    Keyword("lines", LINES, "corpus show_lines"),
    Keyword("name", STR, "corpus show_lines"),
    Keyword("workers", INT, "corpus show_lines"),
    Keyword("on_warning", CALLABLE, "show_lines"),
    Keyword("corrupt", STR, "patch view"),
    Keyword("contrast", STR, "patch dla ablate view"),
    Keyword("rank_by", STR, "ablate"),
    Keyword("raw_tokens", BOOL, "show"),
    Keyword("what", STR, "patch view"),
    Keyword("noising", BOOL, "patch view"),
    Keyword("span", STR, "knockout view"),
    Keyword("to", INT, "knockout view"),
    Keyword("window", INT, "knockout view"),
    Keyword("path", PATHS, "catalog"),
    Keyword("max_lines", INT, "corpus"),
    Keyword("dask", STR, "corpus"),
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
    itself refuses (a keyword it does not take, one missing) is a ConfigError too."""
    signature = inspect.signature(function)
    name = function.__name__

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
        return function(*bound.args, **bound.kwargs)

    return call  # type: ignore[return-value]
