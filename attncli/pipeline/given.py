"""`attn compute`: attention on matrices the user brings, as JSON or .npy.

    >>> g = parse_json('{"q": [[1, 0], [0, 1]], "k": [[1, 0], [1, 1]], "v": [[10, 0], [0, 10]]}', "stdin")
    >>> r = compute(g, "dot")
    >>> r.weights[0].round(4).tolist()   # row 0: softmax([1, 1]); row 1: softmax([0, 1])
    [[0.5, 0.5], [0.2689, 0.7311]]
    >>> r.output.round(3).tolist()
    [[5.0, 5.0], [2.689, 7.311]]

One head and no embedding or projection: the given q, k, v are the head's Q, K, V,
and the result is an `AttentionResult` (tokens are the row indices) that every
renderer and format reads as it reads `attn show`'s. k defaults to q and v to k,
so `{"q": ...}` alone is self-attention on q. The learned variants' parameters
are seeded (`seed`), or given under "params" without the head axis, in the shapes
of `VARIANTS[name].param_shapes`.

Every error is a DataError (exit 1) or ConfigError (exit 2) naming the field and
its shape. Imports numpy and the core only; reads the files it is given.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numpy as np

from attncli.core.attention import attend
from attncli.core.masks import parse_masks
from attncli.core.variants import VARIANTS, get_variant, variant_params
from attncli.errors import ConfigError, DataError
from attncli.pipeline.caption import caption_lines
from attncli.pipeline.config import MAX_DIM, MAX_SEED, RunConfig, check_options
from attncli.pipeline.limits import Limits, check, compute_bytes
from attncli.pipeline.read import decode, read_bounded
from attncli.pipeline.result import AttentionResult, config_record
from attncli.pipeline.steps import Step, mask_softmax_mix, score_step
from attncli.pipeline.tokenize import Tokens

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


@dataclass(frozen=True)
class GivenMatrices:
    """The source of `compute()`: what was given, in which shapes, from where; one head, no projection.

    >>> r = compute(parse_json('{"q": [[1, 0], [0, 1]]}', "stdin"), "scaled")
    >>> r.source.caption(r)[1]
    'given Q [2, 2], K [2, 2], V [2, 2] (stdin); one head, no embedding, no projection'
    """

    q: tuple[int, ...]  # the shapes as attention used them
    k: tuple[int, ...]
    v: tuple[int, ...]
    file: str  # Given.source: "stdin", a file name, or the .npy names
    learned: tuple[str, ...]  # the variant's parameters (none for dot, scaled, cosine)
    params_given: bool  # True: the learned parameters came from the JSON, else seeded

    output_formula = "A V"

    def caption(self, result: AttentionResult) -> list[str]:
        shapes = f"given Q {list(self.q)}, K {list(self.k)}, V {list(self.v)} ({self.file})"
        origin = "from the JSON" if self.params_given else f"seeded (--seed {result.config.seed}), not trained"
        learned = f"; {', '.join(self.learned)} {origin}" if self.learned else ""
        what = [f"{shapes}; one head, no embedding, no projection{learned}"]
        return caption_lines(result, what, "rows are queries, columns are keys (numbered from 0)")

    def config_record(self, result: AttentionResult) -> dict:
        return config_record(result.config, "none", "none", "none", result.config.seed)

    def steps(self, result: AttentionResult) -> list[Step]:
        """The given Q, K, V, the variant's scores, then mask, softmax and A V: the output is O = A V."""
        out = [
            Step("q", f"Q: the given q ({self.file})", result.q, ("head", "query", "dim")),
            Step("k", "K: the given k (q when absent)", result.k, ("head", "key", "dim")),
            Step("v", "V: the given v (k when absent)", result.v, ("head", "key", "dim")),
            score_step(result),
        ]
        return out + mask_softmax_mix(result, ", ".join(result.config.mask))

    def head_index(self, h: int) -> int:
        return h

    def heads_shown(self, result: AttentionResult) -> str:
        return ""  # one head

    def compare_note(self, label: str) -> str | None:
        return None

    def stats_unasked(self, result: AttentionResult) -> bool:
        return True


def _shape(a) -> str:
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


