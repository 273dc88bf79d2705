"""What an API keyword (and the command line's option of the same name) takes: a `Kind` is what a message says
it takes and how a value is made plain (a NumPy integer as an int), or None when it is not of this kind.

Plain data and small functions only: `cli/options.py` builds a command's options from the table that names these
(api/options.py) without loading NumPy (tests/cli/test_startup.py).

    >>> INT.plain(True) is None, NUMBER.plain(2), MASK.plain(["causal"])
    (True, 2.0, ('causal',))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any


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


def _limits(v: Any) -> Any:
    from attncli.pipeline.limits import Limits  # late: start-up (the memory guard loads NumPy's registries)

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
