"""Q, K and V as the user brings them to `attn compute`: a JSON document or .npy files, read strictly.

    >>> g = parse_json('{"q": [[1, 0], [0, 1]]}', "stdin")
    >>> g.q.shape, bool((g.k == g.q).all())   # k defaults to q, and v to k
    ((2, 2), True)

Every error is a DataError (exit 1) or ConfigError (exit 2) naming the field and its shape: ragged
rows, strings, NaN or Infinity, duplicate keys, a pickled or wrong-rank .npy, and sizes past the
memory guard before anything is loaded.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numpy as np

from attncli.errors import ConfigError, DataError
from attncli.pipeline.config import RunConfig
from attncli.pipeline.limits import ENV, Limits, MemoryRefused, check, compute_bytes
from attncli.pipeline.read import decode, human_bytes, read_bounded

FIELDS = ("q", "k", "v", "params")
_JSON_TYPE = {
    str: "a string",
    bool: "a boolean",
    type(None): "null",
    dict: "an object",
    list: "a list",
    int: "a number",
    float: "a number",
}

SMALLER = "smaller matrices (fewer rows: the cost is rows of q × rows of k)"  # first suggestion when refused


@dataclass(frozen=True)
class Given:
    """The user's matrices (float64, finite) and where they came from."""

    q: np.ndarray  # [m, d_q]
    k: np.ndarray  # [n, d_k]
    v: np.ndarray  # [n, d_v]
    keys_given: bool  # False: self-attention, k and v are q
    source: str  # "stdin", a file name, or the .npy names
    params: dict | None = None  # the JSON's "params" as parsed (checked against the variant later), or None


def shape_of(a) -> str:
    return str(list(np.shape(a)))


def _kind(x) -> str:
    return _JSON_TYPE.get(type(x), type(x).__name__)


def _no_duplicates(source: str):
    def hook(pairs):
        keys = [k for k, _ in pairs]
        for key in keys:
            if keys.count(key) > 1:
                raise DataError(f"{source} gives {key!r} twice in one object")
        return dict(pairs)

    return hook


