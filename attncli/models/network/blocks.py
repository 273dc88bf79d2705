"""The pieces model families share, written once: activations, LayerNorm, RMSNorm, RoPE, gated MLP.

Every function is float32 NumPy mirroring transformers' eager code, so that a family built
from them equals transformers to float32 rounding.

With the optional `mkl` package (`pip install "attncli[mkl]"`), `dense` and `feed_forward` (every linear layer)
multiply through MKL's sgemm and `gelu` takes Φ(x) from MKL's vector maths (`_mkl`, attncli.core.mkl): at one
thread on an AVX-512 Xeon the products take about half OpenBLAS's time at MiniLM's shapes and GELU a tenth.
The results stay within the float32 bounds the NumPy path meets (tests/models/test_blocks.py runs both).
"""

from __future__ import annotations

import math

import numpy as np

from attncli.core import mkl
from attncli.models.network import parallel
from attncli.models.network.parallel import split

# ---- elementwise ----------------------------------------------------------------------------------


# Numerical Recipes (2nd ed., section 6.2, `erfcc`): erfc(z) = t·exp(-z² + P(t)), t = 1 / (1 + z/2), z >= 0,
# P(t) = c0 + c1 t + ... + c9 t⁹ (a Chebyshev fit), relative error < 1.2e-7 for every z.
_ERFC = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)
#: Values per pass of `gelu` (256 KiB a float32 array; a pass touches two or three of its six): the fastest in CPU
#: time on a Skylake-X core with 1 MiB of L2, [512, 1536] in 2.8 ms against 3.2 with 32768 or 131072 values.
_CHUNK = 65536


def _erfc_nonnegative(z, t, out):  # [m] >= 0, scratch [m], out [m] (one float dtype) -> out = erfc(z); z becomes z²
    """The Chebyshev fit in place (Horner), no temporary arrays: every pass reads and writes cached scratch."""
    np.add(z, 2.0, out=t)
    np.divide(2.0, t, out=t)  # 1 / (1 + z/2) rounded alike: 2 + z is 2(1 + z/2), scaled exactly
    np.multiply(t, _ERFC[9], out=out)
    for c in _ERFC[8:0:-1]:
        out += c
        out *= t
    out += _ERFC[0]
    z *= z
    out -= z
    np.exp(out, out=out)
    out *= t
    return out


def erfc(x):  # [...] -> [...] float64
    """Complementary error function; relative error < 1.2e-7 for every real x (measured 1.05e-7).

    The Chebyshev fit of Numerical Recipes (2nd ed., section 6.2, `erfcc`), evaluated in float64.
    """
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x).reshape(-1)
    r = _erfc_nonnegative(z, np.empty_like(z), np.empty_like(z)).reshape(x.shape)
    return np.where(x >= 0, r, 2.0 - r)


