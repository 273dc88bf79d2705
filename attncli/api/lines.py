"""`show_lines`: `attn show --lines` as a function, each line of an input one text run as `show` runs it.

    >>> import attncli
    >>> shown = attncli.show_lines(["time flies", "", "fruit flies like a banana"], heads=2)
    >>> [(number, result.tokens.strings, result.weights.shape) for number, result in shown]
    [(1, ('time', 'flies'), (2, 2, 2)), (3, ('fruit', 'flies', 'like', 'a', 'banana'), (2, 5, 5))]

The lines are read as they are reached, and each result made when it is asked for (`workers` > 1 runs the lines
past the first few hundred on forked processes, in the input's order: `attncli.pipeline.lines`), so a file of
any length streams in bounded memory; `written("jsonl")` and `save(path)` write what `attn show --lines` writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from attncli.api.config import check_show, run_config
from attncli.api.keywords import KINDS, checked, plain
from attncli.api.options import DEFAULTS
from attncli.api.outputs import Output
from attncli.api.runs import load, show
from attncli.errors import AttnError, ConfigError, DataError
from attncli.io import documents

if TYPE_CHECKING:  # annotations only: numpy and the results load with a run
    from attncli.pipeline.result import AttentionResult


class Lines(Output):
    """The output of `show_lines`: iterating it gives `(line number, AttentionResult)` for each non-blank line,
    in the input's order, once (a stream: the lines are read as they are reached)."""

    def __iter__(self) -> Iterator[tuple[int, AttentionResult]]:
        return iter(self.document.results)  # type: ignore[attr-defined]


@checked
def show_lines(
    lines: Iterable[str | tuple[int, str]],
    *,
    name: str = "the lines",
    workers: int = 1,
    stats: bool = False,
    precision: int | None = None,
    on_warning: Callable[[str], None] | None = None,
    **options: Any,
) -> Lines:
    """`attn show --lines`: `show(line, **options)` for each non-blank line of `lines` (strings, numbered from 1,
    their newline dropped, or `(number, text)` pairs as `attncli.io.inputs.iter_lines` reads a file), past the
    first few hundred on `workers` forked processes, results in the input's order. `options` are `show`'s
    keywords (a `model` is loaded once, for every line); a line's error names `name` and its number;
    `on_warning` hears what the tokenizer says of a line (a truncation) as that line's result is reached. `stats`
    adds each line's head statistics to what is written, as `attn show --lines --stats` does."""
    unknown = sorted(k for k in options if ("show", k) not in KINDS or k in ("text", "stats", "precision"))
    if unknown:
        raise ConfigError(f"show_lines() got an unexpected keyword {unknown[0]!r}: it takes show()'s keywords")
    options = {key: value if value is None else plain("show", key, value) for key, value in options.items()}
    check_show(stats, options.get("no_weights", False), options.get("head"), options.get("mean_heads", False))
    if options.get("model") is not None:
        options["model"] = load(options["model"])[0]  # once, for every line
    else:  # a bad option fails before the first line is read
        run = {key: options[key] for key in DEFAULTS if key in options and key != "context"}
        run_config(**run, dtype=options.get("dtype", "float64"), weights=not options.get("no_weights")).resolve()
    from attncli.pipeline.heads import stats_document  # late: start-up (not at import)
    from attncli.pipeline.lines import ordered_map
    from attncli.render.stats import show_view

    drawn = {"mean": options.get("mean_heads", False), "matrix_only": options.get("matrix_only", False)}
    drawn |= {"scale": options.get("scale", "sqrt"), "drop_sink": options.get("drop_sink", False)}
    query = options.get("query")
    table = partial(show_view, stats=stats, query=None if query is None else str(query), **drawn)

    def run_line(number: int, text: str) -> AttentionResult:  # here, or in a worker process
        try:
            return show(text, **options, precision=precision).result
        except AttnError as e:
            raise type(e)(f"{name} line {number}: {e}") from None

    def done(work: Callable[[tuple[int, tuple[int, str]]], tuple[tuple[str, ...], Any]], processes: int):
        """work((i, (number, text))) -> (warnings, value) over the non-blank lines: the values, in order."""
        texts = ((n, text) for n, text in _numbered(lines) if text.strip())
        found = False
        for outcome in ordered_map(work, enumerate(texts), processes):
            if isinstance(outcome, AttnError):
                raise outcome
            found = True
            warnings, value = outcome
            for warning in warnings:
                if on_warning is not None:
                    on_warning(warning)
            yield value
        if not found:
            raise DataError(f"no text: every line of {name} is blank")

    def result(item: tuple[int, tuple[int, str]]) -> tuple[tuple[str, ...], tuple[int, AttentionResult]]:
        _, (number, text) = item
        r = run_line(number, text)
        return r.tokens.warnings, (number, r)

    def written(write: Callable[[int, int, AttentionResult], bytes]) -> Iterator[bytes]:
        def work(item: tuple[int, tuple[int, str]]) -> tuple[tuple[str, ...], bytes]:  # run and written together
            i, (number, text) = item
            r = run_line(number, text)
            return r.tokens.warnings, write(i, number, r)

        return done(work, workers)

    extra = (lambda r: {"stats": stats_document(r, precision)}) if stats else None
    doc = documents.Lines("attn show", results=done(result, 1), line_table=table, extra=extra, each=written)
    return Lines(doc, precision)


def _numbered(lines: Iterable[str | tuple[int, str]]) -> Iterator[tuple[int, str]]:
    r"""`(number from 1, text)` for each line, its newline dropped (as a file's lines have it); pairs pass as they
    are.

    >>> list(_numbered(["a b\r\n", "\n", "c"]))
    [(1, 'a b'), (2, ''), (3, 'c')]
    """
    for i, line in enumerate(lines, 1):
        if isinstance(line, str):
            yield i, line.removesuffix("\n").removesuffix("\r")
        else:
            yield line
