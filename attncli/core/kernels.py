"""Performance core: exact attention in pure NumPy, fast and lean.

Two public functions, both dtype-preserving (float32 in, float32 out; float64
in, float64 out; other inputs are computed in float64; shapes checked by
``shapes.prepare_qkv``):

- ``attention_weights(q, k, v, scale, causal=False)``: the weights [h, m, n]
  and the outputs [h, m, d_v]. The weights are the only m x n array ever
  allocated: each block of query rows is computed straight into its slice of
  it (scores, softmax and normalisation in place, while the block is still in
  cache), then multiplied by V.
- ``attention_outputs(q, k, v, scale, causal=False, block=512, threads=2)``:
  the outputs only. It never holds an m x n matrix: query rows go in blocks
  of ``block`` rows through a scratch buffer per thread, so the extra memory
  is O(threads * block * n + (m + n) * d) at most; in the usual case (see the
  shift-free softmax below) the keys are also taken in tiles of about 1 MiB
  of scores, and the scratch is O(threads * block * min(n, key_tile)).

The scale is folded into the transposed keys (one O(n d) pass), never applied
to an m x n matrix.

Base 2 (outputs path, float32, where the backend says its exp2 is the faster
exponential: ``ops.base2``, and only for a head whose every score provably
lies in the shift-free window below): log2 e is folded into that head's
scale, so its scores come out as s log2 e and ``exp2`` of them is exp(s) up to
rounding. The factor costs one rounding of the float32 scale, as the scale
itself does; the exponential's own error drops (NumPy's SIMD float32 exp2 is
within 1 ulp, its exp within 2.4), and it takes about half the time (0.15-0.2
ns a value against 0.36-0.45 on AVX-512) -- while its result is a normal
number: on -inf, on underflow and on subnormal results SVML's exp2 takes
2-60 ns a value (exp: 0.4-5). Hence the window (every score in it gives
2**(-102) to 2**126) and, with a causal mask, zeros written after exp2
instead of -inf before it. The weights path, float64 and every other head
keep exp (their results are unchanged).

The matrix products and exp go through one small ops interface: NumPy's
(``NUMPY_OPS``), or Intel MKL's when the optional ``mkl`` package is installed
(``attncli.core.mkl``: at one thread, n = 2048, float32, the outputs-only
path takes 2.5 ns a score cell against NumPy's 3.1). Inputs too small to
limit BLAS for always use NumPy.

Speed (see benchmarks/README.md): the blocks run on ``threads`` Python threads
(NumPy releases the GIL in matmul and in ufunc loops), with BLAS limited to
one thread while they run. Measured on the 2-core benchmark machine (12
heads, n = 2048): two threads each calling a two-threaded OpenBLAS took
2.3x as long as two threads with BLAS limited to one (and 1.5x as long as
one thread); and while other processes kept the cores busy, BLAS's own
threads made 12 heads at n = 256 take ~550 ms instead of 11-15 ms (its
idle threads busy-wait). The limit is process-wide while a call runs (shared by
concurrent calls, restored by the last to finish). Limiting BLAS needs
the small, pure-Python ``threadpoolctl`` package; it is imported only when a
call is big enough to need it (never for a short sentence, so start-up is
unaffected). Without it the blocks run on one thread and BLAS uses its own
threads (correct, just slower), unless OPENBLAS_NUM_THREADS, OMP_NUM_THREADS
or MKL_NUM_THREADS is already 1.

Softmax without the shift, when it is provably safe: softmax is invariant to
adding a constant to a row; the maximum is subtracted only so that nothing
overflows or underflows. Per head, with n keys, V = max |v|, and the dtype's
largest finite number M, smallest normal number T and machine epsilon eps, the
unshifted exp(s) is safe when every row maximum lies in [lo, hi] with
hi = ln(M / 2) - ln(n) - ln(max(V, 1)) - 1 (no row sum and no partial sum of
exp(s) v can overflow) and lo = ln(T / eps) - ln(min(V, 1)) + 1 (the largest
term of a row, times the values, stays a normal number, so the terms that
matter keep full precision). In float32 with V = 1 and n = 16384 that is about
[-70, 77]; typical scaled scores are far inside. The blocked kernels check it
first with the Cauchy-Schwarz bound |q_i . k_j| <= |q_i| |k_j| (per head,
O((m + n) d)); when the bound is too loose they compute the row maxima and
still skip the subtraction if they all lie in [lo, hi]; otherwise they
subtract the maxima as usual. The fast case saves two of the five passes
over each block of scores (row maximum, subtraction; exp, row sum and the
product with V remain).

Results do not depend on ``threads`` (bitwise): every block is computed the
same way whichever thread runs it, and above the size where BLAS could use
threads of its own it is limited to one whatever ``threads`` is.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from attncli.core.ops import NUMPY_OPS
from attncli.core.shapes import prepare_qkv
from attncli.errors import DataError

__all__ = ["attention_outputs", "attention_weights"]

#: Work (h * m * n * (d_k + d_v), about the multiply-adds) from which BLAS is
#: limited to one thread while the blocks run. Below it every matrix product
#: is so small that OpenBLAS runs it on one thread anyway, and threadpoolctl
#: (~13 ms to import, once) is not even imported: ``attn show`` on a sentence
#: never pays for it. Above it, a BLAS that splits every small product over
#: its threads was measured 10-40x slower on a busy 2-core machine.
_BLAS_LIMIT_MIN_WORK = 1 << 18
#: Work from which the blocks are spread over ``threads`` threads.
_PARALLEL_MIN_WORK = 1 << 22
#: Bytes of one [block, key_tile] tile of scores (about half a core's L2 cache). With the outputs path's
#: default block of 512 rows: tiles of 512 x 512, as fast as or faster than 256 x 512, 512 x 256 and
#: 256 x 1024 in most of five interleaved sweeps at n = 1024-4096 (one thread, NumPy, float32, 12 heads, d 64,
#: a Xeon with AVX-512 and 2 MiB of L2; differences of 0-6 %, near a shared machine's noise); blocks of 128
#: rows were 5-6 % slower (more, smaller products).
_KEY_TILE_BYTES = 1 << 20
#: Bytes of one block of weight rows [block, n] (weights path), which is also kept between 64 and 128 rows:
#: measured at one thread (MKL), n = 1024: 128 rows 3.5 ns a cell, 256 rows 3.9-4.1; n = 2048: 128 rows
#: (1 MiB) 3.0, 256 rows 3.9; n = 8192: 64 rows 3.4, 32 rows 3.8.
_WEIGHT_BLOCK_BYTES = 1 << 20

#: Query rows per block of the outputs path with a causal mask, at most: a block also computes the masked half
#: of its diagonal tile, n * block / 2 cells a head more than the n^2 / 2 it needs.
_CAUSAL_BLOCK = 256
#: Keys per block of the transposition of K (_transposed).
_TRANSPOSE_KEYS = 128
_LOG2_E = 1 / math.log(2)  # log2 e: exp(s) = 2 ** (s log2 e)

_controller: Any = None  # threadpoolctl.ThreadpoolController (False: not installed), created on first use
_controller_lock = threading.Lock()


def attention_weights(q, k, v, scale, causal=False, block=256, threads=2):
    """Exact attention returning the weights and the outputs.

    ``weights = softmax(scale * q k^T)`` (rows are queries, columns keys) and
    ``out = weights v``, per head. ``causal`` masks key j > query i (weight
    exactly 0). 2-D inputs ([m, d_k], [n, d_k], [n, d_v]) are treated as one
    head and give 2-D results. The dtype is kept (float32 end to end when the
    inputs are float32). Memory: the weights themselves, materialised once,
    plus O(threads * n + (m + n) * d) -- no m x n temporary.
    At most ``block`` rows of queries are processed at a time (64 to 128,
    ~1 MiB of weights, so that a block stays in cache), on ``threads`` threads.
    Returns ``(weights, out)``.
    """
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> ([h, m, n], [h, m, d_v])
    return _attention(q, k, v, scale, causal, block, threads, want_weights=True)


def attention_outputs(q, k, v, scale, causal=False, block=512, threads=2):
    """Exact attention outputs ``softmax(scale * q k^T) v``, without the weights.

    Never holds an m x n matrix: query rows are processed ``block`` at a time
    through a scratch buffer per thread, so extra memory is at most
    O(threads * block * n + (m + n) * d) (usually less: key tiles of ~1 MiB
    of scores, 512 x 512 by default, when the softmax needs no shift; float32
    then takes its exponentials in base 2 where that is faster, see the module
    doc). With ``causal`` blocks have at most 256 rows, and a block skips the
    keys after its last query. Blocks run on ``threads`` threads (with BLAS
    limited to one thread while they run, when threadpoolctl is available).
    2-D inputs are treated as one head. The dtype is kept. The result does not
    depend on ``threads``.
    """
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> [h, m, d_v]
    return _attention(q, k, v, scale, causal, block, threads, want_weights=False)[1]


# --------------------------------------------------------------------------
# internals


def _blas_limiter():
    """A context manager limiting BLAS to one thread, or None if there is none.

    The limit is process-wide (threadpoolctl sets the BLAS library's global
    thread count); nested or concurrent calls share one limit, set by the
    first to enter and lifted by the last to leave, so that no call restores
    the original setting while another still runs.
    """
    global _controller
    if _controller is None:
        with _controller_lock:
            if _controller is None:
                try:
                    from threadpoolctl import ThreadpoolController  # late: start-up (long inputs only)
                except ImportError:
                    _controller = False
                else:
                    _controller = ThreadpoolController()
    if _controller is False:
        return None
    return _shared_blas_limit()


_limit_depth = 0  # calls currently inside _shared_blas_limit
_limit_handle: Any = None  # threadpoolctl limiter to restore when the last one leaves


@contextlib.contextmanager
def _shared_blas_limit():
    """BLAS limited to one thread while at least one caller is inside."""
    global _limit_depth, _limit_handle
    with _controller_lock:
        if _limit_depth == 0:
            _limit_handle = _controller.limit(limits=1, user_api="blas")
        _limit_depth += 1
    try:
        yield
    finally:
        with _controller_lock:
            _limit_depth -= 1
            if _limit_depth == 0:
                _limit_handle.restore_original_limits()
                _limit_handle = None


def _blas_single_threaded_by_env():
    """True when the environment already pins BLAS to one thread."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(name, "").strip() == "1":
            return True
    return False


