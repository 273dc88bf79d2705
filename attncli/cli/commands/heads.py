"""`attn heads`: every head of a real model at a glance, on one text or over a corpus (--lines)."""

from __future__ import annotations

import signal
from typing import Annotated

import typer

from attncli.cli.model import (
    Chat,
    Contrib,
    Generate,
    GgufFile,
    Part,
    System,
    Workers,
    generation,
    model_path,
    model_value,
    worker_count,
)
from attncli.cli.options import File, Out, Text, options, row
from attncli.cli.output import contrib_format, emit
from attncli.cli.signals import Stopped
from attncli.cli.text import given_lines, given_text, say
from attncli.errors import ConfigError
from attncli.io.inputs import iter_lines

# ---- heads' own options (the ones it shares with others are in cli/options.py and cli/model.py) -----------

ModelRequired = Annotated[str, row("heads_model", callback=model_value)]
HeadsContext = Annotated[str | None, row("model_context")]

Stat = Annotated[str, row("stat")]

CorpusLines = Annotated[bool, row("corpus_lines")]

MaxLines = Annotated[int | None, row("max_lines")]

DaskAddress = Annotated[str | None, row("dask")]


@options(out=Out, writes=("Records",))
def heads(
    ctx: typer.Context,
    model: ModelRequired,
    out: Out,
    text: Text = None,
    file: File = None,
    stat: Stat = "entropy",
    lines: CorpusLines = False,
    max_lines: MaxLines = None,
    workers: Workers = None,
    dask: DaskAddress = None,
    part: Part = None,
    context: HeadsContext = None,
    gguf_file: GgufFile = None,
    chat: Chat = False,
    system: System = None,
    generate: Generate = None,
    contrib: Contrib = "weights",
) -> None:
    """Every head of a real model at a glance, layers × heads.

    --stat in each cell, labels for clear patterns (previous-token, diagonal, first-token/sink, broad);
    -f json|jsonl|csv: every statistic of every head. --lines: over a corpus, one text per line. --generate N: of
    TEXT and the N tokens a decoder writes after it (an encoder–decoder's target, written from --context).
    --contrib norm: every number computed on each head's ‖α f(x)‖ as shares of each row, not on the weights."""
    from attncli.api.options import computed  # late: start-up (the registry of measures: only with a run)

    model = model_path(model, gguf_file) or model  # with --gguf-file: that file, for every worker process too
    if computed(contrib):
        if lines:
            raise ConfigError(f"--contrib {contrib} describes one text's heads: drop --lines or --contrib")
        from attncli.io import documents  # late: start-up (not for --help)

        contrib_format(contrib, out, documents.Records, rows=True)
    if lines:
        if part is not None or context is not None or generate is not None or chat or system is not None:
            raise ConfigError(
                "--lines runs a model's own attention over a corpus: drop --part, --context, --generate, --chat "
                "and --system"
            )
        return _corpus(model, out, text, file, max_lines, workers, dask)
    if max_lines is not None or workers is not None or dask is not None:
        raise ConfigError("--max-lines, --workers and --dask go with --lines (a corpus, one text per line)")
    from attncli import api  # late: start-up (not for --help)

    words = given_text(text, file)
    how = generation(ctx, generate)
    found = api.heads(
        words, model=model, stat=stat, context=context, part=part, generate=how, chat=chat, system=system,
        contrib=contrib, precision=out.precision,
    )  # fmt: skip
    emit(found.document, out)


def _corpus(path: str, out: Out, text: str | None, file: str | None, max_lines, workers, dask) -> None:
    """`attn heads --lines`: the corpus streamed through the model on `workers` processes (or a Dask cluster);
    Ctrl-C, SIGTERM or SIGHUP print the statistics so far, marked partial, and exit 128 + the signal."""
    from attncli import api  # late: start-up (not for --help)
    from attncli.io.progress import lines_progress

    workers = worker_count(workers)
    if dask is not None and file is None:
        raise ConfigError("--dask needs --file and no --max-lines: the cluster's workers read all of that file")
    stream, name = given_lines(text, file)
    with stream, lines_progress(stream, out.color, max_lines) as done:
        texts = (line for _, line in iter_lines(stream, name, "strict", say))
        stats = api.corpus(
            texts,
            model=path,
            name=name,
            workers=workers,
            max_lines=max_lines,
            dask=dask,
            progress=done,
            stops=(KeyboardInterrupt, Stopped),
            precision=out.precision,
        )
    emit(stats.document, out)
    if stats.stopped is not None:
        stopped = stats.stopped
        raise typer.Exit(128 + (stopped.signum if isinstance(stopped, Stopped) else signal.SIGINT))