def parse_json(data: bytes | str, source: str, errors: str = "strict", warn=None) -> Given:
    """`{"q": [[...]], "k": [[...]], "v": [[...]], "params": {...}}` -> Given (k, v, params optional)."""
    text = decode(data, source, errors, warn) if isinstance(data, bytes) else data
    if not text.strip():
        raise DataError(f'{source} is empty: expected JSON {{"q": [[...]], "k": [[...]], "v": [[...]]}}')
    try:  # NaN and Infinity parse to floats here, and _number rejects them naming the cell
        doc = json.loads(text, parse_constant=float, object_pairs_hook=_no_duplicates(source))
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
    v = json_array(doc["v"], "v", 2) if "v" in doc else k
    params = doc.get("params")
    if params is not None and not isinstance(params, dict):
        raise DataError(f"params must be an object {{name: array}}, got {_kind(params)}")
    return Given(q, k, v, "k" in doc or "v" in doc, source, params)


def _axes(shape: str) -> list[str]:
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
    if a.dtype.kind not in "iuf":
        raise DataError(f"{where} has dtype {a.dtype}, expected numbers (int or float)")
    if a.ndim != 2:
        raise DataError(f"{where} has shape {_shape(a)}: expected a 2-D matrix [rows, width]")
    if a.size == 0:
        raise DataError(f"{where} is empty: shape {_shape(a)}")
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


def check_npy_sizes(q: str, k: str | None, v: str | None, limits: Limits) -> None:
    """Refuse .npy matrices whose attention would not fit, from their headers, before loading them."""
    shapes = [s for s in (npy_shape(p) for p in (q, k or q, v or k or q)) if s is not None and len(s) == 2]
    if len(shapes) != 3:
        return
    (m, d_q), (n, d_k), (_, d_v) = shapes
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
                return parse_json(read_bounded(f, input_path, hint), input_path, errors, warn)
        except OSError as e:
            raise DataError(f"cannot read {input_path}: {e.strerror or e}") from None
    if input_path is None and stdin.isatty():
        raise ConfigError('no input: pipe JSON {"q": [[...]], ...} on stdin, or give --input FILE or --q FILE.npy')
    return parse_json(read_bounded(stdin, "stdin", hint), "stdin", errors, warn)


def check_params(raw: dict, variant_name: str, d_q: int, d_k: int, d_a: int | None) -> tuple[dict, dict]:
    """The JSON's "params" against the registry's shapes, without the head axis (d_a is read from them
    when --d-a is not given). Returns them with the head axis, as `attend` takes them, and the widths."""
    variant = VARIANTS[variant_name]
    names = list(variant.param_shapes)
    if not names and raw:
        raise DataError(f"variant {variant_name} has no parameters, but params gives {', '.join(raw)}")
    unknown = [p for p in raw if p not in names]
    missing = [p for p in names if p not in raw]
    if unknown:
        raise DataError(f"params.{unknown[0]} is not a parameter of {variant_name}: it takes {', '.join(names)}")
    if missing:
        raise DataError(f"params for {variant_name} must give {', '.join(names)}; missing {', '.join(missing)}")
    given = {p: json_array(raw[p], f"params.{p}", len(_axes(variant.param_shapes[p]))) for p in names}
    dims = {"d_q": d_q, "d_k": d_k}
    if d_a is not None:
        dims["d_a"] = d_a
    for p in names:  # bind any width not known yet (d_a) from the first parameter that has it
        for axis, size in zip(_axes(variant.param_shapes[p]), given[p].shape):
            if "+" not in axis and axis not in dims:
                dims[axis] = size
    out = {}
    for p in names:
        axes = _axes(variant.param_shapes[p])
        want = [sum(dims[a.strip()] for a in axis.split("+")) for axis in axes]
        if list(given[p].shape) != want:
            widths = ", ".join(f"{a} = {n}" for a, n in dims.items())
            raise DataError(f"params.{p} must be [{', '.join(axes)}] = {want} ({widths}), got {_shape(given[p])}")
        out[p] = given[p][None]  # add the head axis
    return out, dims


