"""attn heads --lines: corpus statistics, on one core, on a worker pool and on a Dask cluster, all equal."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from attncli.models import encode, forward
from attncli.models.opening.load import load_model
from attncli.models.runs.corpus import (
    Corpus,
    corpus_document,
    induction_stats,
    merge_all,
    partition_stats,
    stream_stats,
)
from tests.conftest import ROOT, attn, refused
from tests.model_fixtures import make_bert
from tests.models.test_batch import run_bound
from tests.tolerance import assert_within, moments_bound

LINES = [
    "time flies like an arrow",
    "fruit flies like a banana",
    "",
    "the cat sat on the mat and the cat slept",
    "a quick brown fox jumps over the lazy dog",
] * 6


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(LINES) + "\n")
    return path


def _doc(*args) -> dict:
    r = attn("heads", *args, "-f", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_the_corpus_document_has_every_head_and_counts_the_texts(bert_3x4, corpus):
    doc = _doc("--model", bert_3x4, "--lines", "--file", corpus, "--workers", "1")
    assert doc["schema"] == "attncli.corpus/1" and doc["texts"] == 24 and not doc["partial"]
    assert len(doc["rows"]) == doc["n_layer"] * doc["n_head"]
    for row in doc["rows"]:
        for name in ("previous-token", "duplicate-token", "induction", "first-token", "diagonal"):
            assert 0.0 <= row[name] <= 1.0 and row[f"{name}_std"] >= 0.0
        assert row["label"] in ("", "previous-token", "duplicate-token", "induction", "first-token")


def test_workers_and_one_process_agree_and_max_lines_cuts(bert_3x4, corpus):
    one = _doc("--model", bert_3x4, "--lines", "--file", corpus, "--workers", "1")
    two = _doc("--model", bert_3x4, "--lines", "--file", corpus, "--workers", "2")
    for a, b in zip(one["rows"], two["rows"]):
        for key, value in a.items():
            assert value == pytest.approx(b[key], abs=1e-12), key
    few = _doc("--model", bert_3x4, "--lines", "--file", corpus, "--max-lines", "5")
    assert few["texts"] == 4  # the blank third line is passed over


def test_the_map_and_reduce_equal_one_pass(bert_3x4):
    model = load_model(bert_3x4)
    texts = [t for t in LINES if t]
    whole = partition_stats(str(bert_3x4), texts)
    parts = merge_all([partition_stats(str(bert_3x4), texts[:7]), partition_stats(str(bert_3x4), texts[7:])])
    assert (parts.texts, parts.tokens) == (whole.texts, whole.tokens)
    # the texts batch (and pad) otherwise in the parts: each side within test_batch's bound of the texts run alone
    # (every statistic moves by at most n · max(n, 1 + log2(1 / w)) · the weights' bound), then summed in
    # another order
    ids = [np.asarray(encode(model, t).ids) for t in texts]
    n = max(len(i) for i in ids)
    smallest = min(float(w[w > 0].min()) for i in ids for w in forward(model, i).weights)
    rows = n * max(n, 1 + np.log2(1 / smallest)) * max(float(run_bound(model, i).max()) for i in ids)
    for name, m in whole.moments.items():
        mean_bound, std_bound = moments_bound(m.count, m.squares, m.mean())
        assert_within(parts.moments[name].mean(), m.mean(), 2 * rows + mean_bound, name)
        assert_within(parts.moments[name].std(), m.std(), 2 * rows + std_bound, name)
    streamed = [s for s, _ in stream_stats(str(bert_3x4), texts, workers=1)][-1]
    assert streamed.texts == whole.texts
    doc = corpus_document(model, whole, induction_stats(model, sequences=2, length=5), Corpus("x"))
    assert doc["induction"]["seed"] == 0 and doc["rows"][0]["induction"] is not None


def test_the_table_shows_the_grid_and_the_top_heads(gpt2, corpus):
    r = attn("heads", "--model", gpt2.path, "--lines", "--file", corpus, "--color", "never", "--width", "80")
    assert r.exit_code == 0, r.output
    assert "score of every head" in r.stdout and "induction (ind):" in r.stdout and "24 texts" in r.stdout


def test_an_interrupted_run_reports_what_it_has_marked_partial(bert_3x4, corpus, monkeypatch):
    from attncli.models.runs import corpus as corpus_module

    real = corpus_module.stream_stats

    def interrupted(*args, **kwargs):
        for n, item in enumerate(real(*args, **kwargs)):
            yield item
            if n == 0:
                raise KeyboardInterrupt

    monkeypatch.setattr(corpus_module, "stream_stats", interrupted)
    monkeypatch.setattr(corpus_module, "CHUNK", 4)
    monkeypatch.setattr(corpus_module, "WINDOW", 4)  # chunks in reading order: the first has texts
    r = attn("heads", "--model", bert_3x4, "--lines", "--file", corpus, "--workers", "1", "-f", "json")
    assert r.exit_code == 130
    doc = json.loads(r.stdout)
    assert doc["partial"] and 0 < doc["texts"] < 24


def test_options_of_a_corpus_need_lines(bert_3x4):
    r = attn("heads", "time flies", "--model", bert_3x4, "--max-lines", "3")
    assert r.exit_code == 2 and "go with --lines" in r.stderr
    r = attn("heads", "--model", bert_3x4, "--lines", "-", "--dask", "tcp://nowhere:1")
    assert r.exit_code == 2 and "--dask needs --file" in r.stderr


def test_a_local_dask_cluster_gives_the_single_process_result(bert_3x4, corpus):
    import distributed  # the test extra installs the dask extra: a missing one fails here, never skips

    from attncli.models.runs.corpus import dask_stats

    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    with cluster as c:
        stats = dask_stats(c.scheduler_address, str(bert_3x4), str(corpus), partitions=3)
    whole = partition_stats(str(bert_3x4), LINES)
    assert (stats.texts, stats.tokens) == (whole.texts, whole.tokens) == (24, whole.tokens)
    for name, m in whole.moments.items():
        assert np.allclose(stats.moments[name].mean(), m.mean(), atol=1e-12)


def test_the_corpus_tool_writes_what_the_readme_says():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_corpus.py"), "50"], capture_output=True, text=True, check=True
    )
    lines = out.stdout.splitlines()
    assert len(lines) == 50 and all(line.strip() for line in lines)


def test_parquet_holds_the_rows_and_the_document(bert_3x4, corpus, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="the parquet extra: pip install 'attncli[parquet]'")
    out = tmp_path / "heads.parquet"
    r = attn("heads", "--model", bert_3x4, "--lines", "--file", corpus, "--workers", "1", "-o", out)
    assert r.exit_code == 0, r.output
    doc = _doc("--model", bert_3x4, "--lines", "--file", corpus, "--workers", "1")
    table = pq.read_table(out)
    assert table.to_pylist() == doc["rows"]
    meta = json.loads(table.schema.metadata[b"attncli"])
    assert meta["schema"] == "attncli.corpus/1" and meta["texts"] == 24 and "rows" not in meta


def test_parquet_without_pyarrow_is_one_line(bert_3x4, corpus, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if the extra were not installed
    r = attn("heads", "--model", bert_3x4, "--lines", "--file", corpus, "--workers", "1", "-f", "parquet")
    assert r.exit_code == 2 and "pip install 'attncli[parquet]'" in r.stderr


def test_the_progress_bar_counts_lines_on_a_terminal_stderr(monkeypatch, tmp_path):
    import io
    import sys

    from attncli.io.progress import lines_progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setenv("TERM", "xterm")
    path = tmp_path / "c.txt"
    path.write_text("a\nb\n\nc\nd\n")
    with path.open("rb") as stream, lines_progress(stream, "never", limit=4) as done:
        done(2)
        done(4)
    assert "4/4 lines" in screen.getvalue() and "lines/s" in screen.getvalue()


def test_ctrl_c_on_a_worker_pool_prints_the_partial_statistics_and_exits_130(bert_3x4):
    """Ctrl-C once the pool has reported lines done (its progress bar, on a terminal, says so): the statistics of
    those lines are printed, marked partial, and the exit status is 130."""
    import os
    import pty
    import signal
    import subprocess
    import sys
    import threading

    args = ["heads", "--model", str(bert_3x4), "--lines", "-", "--workers", "2", "-f", "json"]
    terminal, stderr = pty.openpty()  # stderr a terminal: the progress bar is drawn, and read here
    proc = subprocess.Popen(
        [sys.executable, "-m", "attncli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=ROOT,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
    )
    os.close(stderr)
    screen, lines_done = bytearray(), threading.Event()

    def read_the_terminal() -> None:  # all of it, to the end, so that attn never waits on a full terminal
        while True:
            try:
                screen.extend(os.read(terminal, 4096))
            except OSError:  # attn ended: the terminal's other side is closed
                return
            if re.search(rb"(?<![\d.,])[1-9][\d,]* lines(?!/)", screen):
                lines_done.set()

    reader = threading.Thread(target=read_the_terminal, daemon=True)
    reader.start()
    assert proc.stdin is not None
    from attncli.models.runs.corpus import WINDOW

    lines = [line for line in LINES if line]  # no blank line: the first lines done hold texts
    texts = lines * (WINDOW // len(lines) + 2)  # more than a window of lines: the first window runs
    proc.stdin.write(("\n".join(texts) + "\n").encode())  # and stdin left open: the run waits for more
    proc.stdin.flush()
    assert lines_done.wait(120), f"no lines done in 120 s: {bytes(screen[-300:])!r}"  # the event
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    reader.join(10)
    os.close(terminal)
    assert proc.returncode == 130
    doc = json.loads(out or b"null") or pytest.fail(f"no statistics; the terminal showed {bytes(screen)!r}")
    assert doc["partial"] and 0 < doc["texts"] < len(texts)


def test_chunks_hold_every_line_once_of_similar_length_within_each_window():
    from attncli.models.runs.corpus import _chunks

    lines = [f"{i:02d} " + "x" * (i * 7 % 11) for i in range(23)]
    chunks = list(_chunks(lines, 3, 8))
    assert sorted(line for chunk in chunks for line in chunk) == sorted(lines)
    assert all(len(chunk) <= 3 for chunk in chunks)
    for start in range(0, 23, 8):  # the lines of one window come out together, shortest first
        window = [line for chunk in chunks[start // 8 * 3 : start // 8 * 3 + 3] for line in chunk]
        assert sorted(window) == sorted(lines[start : start + 8]) and window == sorted(window, key=len)


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_comes_after_the_first_batch_not_the_first_chunk(bert_3x4, workers):
    """The bar sat at 0 % until a whole chunk (128 lines) was done on every worker: the first chunks are one
    batch each, so the first report comes after BATCH lines."""
    from attncli.models.runs.corpus import BATCH, CHUNK

    lines = [f"time flies like an arrow {'x' * (i % 7)} {i}" for i in range(3 * CHUNK)]
    reads = [read for _, read in stream_stats(bert_3x4, lines, workers)]
    assert reads[0] == BATCH and reads[-1] == len(lines) and reads == sorted(reads)


def _children(pid: int) -> list[int]:
    """The live child processes of `pid` (Linux's /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _until(check, what: str):
    for _ in range(1200):  # a safety net of two minutes: each step ends as soon as the state is reached
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never: {what}")


def _idle(pids: list[int]) -> bool:
    """Whether the processes `pids` sleep and used no CPU over the last 0.3 s (an idle worker waits for a task
    holding the task queue's read lock)."""

    def cpu() -> list[tuple[str, int]]:
        fields = [Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split() for p in pids]
        return [(f[0], int(f[11]) + int(f[12])) for f in fields]  # state, utime + stime

    before = cpu()
    time.sleep(0.3)
    after = cpu()
    return before == after and all(state == "S" for state, _ in after)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the pool's workers in Linux's /proc")
@pytest.mark.parametrize("idle", [False, True], ids=["busy", "idle"])
def test_a_worker_killed_mid_run_stops_the_run_with_one_line(bert_3x4, idle):
    """Hostile round III: a worker killed as the out-of-memory killer would left the run waiting forever; killed
    while idle (its first window of lines done, the rest not yet read), it held the task queue's lock that the
    pool's terminate() takes, and the run waited forever (`corpus._stop`)."""
    args = ["heads", "--model", str(bert_3x4), "--lines", "-", "--workers", "2", "-f", "json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "attncli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write(("\n".join(LINES * 25) + "\n").encode())  # 600 lines, and stdin left open: the run waits
        proc.stdin.flush()
        server = _until(
            lambda: [p for p in _children(proc.pid) if b"forkserver" in Path(f"/proc/{p}/cmdline").read_bytes()],
            "the pool's server",
        )[0]
        workers = _until(lambda: len(_children(server)) >= 2 and _children(server), "two workers")
        if idle:
            _until(lambda: _idle(workers), "the workers idle")
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        _until(lambda: not set(workers) & set(_children(server)), "the workers gone")
        out, err = proc.communicate(timeout=120)  # closes stdin: the run must now find its workers dead
    finally:
        proc.kill()
    assert proc.returncode == 1 and out == b"", err
    text = err.decode()
    assert text.startswith("Error: a worker process stopped (signal 9") and text.count("\n") == 1, text


def test_a_dask_address_where_no_scheduler_listens_is_one_line(bert_3x4, corpus, monkeypatch):
    """Hostile round III: `--dask tcp://127.0.0.1:1` gave a raw traceback."""
    import attncli.models.runs.corpus

    monkeypatch.setattr(attncli.models.runs.corpus, "DASK_TIMEOUT", "1s")  # the address refuses at once; 30 s retrying
    for address, code, said in (("tcp://127.0.0.1:1", 1, "no Dask scheduler answered at"), ("a::", 2, "--dask 'a::'")):
        r = attn("heads", "--model", bert_3x4, "--lines", "--file", corpus, "--dask", address)
        assert refused(r, code=code).startswith(f"Error: {said}")


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for child in _children(todo.pop()):
            found.add(child)
            todo.append(child)
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the processes in Linux's /proc")
def test_no_process_outlives_a_run_stopped_in_a_slow_tokenizer(tmp_path):
    """Hostile round III: a SIGTERM while a worker's contained tokenizer ran left it, the server and the resource
    tracker alive for as long as the tokenizer took (17–42 s)."""
    folder = make_bert(tmp_path / "m")
    doc = json.loads((folder / "tokenizer.json").read_text())
    doc["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": r"\w*\w*\w*[^\w]"}, "behavior": "Isolated"}
    doc["pre_tokenizer"]["invert"] = False  # about n^4 steps: hours on 3,000 characters
    (folder / "tokenizer.json").write_text(json.dumps(doc))
    proc = subprocess.Popen(
        [sys.executable, "-m", "attncli", "heads", "--model", folder, "--lines", "-", "--workers", "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "ATTN_TOKENIZER_SECONDS": "3600"},
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write(("a" * 3000 + "\n").encode())
        proc.stdin.close()
        # the server, its workers, and a worker's contained tokenizer (a grandchild of the server)
        _until(lambda: any(_children(w) for s in _children(proc.pid) for w in _children(s)), "a tokenizer running")
        seen = _descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 143, proc.stderr.read() if proc.stderr else None
    _until(lambda: not any(_alive(p) for p in seen), "every process gone")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _corpus_run(bert_3x4, *extra: str) -> subprocess.Popen:
    """`attn heads --lines -` on two workers, in its own process group (as a shell runs it), fed 600 lines."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "attncli", "heads", "--model", str(bert_3x4), "--lines", "-", "--workers", "2", *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        start_new_session=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(("\n".join(LINES * 25) + "\n").encode())
    proc.stdin.flush()
    return proc


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the processes in Linux's /proc")
def test_ctrl_c_as_the_pool_starts_prints_no_traceback(bert_3x4):
    """Hostile round III: Ctrl-C in the first second printed a forkserver traceback (5–7 of 8 tries): a worker
    started as the pool was stopped failed to load it. Ctrl-C goes to the whole process group, as a terminal's."""
    proc = _corpus_run(bert_3x4, "-f", "json")
    try:
        _until(lambda: _children(proc.pid), "the pool starting")  # its server: the pool is being made
        os.killpg(proc.pid, signal.SIGINT)
        seen = _descendants(proc.pid)
        proc.wait(timeout=120)
    finally:
        proc.kill()
    _until(lambda: not any(_alive(p) for p in seen), "every process gone")
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 130 and "Traceback" not in err, err


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the processes in Linux's /proc")
def test_sigkill_of_attn_ends_its_workers_without_a_word(bert_3x4):
    """Hostile round III: SIGKILL of attn left its workers writing ~70 lines of BrokenPipe tracebacks."""
    proc = _corpus_run(bert_3x4, "-f", "json")
    try:
        _until(lambda: any(len(_children(s)) >= 2 for s in _children(proc.pid)), "two workers")
        seen = _descendants(proc.pid)
        proc.kill()
        proc.wait(timeout=120)
        _until(lambda: not any(_alive(p) for p in seen), "every worker gone with attn")
    finally:
        proc.kill()
    assert proc.stderr is not None and proc.stderr.read() == b""  # the workers held it too: nothing came