_ERF_TAYLOR = [(-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(10)]


def erf(x):  # [...] -> [...] float64
    """Error function (NumPy has none); absolute error < 1e-7, relative error < 1.2e-7 everywhere.

    |x| < 0.5: its Maclaurin series to x^19 (remainder < 1e-14); elsewhere 1 - erfc(x).
    """
    x = np.asarray(x, dtype=np.float64)
    x2 = x * x
    series = sum(c * x2**n for n, c in enumerate(_ERF_TAYLOR)) * x * (2.0 / math.sqrt(math.pi))
    return np.where(np.abs(x) < 0.5, series, 1.0 - erfc(x))


def gelu(x, out=None):  # [...] float32, out [...] float32 (may be x) or None -> [...] float32
    """Exact GELU, x·Φ(x) = ½x(1 + erf(x/√2)), with NumPy as ½x + ½|x| - ½|x|·erfc(|x|/√2) in float32.

    For x < 0 that is -½|x|·erfc(|x|/√2) (x + |x| is exactly 0): no cancellation, unlike 1 + erf(x/√2);
    for x >= 0 it is x - ½x·erfc(x/√2), with ½erfc <= ½. Error <= 3 float32 ulp of |x| for every x (what a
    following product sees), <= 6 ulp of GELU(x) for x >= 0 and <= 32 down to x = -4, where transformers' own
    float32 1 + erf(x/√2) keeps only ~10 bits (tests/models/test_models.py measures both). No mask, no `where`
    (a masked NumPy pass costs as much as ~40 plain ones), `_CHUNK` values at a time in place: MiniLM's
    [512, 1536] in a third of the float64 version's time. Into `out` when given, which may be x itself (each value
    is read before its own result is written): a temporary's own memory, which MiniLM's [512, 1536] reuses in 3.5
    ms against 5.9 ms for a new array (its 3 MB of fresh pages faulted in).

    With MKL (`_mkl`) it is x·Φ(x), Φ from MKL within 1 ulp, then one rounding: within 2 ulp of GELU(x) wherever
    Φ(x) is a normal float (x > -12.9), [512, 1536] in ~0.5 ms.
    """
    x = np.asarray(x, dtype=np.float32)
    flat, to = x.reshape(-1), np.empty(x.size, np.float32) if out is None else out.reshape(-1)
    fast = _mkl()
    if fast is None:
        split(lambda a, b: _gelu_part(flat[a:b], to[a:b]), x.size, _CHUNK)  # on two threads: two halves at once
    else:
        split(lambda a, b: _gelu_cdf(fast, flat[a:b], to[a:b]), x.size, _CHUNK)
    return to.reshape(x.shape)


def _gelu_cdf(fast, x, out):  # Mkl, [m] float32, out [m] float32 (may be x)
    cdf = np.empty(min(_CHUNK, x.size), np.float32)
    for s in range(0, x.size, _CHUNK):
        xs = x[s : s + _CHUNK]
        fast.cdf_norm(xs, cdf[: xs.size])
        np.multiply(xs, cdf[: xs.size], out=out[s : s + _CHUNK])


def _gelu_part(x, out):  # [m] float32, out [m] float32
    a, z, t, r = (np.empty(min(_CHUNK, x.size), np.float32) for _ in range(4))
    with np.errstate(over="ignore"):  # |x| > 2.6e19: z² is inf, erfc(z) exactly 0
        for s in range(0, x.size, _CHUNK):
            m = min(_CHUNK, x.size - s)
            xs, o, am, zm, rm = x[s : s + m], out[s : s + m], a[:m], z[:m], r[:m]
            np.abs(xs, out=am)
            np.multiply(am, np.float32(1 / math.sqrt(2.0)), out=zm)
            _erfc_nonnegative(zm, t[:m], rm)  # erfc(|x|/√2)
            am *= np.float32(0.5)
            rm *= am
            np.maximum(xs, np.float32(0), out=o)  # ½(x + |x|): x or 0
            o -= rm


def gelu_tanh(x, out=None):  # [...] float32, out (may be x) or None -> [...] float32
    """GPT-2's gelu_new: ½x(1 + tanh(√(2/π)(x + 0.044715x³))), in float32 like transformers."""
    y = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    if out is None:
        return y
    out[...] = y
    return out


def relu(x, out=None):  # [...], out (may be x) or None -> [...]
    return np.maximum(x, 0, out=out)


def silu(x, out=None):  # [...] float32, out (may be x) or None -> [...] float32
    """x·σ(x) = x / (1 + e^-x), the SwiGLU gate of Llama-family MLPs."""
    t = np.negative(x)  # the same operations as x / (1 + exp(-x)), in one array
    np.exp(t, out=t)
    t += 1.0
    return np.divide(x, t, out=t if out is None else out)


#: Each takes (x, out=None): with `out` (which may be x itself) the result is written there.
ACTIVATION_FNS = {
    "gelu": gelu,
    "gelu_python": gelu,
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "relu": relu,
    "silu": silu,
    "swish": silu,
}


def layer_norm(x, g, b, eps: float):  # [n, d], [d], [d] -> [n, d]
    """(x - mean) / √(var + eps) · g + b over the last axis, biased variance (torch.nn.LayerNorm)."""
    out = x - x.mean(axis=-1, keepdims=True)  # [n, d]: normalised in place below, in the same order of operations
    var = np.square(out).mean(axis=-1, keepdims=True)
    out *= 1.0 / np.sqrt(var + np.float32(eps))
    out *= g
    out += b
    return out


def norm(w, name: str, x, eps: float):  # [n, d] -> [n, d]
    """The LayerNorm whose weight and bias are stored under `name`, applied to x."""
    return layer_norm(x, w[name + ".weight"], w[name + ".bias"], eps)


#: Below this many rows, x W is computed as (Wᵀ xᵀ)ᵀ: with few rows OpenBLAS packs the weights for nothing, and the
#: transposed product is 25-35% faster for MiniLM's shapes at 10-32 rows (even at 64, slower at 96).
SWAP_ROWS = 64


def dense(x, w):  # [..., d_in], [d_in, d_out] -> [..., d_out]
    """x W as one 2-D product over every leading axis: NumPy's stacked matmul calls BLAS once per text of a
    batch [B, n, d] (2.7x slower for MiniLM's MLP on 32 lines of 20 tokens). Few rows: (Wᵀ xᵀ)ᵀ (`SWAP_ROWS`); one
    row: Wᵀ x, a matrix-vector product."""
    x2 = x.reshape(-1, x.shape[-1])  # [rows, d_in]
    fast = _mkl_products() if len(x2) > 1 else None  # one row: NumPy's matrix-vector product (below)
    if fast is not None:  # MKL reads W (or Wᵀ) as stored
        out = np.empty((len(x2), w.shape[-1]), np.result_type(x2, w))
        fast.matmul(x2, w, out)
        return out.reshape(*x.shape[:-1], w.shape[-1])
    if len(x2) == 1:  # one row (a decoded token): BLAS's matrix-vector product, ~2x a product with a 1-column matrix
        return (w.T @ x2[0]).reshape(*x.shape[:-1], w.shape[-1])
    out = x2 @ w if len(x2) >= SWAP_ROWS else np.ascontiguousarray((w.T @ x2.T).T)
    return out.reshape(*x.shape[:-1], w.shape[-1])


def _mkl():  # () -> attncli.core.mkl.Mkl | None
    """Intel MKL when the optional `mkl` package is installed (looked for once: attncli.core.mkl.load), else None."""
    return mkl.load()


def _mkl_products():  # () -> attncli.core.mkl.Mkl | None
    """MKL for the products of a pass on one thread (every command's): it runs sequentially, so a pass on more
    threads (`forward(..., threads=2)`) keeps OpenBLAS, whose own threads share each product. Not for one row (a
    decoded token): MKL's gemm (and gemv) took 130 µs for [1, 576] x [576, 1536] against OpenBLAS's gemv's 120,
    20 against 12 at [576, 576] (it wins only on a 49,152-word unembedding: 4.3 ms against 5.5)."""
    return _mkl() if parallel.count() == 1 else None


def linear(w, name: str, x):  # [n, d_in] -> [n, d_out]
    """x Wᵀ + b of the nn.Linear stored under `name` (its weight is [d_out, d_in])."""
    out = dense(x, w[name + ".weight"].T)
    out += w[name + ".bias"]
    return out


#: From this many rows `feed_forward` computes x Wᵀ untransposed (MiniLM's MLP: as fast at 512 rows, 2% slower).
FEED_FORWARD_ROWS = 384


def feed_forward(w, up: str, down: str, act, x):  # [..., d] -> [..., d]
    """x + down(act(up(x))) of the nn.Linear layers stored under `up` ([f, d]) and `down` ([d, f]): a post-norm
    MLP and its residual, as x + (act(x W_upᵀ + b_up) W_downᵀ + b_down), the activation in place, computed transposed:
    H = act(W_up xᵀ + b_up) [f, rows], then W_down H + b_down [d, rows]. Each product reads its weights as
    stored and writes a C-contiguous result, and OpenBLAS runs a BERT-sized MLP's products 10-15% faster this way
    than as x Wᵀ at 64-128 rows (2% at 256, 2% slower at 512: `FEED_FORWARD_ROWS`). Below `SWAP_ROWS` rows, `linear`'s
    products (which swap themselves: a small product's sums depend on its operands' layout in OpenBLAS's kernels),
    and with MKL (`_mkl_products`), which needs no transposing. Every value is a product's dot product plus the
    same additions in the same order as `linear`'s."""
    x2 = x.reshape(-1, x.shape[-1])  # [rows, d]
    if not SWAP_ROWS <= len(x2) < FEED_FORWARD_ROWS or _mkl_products():  # `dense`: it swaps OpenBLAS's few rows
        h = linear(w, up, x)
        return linear(w, down, act(h, out=h)) + x
    h = w[up + ".weight"] @ x2.T  # [f, rows]
    h += w[up + ".bias"][:, None]
    y = w[down + ".weight"] @ act(h, out=h)  # [d, rows]
    y += w[down + ".bias"][:, None]
    return np.add(y.T, x2, out=np.empty_like(x2)).reshape(x.shape)  # C-contiguous, as a LayerNorm reads its rows


def projections(w, names) -> dict:  # (key, name) pairs -> {"w_q": [d_in, d_out], "b_q": [d_out], ...}
    """The q, k, v, o projections of an attention stored as nn.Linear layers, as [in, out] matrices and biases.

    q, k and v also come side by side as "w_qkv" [d_in, 3 d_out] and "b_qkv" (w_q, w_k, w_v are column views
    of it), joined once per layer (`Weights.joined`), so that self-attention computes them in one product.
    The dict is made once per model and layer (`Weights.made`): its readers must not change it.
    """
    names = dict(names)
    return w.made(("projections", *names.items()), lambda: _projections(w, names))


def _projections(w, names: dict) -> dict:
    qkv = tuple(names[key] for key in "qkv")
    p = {"w_qkv": w.joined(tuple(n + ".weight" for n in qkv)), "b_qkv": w.joined(tuple(n + ".bias" for n in qkv))}
    at = np.cumsum([0] + [w.shape(n + ".weight")[0] for n in qkv])
    for i, key in enumerate("qkv"):
        p["w_" + key], p["b_" + key] = p["w_qkv"][:, at[i] : at[i + 1]], p["b_qkv"][at[i] : at[i + 1]]
    p["w_o"], p["b_o"] = w.joined((names["o"] + ".weight",)), w[names["o"] + ".bias"]
    return p


def rms_norm(x, g, eps: float, offset: float = 0.0):  # [..., d], [d] -> [..., d]
    """x / √(mean(x²) + eps) · (offset + g) over the last axis (LlamaRMSNorm; Gemma's has offset 1)."""
    x = np.asarray(x, dtype=np.float32)
    inv = 1.0 / np.sqrt(np.square(x).mean(axis=-1, keepdims=True) + np.float32(eps))
    return (x * inv) * (g + np.float32(offset)) if offset else g * (x * inv)


def gated_mlp(x, w_gate, w_up, w_down, act, biases=None):  # [n, d], [f, d], [f, d], [d, f] -> [n, d]
    """down(act(gate(x)) · up(x)): the SwiGLU / GeGLU MLP of Llama, Mistral, Qwen and Gemma (nn.Linear weights);
    `biases` (gate's [f], up's [f], down's [d]) when the config has them (Llama's mlp_bias)."""
    if biases is None:
        h = act(dense(x, w_gate.T))  # [n, f]
        h *= dense(x, w_up.T)
        return dense(h, w_down.T)
    b_gate, b_up, b_down = biases
    g, u = dense(x, w_gate.T), dense(x, w_up.T)  # [n, f] each
    g += b_gate
    u += b_up
    h = act(g)
    h *= u
    out = dense(h, w_down.T)
    out += b_down
    return out


# ---- rotary position embedding (Su et al. 2021, RoFormer) -----------------------------------------


def rope_frequencies(d_rot: int, theta: float, scaling: dict | None) -> np.ndarray:  # -> [d_rot / 2] float32
    """θ_i = theta^(-2i / d_rot), scaled as `scaling` (a config's rope_scaling / rope_parameters) says.

    "linear" divides every frequency by `factor`; "llama3" divides the low frequencies by `factor`
    and blends the middle band (Llama 3.1); "yarn" blends θ_i and θ_i / factor over the dimensions between
    beta_fast and beta_slow rotations in original_max_position_embeddings (Peng et al. 2023); "longrope" divides
    θ_i by its own entry of `ext_factors` (short_factor or long_factor: Ding et al. 2024); "default" and
    "dynamic" (which only rescales beyond the trained length, where attn refuses texts) leave them. The
    scaling's dict is complete here: every key it needs is given (`attncli.models.network.families.rotary.rope`).

    >>> rope_frequencies(4, 10000.0, None).tolist()
    [1.0, 0.009999999776482582]
    """
    exponents = np.arange(0, d_rot, 2, dtype=np.int64).astype(np.float32) / np.float32(d_rot)
    inv = (1.0 / (np.float32(theta) ** exponents)).astype(np.float32)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "linear":
        return (inv / np.float32(scaling["factor"])).astype(np.float32)  # type: ignore[index]
    if kind == "llama3":
        s = scaling or {}
        factor, low, high = float(s["factor"]), float(s["low_freq_factor"]), float(s["high_freq_factor"])
        old = float(s["original_max_position_embeddings"])
        wavelen = np.float32(2 * math.pi) / inv
        scaled = np.where(wavelen > old / low, inv / np.float32(factor), inv).astype(np.float32)
        smooth = ((np.float32(old) / wavelen - np.float32(low)) / np.float32(high - low)).astype(np.float32)
        blended = (1 - smooth) * scaled / np.float32(factor) + smooth * scaled
        middle = ~(wavelen < old / high) & ~(wavelen > old / low)
        return np.where(middle, blended, scaled).astype(np.float32)
    if kind == "yarn":
        return _yarn(d_rot, theta, scaling or {})
    if kind == "longrope":
        powers = np.float32(theta) ** exponents  # [d_rot / 2]
        return (1.0 / (np.asarray(scaling["ext_factors"], np.float32) * powers)).astype(np.float32)  # type: ignore[index]
    return inv


def _yarn(d_rot: int, theta: float, s: dict) -> np.ndarray:  # -> [d_rot / 2] float32
    """YaRN's frequencies as transformers' _compute_yarn_parameters computes them (float32 ramp, truncated range)."""
    old, factor = float(s["original_max_position_embeddings"]), float(s["factor"])

    def dim(rotations: float) -> float:  # the dimension that turns `rotations` times in the original length
        return (d_rot * math.log(old / (rotations * 2 * math.pi))) / (2 * math.log(theta))

    low, high = dim(float(s["beta_fast"])), dim(float(s["beta_slow"]))
    if s["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_rot - 1)
    if low == high:
        high += 0.001  # as transformers: no division by zero
    powers = np.float32(theta) ** (np.arange(0, d_rot, 2, dtype=np.int64).astype(np.float32) / np.float32(d_rot))
    extrapolation, interpolation = (1.0 / powers).astype(np.float32), (1.0 / (np.float32(factor) * powers))
    ramp = np.clip((np.arange(d_rot // 2, dtype=np.float32) - np.float32(low)) / np.float32(high - low), 0, 1)
    keep = (1 - ramp).astype(np.float32)  # 1: the dimension keeps its frequency (extrapolates)
    return (interpolation * (1 - keep) + extrapolation * keep).astype(np.float32)


def rope_tables(n: int, inv_freq, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    # [d_rot / 2] -> [n, d_rot], [n, d_rot]
    """cos and sin of position · θ for positions start..start+n-1, each frequency twice (halves layout)."""
    angles = np.arange(start, start + n, dtype=np.float32)[:, None] * inv_freq[None, :]  # [n, d_rot / 2]
    emb = np.concatenate([angles, angles], axis=-1).astype(np.float32)
    return np.cos(emb), np.sin(emb)


def apply_rope(x, cos, sin):  # [h, n, d_k], [n, d_rot], [n, d_rot] -> [h, n, d_k]
    """Rotate the first d_rot dimensions of every head by position (rotate_half layout); the rest pass."""
    d_rot = cos.shape[-1]
    rot, rest = x[..., :d_rot], x[..., d_rot:]
    half = d_rot // 2
    rotated = np.concatenate([-rot[..., half:], rot[..., :half]], axis=-1)
    out = rot * cos + rotated * sin
    return np.concatenate([out, rest], axis=-1) if rest.shape[-1] else out