def _attention(q, k, v, scale, causal, block, threads, want_weights):
    """Shared driver of both paths: query blocks, optionally on threads."""
    # [h, m, d_k], [h, n, d_k], [h, n, d_v] -> ([h, m, n] | None, [h, m, d_v])
    q, k, v, dt, squeeze = prepare_qkv(q, k, v)
    block, threads = int(block), int(threads)
    if block < 1 or threads < 1:
        raise DataError(f"block and threads must be >= 1; got block={block}, threads={threads}")
    h, m, dk = q.shape
    n, dv = k.shape[1], v.shape[2]
    out = np.empty((h, m, dv), dt)
    weights: Any = np.empty((h, m, n), dt) if want_weights else None  # [h, m, n] or None
    if h * m == 0 or n == 0:
        # No query, or no key to attend to: every row is "fully masked" -> zeros.
        out.fill(0)
        if weights is not None:
            weights.fill(0)
        return _squeeze(weights, out, squeeze)
    work = h * m * n * (dk + dv)
    ops = NUMPY_OPS if work < _BLAS_LIMIT_MIN_WORK else (_fast_ops() or NUMPY_OPS)
    block = min(_block_rows(block, want_weights, causal, n, dt), m)
    blocks = _Blocks(q, k, v, scale, ops, out, weights, causal, block)
    starts = range(0, m, block)
    if causal:
        # Later blocks see more keys: hand out the biggest first (load balance).
        tasks = [(hh, s) for s in reversed(starts) for hh in range(h)]
    else:
        tasks = [(hh, s) for hh in range(h) for s in starts]
    _dispatch(blocks.worker, tasks, work, threads)
    return _squeeze(weights, out, squeeze)


