"""`attn heads --lines`: what every head of a model does over a corpus, streamed in bounded memory.

The work is a map and a reduce (attncli.core.corpus): `partition_stats(path, texts)` is the
map over one partition of the corpus (a `CorpusStats` of moments per layer and head), and
`CorpusStats.merge` the reduce. `stream_stats` runs the map over chunks of lines on a pool of
worker processes (each loads the model once) with a bounded number of chunks in flight, and
yields the merged statistics after each chunk; `dask_stats` runs the same map on a Dask cluster:

    import dask.bag as db
    from attncli.models.runs.corpus import merge_all, partition_stats
    parts = db.read_text("corpus.txt").map_partitions(lambda lines: [partition_stats(MODEL, lines)])
    stats = merge_all(parts.compute())

Lines the model cannot take (longer than its positions, no tokens) are counted as skipped, lines on which its
numbers overflow as overflowed; neither enters the statistics.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import multiprocessing
import multiprocessing.connection
import multiprocessing.pool
import os
import signal
import threading
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from attncli.core.corpus import CorpusStats, Moments, induction_rows
from attncli.core.statistics import CORPUS_STATISTICS, DETECTORS
from attncli.core.stats import sinks_document
from attncli.errors import ConfigError
from attncli.models.network.model import Model
from attncli.models.opening.load import ModelError, load_model
from attncli.models.runs import route
from attncli.models.runs.batch import batches, forward_padded, forward_weights
from attncli.models.runs.tokens import encode, encode_many
from attncli.pipeline.contain import die_with_parent

SCHEMA = "attncli.corpus/1"
CHUNK = 128  # lines per task of the worker pool (and per partition's batching: sorted by length, cut in batches)
DASK_TIMEOUT = "30s"  # how long --dask waits for its scheduler to answer
POLL = 0.5  # seconds between looks at the workers while a chunk is awaited
WINDOW = 512  # lines read, then sorted by length, before they are cut in chunks
RAMP = 4  # the first chunks hold one batch each: a run's progress shows once its first batch is done
BATCH, BATCH_TOKENS = 32, 512  # texts of similar length per padded forward pass, and their padded tokens
INDUCTION_SEQUENCES, INDUCTION_LENGTH = 10, 25  # random sequences r r of 2 × 25 tokens, as TransformerLens
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")  # set to 1 in every worker
LABEL_SCORE = 0.4  # a head is labelled with its strongest detector when that score is at least this


@functools.lru_cache(maxsize=2)
def _model(path: str) -> Model:
    """The model at `path`, loaded once per process (a worker of the pool or of a Dask cluster)."""
    return load_model(path)


def partition_stats(path: str, texts: Iterable[str]) -> CorpusStats:
    """The map: the moments of every statistic over `texts` (one partition of a corpus) for the model at `path`.
    Blank lines are passed over; lines the model cannot take are counted in `skipped`, lines on which its numbers
    overflow (non-finite weights) in `overflowed`."""
    model = _model(path)
    stats, encoded = CorpusStats(), []
    lines = [t for t in (text.strip("\r\n") for text in texts) if t.strip()]
    for tokens in encode_many(model, lines):  # one contained tokenizer run for the partition
        if isinstance(tokens, ModelError):
            stats.skipped += 1
        else:
            encoded.append(np.asarray(tokens.ids))
    for batch in batches([len(ids) for ids in encoded], BATCH, BATCH_TOKENS):
        # [B, L, h, n, n], [B, L, n], [B, n], [B]
        weights, norms, ids, lengths = forward_padded(model, [encoded[i] for i in batch])
        finite = np.isfinite(weights).all(axis=(1, 2, 3, 4))  # finite weights can overflow float32 on a text
        if not finite.all():
            stats.overflowed += int((~finite).sum())
            weights, norms, ids, lengths = weights[finite], norms[finite], ids[finite], lengths[finite]
        if len(lengths):
            stats.add_batch(weights, ids, lengths, model.causal, norms)
    return stats


def merge_all(parts: Iterable[CorpusStats]) -> CorpusStats:
    """The reduce: every partial merged into one."""
    return functools.reduce(CorpusStats.merge, parts, CorpusStats())


def induction_stats(model: Model, sequences: int = INDUCTION_SEQUENCES, length: int = INDUCTION_LENGTH) -> Moments:
    """The induction detector: `sequences` random token sequences r of `length` ids from the model's vocabulary
    (seeded, never a special token), each run as r r between the tokenizer's own first and last special tokens."""
    x = encode(model, "x")  # what the tokenizer puts around a text: [CLS] x [SEP], or nothing
    inside = [i for i, (a, b) in enumerate(x.offsets) if b > a]
    prefix, suffix = list(x.ids[: inside[0]]), list(x.ids[inside[-1] + 1 :])
    special = set(prefix) | set(suffix) | set(model.tokenizer.get_added_tokens_decoder())
    size = min(model.vocab_size, model.tokenizer.get_vocab_size(with_added_tokens=True))
    vocab = [i for i in range(size) if i not in special]
    length = max(2, min(length, (model.max_positions - len(prefix) - len(suffix)) // 2))
    rng = np.random.default_rng(0)
    moments = Moments()
    texts = [np.asarray(prefix + list(rng.choice(vocab, size=length)) * 2 + suffix) for _ in range(sequences)]
    for weights in forward_weights(model, texts):  # one batch, all of one length: no padding
        moments.add(induction_rows(weights, len(prefix), length))
    return moments


def _chunks(lines: Iterable[str], size: int, window: int, ramp: int = 0) -> Iterator[list[str]]:
    """Chunks of `size` lines of similar length: each `window` lines sorted by their length in characters (a
    cheap stand-in for tokens), so that a chunk's batches pad little (on tools/make_corpus.py's lines, 4% more
    tokens than the texts hold instead of 10% with chunks cut in reading order). The first `ramp` chunks hold
    one batch (BATCH lines) each, so that the first results, and the progress bar, come after one batch rather
    than after a whole chunk.

    >>> [len(c) for c in _chunks(map(str, range(200)), 64, 512, ramp=2)]
    [32, 32, 64, 64, 8]
    """
    it = iter(lines)
    sizes = itertools.chain(itertools.repeat(min(BATCH, size), ramp), itertools.repeat(size))
    while block := sorted(itertools.islice(it, window), key=len):
        start = 0
        while start < len(block):
            end = start + next(sizes)
            yield block[start:end]
            start = end


HELD = {signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])}


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP held while the pool starts (its processes start with them held too), and
    delivered when it has: a pool stopped half-made left workers that died loading it, each printing a traceback.
    Only the main thread handles signals; elsewhere nothing is held."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _worker_init() -> None:
    """A worker: Ctrl-C (sent to the whole process group) is the parent's to handle: it stops the pool and
    reports what it has. SIGTERM keeps its default, so that stopping the pool ends its workers; held at its start
    (`_signals_held`), it is let through now. The worker dies with the pool's server, which ends with attn
    (SIGKILL too), so that no worker outlives it or writes to its closed pipes."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.simplefilter("ignore", RuntimeWarning)  # an overflow is counted (`overflowed`), never printed
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)
    if hasattr(signal, "SIGHUP"):  # like Ctrl-C, it reaches the whole process group
        signal.signal(signal.SIGHUP, signal.SIG_IGN)


def _pool(workers: int):
    """`workers` processes forked from a fresh server process, never from this one (whose threads, BLAS's or a
    caller's, a fork would copy mid-lock); the server starts with one BLAS thread (the workers share the cores)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    saved = {name: os.environ.get(name) for name in BLAS_THREADS}
    os.environ.update(dict.fromkeys(BLAS_THREADS, "1"))
    # the server and the workers it forks write nothing to the terminal: a worker's error comes back through the
    # pool, its death is noticed (`_result`); what multiprocessing itself would print (a worker started as the
    # pool was stopped, failing to load it) is a traceback of its own race, not a message for the user
    stderr, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        return context.Pool(workers, initializer=_worker_init)
    finally:
        os.dup2(stderr, 2)
        os.close(stderr)
        os.close(devnull)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value


class _WorkerDied(Exception):
    """A worker of the pool is dead: `process`, whose exit status is read once the pool is stopped (`_stop`), for
    the pool's own thread reads it too, and two readers at once garble it."""

    def __init__(self, process):
        self.process = process


def _result(done, workers: list) -> CorpusStats:
    """A chunk's statistics once they are ready, or _WorkerDied as soon as a worker is found dead (killed by the
    system when memory ran out, say): the chunk it held never comes back, so waiting on would be forever."""
    while True:
        ended = multiprocessing.connection.wait([p.sentinel for p in workers], timeout=0)  # reads no status
        if ended:
            raise _WorkerDied(next(p for p in workers if p.sentinel in ended))
        if done.ready():
            return done.get()
        done.wait(POLL)


def _died(process) -> ModelError:
    """The one line for a worker found dead, its exit status read after the pool stopped."""
    code = process.exitcode
    how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
    return ModelError(
        f"a worker process stopped ({how}; the system may have run out of memory): "
        "run with fewer --workers, or on a shorter --max-lines"
    )


def stream_stats(path: str, lines: Iterable[str], workers: int = 1) -> Iterator[tuple[CorpusStats, int]]:
    """The statistics so far and the lines read so far, after each chunk (the first RAMP of one batch, then CHUNK
    lines each); on `workers` processes
    each with the model loaded once, at most 2 × workers chunks in flight, so memory stays flat."""
    total, read = CorpusStats(), 0
    if workers <= 1:
        for chunk in _chunks(lines, CHUNK, WINDOW, RAMP):
            read += len(chunk)
            total = total.merge(partition_stats(path, chunk))
            yield total, read
        return
    pool, finished = None, False
    try:
        with _signals_held():  # a signal held meanwhile is raised as this ends, with the pool made
            pool = _pool(workers)
        started = list(pool._pool)  # the worker processes (a Pool replaces a dead one, and its task is lost)
        pending: list = []
        for chunk in _chunks(lines, CHUNK, WINDOW, RAMP):
            pending.append((len(chunk), pool.apply_async(partition_stats, (path, chunk))))
            while len(pending) >= 2 * workers or (pending and pending[0][1].ready()):
                size, done = pending.pop(0)
                read += size
                total = total.merge(_result(done, started))
                yield total, read
        for size, done in pending:
            read += size
            total = total.merge(_result(done, started))
            yield total, read
        finished = True
    except _WorkerDied as died:
        if pool is not None:
            _stop(pool)
            pool.join()
            pool = None
        raise _died(died.process) from None
    finally:
        if pool is not None:
            if finished:
                pool.close()  # the workers leave when the queue is empty
            else:
                _stop(pool)  # stopped, or failed
            pool.join()


def _stop(pool) -> None:
    """End `pool` now, its workers killed. An idle worker waits for a task holding the task queue's read lock, and
    Pool.terminate() first takes that lock (CPython's `_help_stuff_finish`), then writes to the result queue, whose
    write lock a worker holds while it hands back a result: a worker killed then (by the system, out of memory)
    would leave it waiting forever. So the thread that replaces dead workers is stopped
    first (it also polls their exit status, which two threads must not read at once), every worker is killed,
    and the locks a dead worker may hold are freed before terminate() runs."""
    pool._worker_handler._state = multiprocessing.pool.TERMINATE
    pool._change_notifier.put(None)  # wakes the thread, which ends on seeing the state
    pool._worker_handler.join()
    for process in pool._pool:
        process.kill()
    for process in pool._pool:
        process.join()
    # the locks a worker takes: the task queue's read lock (idle) and the result queue's write lock (handing a
    # result back; the pool's task thread writes there too, for a moment). Each is taken here once it is free; one
    # still held after a second is a dead worker's, and released all the same
    for lock in (pool._inqueue._rlock, pool._outqueue._wlock):
        if lock is not None:
            lock.acquire(timeout=1.0)
            lock.release()
    pool.terminate()


def dask_stats(address: str, path: str, corpus: str, partitions: int | None = None) -> CorpusStats:
    """The same map and reduce on the Dask cluster at `address`: its workers read the corpus file and load the
    model from their own disk (the same paths). Needs `pip install 'attncli[dask]'`."""
    try:
        import dask.bag as db  # late: optional (dask, the dask extra: only for --dask)
        from dask.distributed import Client
    except ImportError:
        raise ConfigError("--dask needs Dask: pip install 'attncli[dask]'") from None
    try:
        client = Client(address, timeout=DASK_TIMEOUT)
    except ValueError as e:  # the address is no address: a wrong command line
        raise ConfigError(f"--dask {address!r} is not a scheduler's address: {e}") from None
    except OSError as e:  # nothing listens there
        raise ModelError(f"no Dask scheduler answered at {address!r}: {e}") from None
    with client:
        bag = db.read_text(corpus, blocksize="1MiB" if partitions is None else None)
        if partitions is not None:
            bag = bag.repartition(partitions)
        parts = bag.map_partitions(lambda lines: [partition_stats(path, lines)]).compute(scheduler=client.get)
    return merge_all(parts)


@dataclass(frozen=True)
class Corpus:
    """What `attn heads --lines` read and how: its name, whether the run was stopped before the end, the lines
    asked for (--max-lines), and where it ran (worker processes, or a Dask scheduler's address)."""

    name: str
    partial: bool = False
    max_lines: int | None = None
    workers: int = 1
    dask: str | None = None


def corpus_document(model: Model, stats: CorpusStats, induction: Moments, corpus: Corpus) -> dict:
    """`attn heads --lines -f json`: per layer and head, the mean and spread of every statistic and detector; and
    "sinks", the keys of one text's (`attncli.core.stats.sinks_section`) over the corpus: α_k the mean weight on
    key k of every query i >= k of every text, its sink heads and rate, the residual norm over the median at each
    position averaged over the texts that reach it, and the tokens at the first positions (None where they
    differ)."""
    names = [*DETECTORS, *CORPUS_STATISTICS]
    means = {name: stats.moments.get(name, Moments()).mean() for name in names}
    spreads = {name: stats.moments.get(name, Moments()).std() for name in names}
    means["induction"], spreads["induction"] = induction.mean(), induction.std()
    sinks = stats.sinks()  # `attn heads`' sinks section over the corpus: its rows and texts pooled
    positions = [None if i < 0 else model.tokenizer.id_to_token(i) for i in stats.first_ids]  # None: texts differ
    rows = []
    for layer in range(model.n_layer):
        for head in range(model.n_head):
            row: dict = {"layer": layer, "head": head}
            for name in names:
                mean, std = means[name], spreads[name]
                row[name] = None if mean is None else float(mean[layer, head])
                row[f"{name}_std"] = None if std is None else float(std[layer, head])
            scores = {d: row[d] for d in DETECTORS if row[d] is not None}
            best = max(scores, key=lambda d: scores[d], default=None)
            row["score"] = 0.0 if best is None else scores[best]
            row["detector"] = best or ""  # the strongest detector, named in every cell of the grid
            row["label"] = best if best is not None and scores[best] >= LABEL_SCORE else ""
            # what a table of rows alone (CSV, Parquet) needs to stand on its own
            row.update(model=model.name, corpus=corpus.name, texts=stats.texts, tokens=stats.tokens)
            row["partial"] = corpus.partial
            rows.append(row)
    return {
        "schema": SCHEMA,
        "model": model.name,
        "model_type": model.model_type,
        "n_layer": model.n_layer,
        "n_head": model.n_head,
        "weights": model.weights_said,
        "causal": model.causal,
        **({"part": route.own_part(model)} if route.kind(model).reads_source else {}),  # an encoder–decoder's encoder
        "corpus": corpus.name,
        "partial": corpus.partial,
        "texts": stats.texts,
        "tokens": stats.tokens,
        "skipped": stats.skipped,
        "overflowed": stats.overflowed,
        "config": {
            "max_lines": corpus.max_lines,
            "workers": corpus.workers,
            "dask": corpus.dask,
            "chunk": CHUNK,
            "window": WINDOW,
            "batch": BATCH,
            "batch_tokens": BATCH_TOKENS,
        },
        "induction": {"sequences": INDUCTION_SEQUENCES, "length": INDUCTION_LENGTH, "seed": 0},
        "label_score": LABEL_SCORE,
        "definitions": {**DETECTORS, **CORPUS_STATISTICS},
        "rows": rows,
        **({} if sinks is None else {"sinks": sinks_document(sinks, sinks["massive_activation"], positions)}),
    }