def compute(
    given: Given,
    variant: str = "scaled",
    mask: str | None = None,
    temperature: float = 1.0,
    seed: int = 0,
    d_a: int | None = None,
    limits: Limits | None = None,
    *,
    dtype: str = "float64",
    weights: bool = True,
    rank: int | None = None,
    features: int | None = None,
) -> AttentionResult:
    """Single-head attention on the given q, k, v: score, mask, softmax, A V. No embedding, no projection.

    The m × n attention is estimated first and refused past `limits` (default `Limits()`, 2 GiB).
    `dtype`, `weights` (False: outputs only), `rank` and `features` as in RunConfig (attncli.core.efficient)."""
    spec = get_variant(variant)
    masks = parse_masks(mask)
    if not (math.isfinite(temperature) and temperature > 0):
        raise ConfigError(f"--temperature must be a positive finite number, got {temperature}")
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"--seed must be between 0 and 2**63 - 1, got {seed}")
    if d_a is not None and not 1 <= d_a <= MAX_DIM:
        raise ConfigError(f"--d-a must be between 1 and {MAX_DIM}, got {d_a}")
    options = check_options(variant, dtype, weights, masks, temperature, {"rank": rank, "features": features})
    q, k, v = given.q, given.k, given.v
    (m, d_q), (n, d_k), d_v = q.shape, k.shape, v.shape[1]
    if spec.equal_width and d_q != d_k:
        others = ", ".join(name for name, other in VARIANTS.items() if not other.equal_width)
        raise DataError(
            f"variant {variant} needs q and k of equal width: q is {_shape(q)}, k is {_shape(k)}"
            + (f" ({others} allow different widths)" if others else "")
        )
    if n != v.shape[0]:
        raise DataError(
            f"k and v must have the same number of rows (one value per key): k is {_shape(k)}, v is {_shape(v)}"
        )
    if given.params is not None:
        params, dims = check_params(given.params, variant, d_q, d_k, d_a)
        d_a = dims.get("d_a", d_a)  # the hidden width the parameters have
    else:
        params = variant_params(spec, np.random.default_rng([seed, 2]), 1, d_q, d_k, d_a or d_k, n, options)
    limits = Limits() if limits is None else limits
    estimate = compute_bytes(
        variant,
        masks,
        m,
        n,
        d_q,
        d_k,
        d_v,
        d_a or d_k,
        temperature,
        limits.output,
        weights=weights,
        dtype=dtype,
        rank=options.get("rank"),
        features=options.get("features"),
    )
    config_hint = RunConfig(variant=variant, mask=tuple(str(x) for x in masks), dtype=dtype, weights=weights)
    check(estimate, limits, "attention on these matrices", config_hint, (SMALLER,))
    if dtype != "float64" or not weights:  # the long-input paths
        from attncli.core.efficient import attend_long  # loaded only for long inputs, as run() does

        a = attend_long(
            q[None],
            k[None],
            v[None],
            spec,
            params,
            masks,
            temperature,
            dtype=dtype,
            weights=weights,
            rng_seed=[seed, 2],
            options=options,
        )
        q, k, v = (x.astype(a.out.dtype, copy=False) for x in (q, k, v))
    else:
        a = attend(q[None], k[None], v[None], spec, params, masks, temperature)
    config = RunConfig(
        variant=variant,
        heads=1,
        dim=d_v,
        d_k=d_k,
        d_v=d_v,
        d_a=d_a or d_k,
        mask=tuple(str(x) for x in masks),
        seed=seed,
        temperature=temperature,
        dtype=dtype,
        weights=weights,
        rank=options.get("rank"),
        features=options.get("features"),
    )
    source = GivenMatrices(
        q.shape, k.shape, v.shape, given.source, tuple(spec.param_shapes), params_given=given.params is not None
    )
    return AttentionResult(
        None,
        None,
        _rows(m),
        _rows(n) if given.keys_given else None,
        config,
        q,
        k if given.keys_given else None,
        q[None],
        k[None],
        v[None],
        a.scores,
        a.masked,
        a.weights,
        a.out,
        a.out[0],
        source,
        params,
    )


def _rows(n: int) -> Tokens:
    """Row indices as tokens ("0", "1", ...): there is no text, so no offsets into one."""
    return Tokens(tuple(str(i) for i in range(n)), tuple(range(n)), ((0, 0),) * n, "none")