def _block_rows(block, want_weights, causal, n, dt):  # -> rows of queries per task, before capping at m
    """The weights path: a block's rows of weights stay in cache between their passes (scores, exp, sums,
    scaling, product with V): about 1 MiB of them, 64 to 128 rows (fewer make the products slow). The causal
    outputs path: at most _CAUSAL_BLOCK rows, so that the blocks' unequal work shares out among threads."""
    if want_weights:
        return min(block, max(64, min(128, _WEIGHT_BLOCK_BYTES // (n * dt.itemsize))))
    return min(block, _CAUSAL_BLOCK) if causal else block


def _exp_window(v, n, dt):  # [h, n, d_v], keys, dtype -> ([h] lo, [h] hi)
    """The window [lo, hi] of row maxima for which exp needs no shift (module doc), per head."""
    fi = np.finfo(dt)
    v_max = np.maximum(v.max(axis=(1, 2)), -v.min(axis=(1, 2))).tolist() if v.shape[2] else [0.0] * len(v)
    v_max = [x if x > 0 and math.isfinite(x) else 1.0 for x in v_max]  # [h] max |v|
    hi = [math.log(float(fi.max) / 2) - math.log(n) - math.log(max(x, 1.0)) - 1 for x in v_max]
    lo = [math.log(float(fi.tiny) / float(fi.eps)) - math.log(min(x, 1.0)) + 1 for x in v_max]
    return lo, hi


def _score_bound(q, k, scale):  # [h, m, d_k], [h, n, d_k], () -> [h]
    """Cauchy-Schwarz: |scale q_i . k_j| <= |scale| max_i |q_i| max_j |k_j|, per head."""
    q_norm = np.sqrt(np.einsum("hmd,hmd->hm", q, q).max(axis=1))  # [h]
    k_norm = np.sqrt(np.einsum("hnd,hnd->hn", k, k).max(axis=1))  # [h]
    return (q_norm.astype(np.float64) * k_norm * abs(float(scale))).tolist()


class _Blocks:
    """One attention's query blocks: what every task shares (the inputs, the plan of each head, the results),
    and `worker`, the loop a thread runs over the tasks (head, first row) it is handed."""

    def __init__(self, q, k, v, scale, ops, out, weights, causal, block):
        # [h, m, d_k], [h, n, d_k], [h, n, d_v], (), ops, [h, m, d_v] result, [h, m, n] result or None, bool, rows
        dt, (h, m, _), n = out.dtype, q.shape, k.shape[1]
        self.ops, self.out, self.weights, self.causal, self.block = ops, out, weights, causal, block
        self.m, self.n, self.dv = m, n, v.shape[2]
        self.qs = np.ascontiguousarray(q)  # [h, m, d_k] (no copy when it already is)
        self.v = np.ascontiguousarray(v)  # [h, n, d_v]
        self.lo, self.hi = _exp_window(self.v, n, dt)
        bound = _score_bound(self.qs, k, scale)
        self.bounded = [b <= self.hi[i] and -b >= self.lo[i] for i, b in enumerate(bound)]  # nan -> False
        # Base 2 (module doc): outputs path, a backend whose exp2 is the faster, and a head whose every score is
        # inside [lo, hi], so that every exp2 result is a normal number (outside, SVML's exp2 slows down 10-300x).
        self.base2 = [weights is None and self.bounded[i] and ops.base2(dt) for i in range(h)]
        factor = np.array([float(scale) * _LOG2_E if b2 else scale for b2 in self.base2]).astype(dt)  # [h]
        # Keys transposed and scaled in one pass: the scale costs O(n d), not O(m n).
        self.kt = _transposed(k, factor)  # [h, d_k, n]
        self.tri: Any = np.triu(np.ones((block, block), dtype=bool), 1) if causal else None  # [b, b]
        self.ones = np.ones((n, 1), dt)  # [n, 1]: row sums as a matrix product
        # Key tiles (outputs path): in the fast (unshifted) case a block's scores are made one [block, key_tile]
        # tile at a time, ~1 MiB, so exp and the row sums work in the core's own cache; the tiles' partial sums
        # simply add up (no running maximum to rescale by, unlike flash attention's online softmax). The weights
        # path writes whole rows of its result instead: tiling it was measured 15-18% slower (strided tiles, and
        # the normalisation pass needs the whole row anyway).
        self.key_tile = max(8, _KEY_TILE_BYTES // (block * dt.itemsize))

    def mask_causal(self, sb, c0, c1, s, bb, value):
        """sb [bb, c1 - c0]: scores of queries s..s+bb-1 against keys c0..c1-1; `value` where key j > query i:
        -inf before exp, or 0 after exp2 (whose -inf is slow). Only keys j >= s can be masked, and tri[r, c]
        (c > r) is exactly "key s + c after query s + r"."""
        a = max(c0, s)
        if a < c1:
            np.copyto(sb[:, a - c0 :], value, where=self.tri[:bb, a - s : c1 - s])

    def worker(self, next_task):
        """Per-thread scratch, O(block * min(n, key_tile)); the O(block * n) one only if a head needs the
        shifted softmax (outputs path). Aligned to 64 bytes, so that every thread hands BLAS the same alignment."""
        block, dt, dv = self.block, self.out.dtype, self.dv
        scratch = _Scratch(
            tile=None if self.weights is not None else _aligned_empty(block * min(self.n, self.key_tile), dt),
            row_max=np.empty((block, 1), dt),
            row_sum=_aligned_empty(block, dt).reshape(block, 1),
            part_sum=_aligned_empty(block, dt).reshape(block, 1),
            part_out=_aligned_empty(block * dv, dt).reshape(block, dv),
        )
        while True:
            task = next_task()
            if task is None:
                return
            head, first = task
            self.one_block(head, first, scratch)

    def one_block(self, hh, s, scratch):  # head, first row, this thread's _Scratch
        e = min(s + self.block, self.m)
        bb = e - s
        kn = min(e, self.n) if self.causal else self.n  # keys this block can see
        o, rs = self.out[hh, s:e], scratch.row_sum[:bb]  # [bb, d_v], [bb, 1]
        if self.weights is not None and kn < self.n:
            self.weights[hh, s:e, kn:] = 0
        if self.weights is None and self.bounded[hh] and kn > self.key_tile:
            self.tiled(hh, s, bb, kn, o, rs, scratch)
        else:
            self.whole(hh, s, bb, kn, o, rs, scratch)

    def tiled(self, hh, s, bb, kn, o, rs, scratch):  # ..., [bb, d_v] outputs, [bb, 1] row sums
        """Outputs of a block whose scores need no shift, one key tile at a time, their sums added up."""
        ops, b2, qb = self.ops, self.base2[hh], self.qs[hh, s : s + bb]
        exp = ops.exp2 if b2 else ops.exp
        for c0 in range(0, kn, self.key_tile):
            c1 = min(c0 + self.key_tile, kn)
            sb = scratch.tile[: bb * (c1 - c0)].reshape(bb, c1 - c0)  # [bb, tile]
            ops.matmul(qb, self.kt[hh, :, c0:c1], sb)  # scores
            if self.causal and not b2:
                self.mask_causal(sb, c0, c1, s, bb, -np.inf)
            exp(sb)
            if self.causal and b2:
                self.mask_causal(sb, c0, c1, s, bb, 0)
            first = c0 == 0  # the first tile writes the sums, the others add to them
            ops.matmul(sb, self.ones[c0:c1], rs, None if first else scratch.part_sum[:bb])
            ops.matmul(sb, self.v[hh, c0:c1], o, None if first else scratch.part_out[:bb])
        np.divide(o, rs, out=o)

    def whole(self, hh, s, bb, kn, o, rs, scratch):  # ..., [bb, d_v] outputs, [bb, 1] row sums
        """One [bb, kn] piece: scores, (shift,) exp, sums, product with V; the weights in place in the result."""
        ops, b2, qb = self.ops, self.base2[hh], self.qs[hh, s : s + bb]
        exp = ops.exp2 if b2 else ops.exp
        if self.weights is not None:
            sb = self.weights[hh, s : s + bb, :kn]  # [bb, kn] view into the result
        elif kn <= self.key_tile:
            sb = scratch.tile[: bb * kn].reshape(bb, kn)
        else:
            if scratch.full is None:
                scratch.full = _aligned_empty(self.block * self.n, self.out.dtype)
            sb = scratch.full[: bb * kn].reshape(bb, kn)
        ops.matmul(qb, self.kt[hh, :, :kn], sb)  # scores
        if self.causal and not b2:
            self.mask_causal(sb, 0, kn, s, bb, -np.inf)
        if not self.bounded[hh]:
            mx = np.max(sb, axis=1, keepdims=True, out=scratch.row_max[:bb])
            if not (mx.min() >= self.lo[hh] and mx.max() <= self.hi[hh]):
                np.subtract(sb, mx, out=sb)
        exp(sb)
        if self.causal and b2:
            self.mask_causal(sb, 0, kn, s, bb, 0)
        ops.matmul(sb, self.ones[:kn], rs)  # [bb, 1] row sums (> 0)
        if self.weights is not None:
            np.reciprocal(rs, out=rs)
            np.multiply(sb, rs, out=sb)  # normalised weights, in place
            ops.matmul(sb, self.v[hh, :kn], o)
        else:
            ops.matmul(sb, self.v[hh, :kn], o)
            np.divide(o, rs, out=o)


@dataclass
class _Scratch:
    """One thread's buffers: a key tile of scores, a whole row block of them (made when a head first needs the
    shifted softmax), and a block's row maxima, row sums and the partial sums and outputs of a tile."""

    tile: Any  # [block * min(n, key_tile)] or None (the weights path writes into its result)
    row_max: Any  # [block, 1]
    row_sum: Any  # [block, 1]
    part_sum: Any  # [block, 1]
    part_out: Any  # [block, d_v]
    full: Any = None  # [block * n], made on first use


def _dispatch(worker, tasks, work, threads):
    """Run `worker` over the tasks: here for small work; on threads for large, with BLAS held to one thread
    while they run (two of ours each calling a two-threaded BLAS would be slower than one)."""
    if work < _BLAS_LIMIT_MIN_WORK:
        _run(worker, tasks, 1)
        return
    workers = min(threads, len(tasks)) if work >= _PARALLEL_MIN_WORK else 1
    limiter = _blas_limiter()
    if limiter is None:  # BLAS keeps its own threads: ours only if the environment pins BLAS to 1
        _run(worker, tasks, workers if _blas_single_threaded_by_env() else 1)
    else:
        with limiter:
            _run(worker, tasks, workers)


def _fast_ops():
    """Intel MKL's gemm and exp when the optional `mkl` package is installed (attncli.core.mkl), else None."""
    from attncli.core import mkl  # late: start-up (inputs big enough to limit BLAS only)

    return mkl.load()


def _transposed(k, factor):
    """k^T times each head's factor, the keys taken _TRANSPOSE_KEYS at a time (each block's transpose in L1).

    The same products as one strided pass over all keys, in about half the time (NumPy, float32, 12 heads,
    d 64, one thread: 0.55 ms against 0.95 at n = 1024, 2.8 against 4.9 at n = 4096).

    >>> k = np.arange(2 * 130 * 3, dtype=np.float32).reshape(2, 130, 3)  # 130 keys: one block of 128 and a tail
    >>> f = np.float32([0.5, 2.0])
    >>> bool(np.array_equal(_transposed(k, f), k.transpose(0, 2, 1) * f[:, None, None]))
    True
    """
    # [h, n, d], [h] -> [h, d, n]
    h, n, d = k.shape
    b = _TRANSPOSE_KEYS
    whole = n - n % b
    out = np.empty((h, d, n), k.dtype)
    # [h, n/b, b, d] -> [h, n/b, d, b] into out's [h, d, n/b, b] seen as [h, n/b, d, b] (views: out is written)
    blocks = out[:, :, :whole].reshape(h, d, whole // b, b).transpose(0, 2, 1, 3)
    np.multiply(
        k[:, :whole].reshape(h, whole // b, b, d).transpose(0, 1, 3, 2), factor[:, None, None, None], out=blocks
    )
    np.multiply(k[:, whole:].transpose(0, 2, 1), factor[:, None, None], out=out[:, :, whole:])
    return out


def _aligned_empty(size, dt):
    """An uninitialised 1-D array of `size` elements whose data starts on a 64-byte boundary."""
    # () -> [size]
    raw = np.empty(size * dt.itemsize + 64, np.uint8)
    skip = -raw.ctypes.data % 64
    return raw[skip : skip + size * dt.itemsize].view(dt)


def _run(worker, tasks, nthreads):
    """Run ``worker(next_task)`` on ``nthreads`` threads sharing one task list."""
    lock = threading.Lock()
    it = iter(tasks)

    def next_task():
        with lock:
            return next(it, None)

    if nthreads <= 1:
        worker(next_task)
        return
    errors = []

    def guarded():
        try:
            worker(next_task)
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)

    pool = [threading.Thread(target=guarded, daemon=True) for _ in range(nthreads - 1)]
    for t in pool:
        t.start()
    guarded()  # the calling thread works too
    for t in pool:
        t.join()
    if errors:
        raise errors[0]


def _squeeze(weights, out, squeeze):
    """Drop the head axis again for 2-D inputs."""
    # ([h, m, n] | None, [h, m, d_v]) -> same, or ([m, n] | None, [m, d_v]) when squeeze
    if squeeze:
        return (None if weights is None else weights[0]), out[0]
    return weights, out