def _number(x, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        shown = f" ({json.dumps(x)[:20]})" if isinstance(x, str) else ""
        raise DataError(f"{where} is {_kind(x)}{shown}, expected a number")
    try:
        f = float(x)
    except OverflowError:
        raise DataError(f"{where} is too large for float64") from None
    if not math.isfinite(f):
        raise DataError(
            f"{where} is " + ("NaN" if f != f else "Infinity (or too large for float64)") + ": values must be finite"
        )
    return f


def json_array(value, name: str, ndim: int) -> np.ndarray:
    """Nested JSON lists -> a float64 array of `ndim` axes; rectangular, numeric, finite, not empty."""
    shape: list[tuple[int, str]] = []  # (length, where) of the first list at each depth

    def walk(x, where: str, depth: int) -> None:
        if not isinstance(x, list):
            what = (
                "a matrix (a list of rows of numbers)"
                if depth == 0 and ndim == 2
                else ("a row (a list of numbers)" if ndim - depth == 1 else f"a list of {ndim - depth} levels")
            )
            hint = "; one vector is written [[1, 2, 3]]" if ndim == 2 and depth == 1 else ""
            raise DataError(f"{where} must be {what}, got {_kind(x)}{hint}")
        if not x:
            raise DataError(
                f"{where} is empty: "
                + ("give at least one row" if depth == 0 and ndim == 2 else "give at least one number")
            )
        if len(shape) == depth:
            shape.append((len(x), where))
        elif len(x) != shape[depth][0]:
            raise DataError(
                f"{name} is ragged: {where} has {len(x)} entr{'y' if len(x) == 1 else 'ies'} "
                f"but {shape[depth][1]} has {shape[depth][0]}"
            )
        if depth + 1 < ndim:
            for i, y in enumerate(x):
                walk(y, f"{where}[{i}]", depth + 1)
            return
        for i, y in enumerate(x):  # a row of numbers: type(True) is bool, not int, so booleans fail here
            if type(y) is not float and type(y) is not int:
                _number(y, f"{where}[{i}]")

    walk(value, name, 0)
    try:
        a = np.array(value, dtype=np.float64)
    except OverflowError:  # an integer beyond float64: find it to name it
        a = np.array(_map(value, ndim, name), dtype=np.float64)
    bad = np.argwhere(~np.isfinite(a))
    if len(bad):  # NaN and Infinity parse to floats, and 1e999 to inf
        _number(float(a[tuple(bad[0])]), name + "".join(f"[{i}]" for i in bad[0].tolist()))
    return a


def _map(x, depth: int, where: str):
    return _number(x, where) if depth == 0 else [_map(y, depth - 1, f"{where}[{i}]") for i, y in enumerate(x)]


def _integer(digits: str) -> int:
    """A JSON integer. Python refuses to convert more than 4300 digits; such a number stands in as its first
    400 digits, still far beyond float64, so its cell is refused as too large like every other such number."""
    return int(digits) if len(digits) <= 4000 else int(digits[:400])


JSON_NUMBER_BYTES = 48  # a parsed JSON number in Python: the float (24), its list slot (8), the list's slack


def parse_json(
    data: bytes | str, source: str, errors: str = "strict", warn=None, max_bytes: int | None = None
) -> Given:
    """`{"q": [[...]], "k": [[...]], "v": [[...]], "params": {...}}` -> Given (k, v, params optional).

    Priced before it is parsed: Python holds each number of the JSON in ~JSON_NUMBER_BYTES, and more
    than `max_bytes` of them (counted by their commas) is refused without building any.
    """
    text = decode(data, source, errors, warn) if isinstance(data, bytes) else data
    if not text.strip():
        raise DataError(f'{source} is empty: expected JSON {{"q": [[...]], "k": [[...]], "v": [[...]]}}')
    numbers = text.count(",") + 1  # at least as many commas as numbers, less one per list
    if max_bytes is not None and numbers * JSON_NUMBER_BYTES > max_bytes:
        raise MemoryRefused(
            f"{source} holds up to {numbers:,} numbers, about {human_bytes(numbers * JSON_NUMBER_BYTES)} once parsed, "
            f"more than the {human_bytes(max_bytes)} allowed: give the matrices as .npy files (--q, --k, --v), or "
            f"set {ENV} if the machine has the memory"
        )
    try:  # NaN and Infinity parse to floats here, and _number rejects them naming the cell
        doc = json.loads(text, parse_constant=float, parse_int=_integer, object_pairs_hook=_no_duplicates(source))
    except json.JSONDecodeError as e:
        raise DataError(f"{source} is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        raise DataError(f"{source} is nested too deeply to be a matrix") from None
    if not isinstance(doc, dict):
        raise DataError(f'{source} must hold a JSON object {{"q": [[...]], ...}}, got {_kind(doc)}')
    unknown = [key for key in doc if key not in FIELDS]
    if unknown:
        raise DataError(f"unknown field {unknown[0]!r} in {source}: expected {', '.join(FIELDS)}")
    if "q" not in doc:
        raise DataError(f'{source} has no "q": give at least the queries, {{"q": [[...]]}}')
    q = json_array(doc["q"], "q", 2)
    k = json_array(doc["k"], "k", 2) if "k" in doc else q
    check_rows(len(q), len(k), source)
    v = json_array(doc["v"], "v", 2) if "v" in doc else k
    params = doc.get("params")
    if params is not None and not isinstance(params, dict):
        raise DataError(f"params must be an object {{name: array}}, got {_kind(params)}")
    return Given(q, k, v, "k" in doc or "v" in doc, source, params)


def axes_of(shape: str) -> list[str]:
    """'[h, d_a, d_q]' -> ['d_a', 'd_q']: the registry's shape without the head axis."""
    return [a.strip() for a in shape.strip("[]").split(",") if a.strip() != "h"]


NPY_MAGIC = b"\x93NUMPY"


def load_npy(path: str, name: str) -> np.ndarray:
    """One .npy matrix [rows, width], numeric and finite, loaded without pickle."""
    where = f"--{name} {path}"
    if not os.path.exists(path):
        raise DataError(f"no such file: {path} (--{name})")
    if os.path.isdir(path):
        raise DataError(f"{where} is a directory, expected a .npy file")
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
            if magic.startswith(b"PK"):
                raise DataError(f"{where} is a .npz archive: give one .npy matrix to each of --q, --k, --v")
            if magic != NPY_MAGIC:
                raise DataError(f"{where} is not a .npy file (save one matrix with numpy.save)")
            f.seek(0)
            check_header(f, where, os.fstat(f.fileno()).st_size)
            f.seek(0)
            a = np.load(f, allow_pickle=False)
    except OSError as e:
        raise DataError(f"cannot read {where}: {e.strerror or e}") from None
    except ValueError as e:
        if "pickle" in str(e):
            raise DataError(
                f"{where} holds Python objects, which would need pickle to load: "
                "attn never unpickles; save a numeric array"
            ) from None
        raise DataError(f"{where} is not a readable .npy file: {e}") from None
    return matrix(a, where)


def matrix(a: np.ndarray, where: str) -> np.ndarray:  # [rows, width] -> [rows, width] float64
    """A 2-D matrix of numbers, not empty, finite, as float64; else DataError naming `where`.

    >>> matrix(np.array([[1, 2]]), "q").dtype
    dtype('float64')
    >>> matrix(np.array([1.0, np.nan]), "q")
    Traceback (most recent call last):
    attncli.errors.DataError: q has shape [2]: expected a 2-D matrix [rows, width]
    """
    if a.dtype.kind not in "iuf":
        raise DataError(f"{where} has dtype {a.dtype}, expected numbers (int or float)")
    if a.ndim != 2:
        raise DataError(f"{where} has shape {shape_of(a)}: expected a 2-D matrix [rows, width]")
    if a.size == 0:
        raise DataError(f"{where} is empty: shape {shape_of(a)}")
    a = a.astype(np.float64)
    bad = np.argwhere(~np.isfinite(a))
    if len(bad):
        i, j = bad[0].tolist()
        raise DataError(
            f"{where} has "
            + ("NaN" if np.isnan(a[i, j]) else "Infinity (or too large for float64)")
            + f" at [{i}, {j}]: values must be finite"
        )
    return a


def check_header(f, where: str, size: int) -> None:
    """What a .npy header declares, checked against the file before any array is made: two axes, and as
    many bytes of data as the shape and dtype need (a forged header cannot make NumPy allocate terabytes)."""
    try:
        version = np.lib.format.read_magic(f)
        shape, _, dtype = (
            np.lib.format.read_array_header_1_0(f) if version == (1, 0) else np.lib.format.read_array_header_2_0(f)
        )
    except ValueError:
        return  # not a header NumPy reads: np.load says why (pickled objects, a bad dtype)
    if dtype.hasobject:
        return  # Python objects: np.load refuses them (attn never unpickles) and says so
    if len(shape) != 2:
        raise DataError(f"{where} has shape [{', '.join(map(str, shape))}]: expected a 2-D matrix [rows, width]")
    declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
    present = size - f.tell()
    if declared != present:
        raise DataError(
            f"{where} declares shape [{', '.join(map(str, shape))}] of {dtype} ({declared:,} bytes of data) but holds "
            f"{present:,}: the file is cut short or its header is wrong"
        )


def npy_shape(path: str) -> tuple[int, ...] | None:
    """The shape in a .npy header, read without the data; None when the header is not readable (load_npy
    then says why)."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            shape, _, _ = (
                np.lib.format.read_array_header_1_0(f) if version == (1, 0) else np.lib.format.read_array_header_2_0(f)
            )
        return tuple(int(x) for x in shape)
    except Exception:
        return None


MAX_ROWS = 65_536  # rows of Q or K in attn compute: the work grows as rows of Q × rows of K


def check_rows(m: int, n: int, source: str) -> None:
    """Refuse more than MAX_ROWS queries or keys, before any work (even the outputs-only path is m·n·d).

    >>> check_rows(10, 70_000, "stdin")
    Traceback (most recent call last):
    attncli.errors.DataError: stdin has 70,000 rows of K, more than 65,536: the work grows as rows of Q × rows of K
    """
    for rows, name in ((m, "Q"), (n, "K")):
        if rows > MAX_ROWS:
            raise DataError(
                f"{source} has {rows:,} rows of {name}, more than {MAX_ROWS:,}: the work grows as rows of Q × rows of K"
            )


def check_npy_sizes(q: str, k: str | None, v: str | None, limits: Limits) -> None:
    """Refuse .npy matrices whose attention would not fit, from their headers, before loading them."""
    shapes = [s for s in (npy_shape(p) for p in (q, k or q, v or k or q)) if s is not None and len(s) == 2]
    if len(shapes) != 3:
        return
    (m, d_q), (n, d_k), (_, d_v) = shapes
    check_rows(m, n, "--q/--k")
    estimate = compute_bytes("dot", (), m, n, d_q, d_k, d_v, 1, weights=limits.weights, dtype=limits.dtype)
    config = RunConfig(weights=limits.weights, dtype=limits.dtype)
    check(estimate, limits, "attention on these matrices", config, (SMALLER,))


def load_npys(q: str, k: str | None, v: str | None, limits: Limits | None = None) -> Given:
    """--q, --k, --v .npy files; k defaults to q and v to k."""
    if limits is not None:
        check_npy_sizes(q, k, v, limits)
    qa = load_npy(q, "q")
    ka = load_npy(k, "k") if k else qa
    va = load_npy(v, "v") if v else ka
    return Given(
        qa, ka, va, k is not None or v is not None, ", ".join(f"{f} {p}" for f, p in zip("qkv", (q, k, v)) if p)
    )


def read_given(
    input_path: str | None,
    q: str | None,
    k: str | None,
    v: str | None,
    stdin,
    errors: str = "strict",
    warn=None,
    limits: Limits | None = None,
) -> Given:
    """Where `attn compute` takes its matrices from: .npy files, --input FILE, or stdin (a binary stream).

    --errors replace reads bytes that are not UTF-8 as U+FFFD (which is then no number, so still an error,
    unless it sits in a string the JSON does not use). A JSON bigger than MAX_INPUT_BYTES is refused.
    """
    hint = "give the matrices as .npy files (--q, --k, --v)"
    if q or k or v:
        if input_path is not None:
            raise ConfigError("give either --input JSON or --q/--k/--v .npy files, not both")
        if not q:
            raise ConfigError("--k and --v need --q: the queries are the one matrix that cannot default")
        return load_npys(q, k, v, limits)
    if input_path is not None and input_path != "-":
        if not os.path.exists(input_path):
            raise DataError(f"no such file: {input_path} (--input)")
        if os.path.isdir(input_path):
            raise DataError(f"--input {input_path} is a directory, expected a JSON file")
        try:
            with open(input_path, "rb") as f:
                data = read_bounded(f, input_path, hint)
            return parse_json(data, input_path, errors, warn, None if limits is None else limits.max_bytes)
        except OSError as e:
            raise DataError(f"cannot read {input_path}: {e.strerror or e}") from None
    if input_path is None and stdin.isatty():
        raise ConfigError('no input: pipe JSON {"q": [[...]], ...} on stdin, or give --input FILE or --q FILE.npy')
    data = read_bounded(stdin, "stdin", hint)
    return parse_json(data, "stdin", errors, warn, None if limits is None else limits.max_bytes)
