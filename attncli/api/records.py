"""`heads`, `tokens` and `compare`: the commands whose output is a small document of rows (`Records`).

>>> import attncli
>>> [row["token"] for row in attncli.tokens("time flies", tokenizer="char").rows][:4]
['t', 'i', 'm', 'e']
>>> [row["variant"] for row in attncli.compare("time flies", tokenizers="word", variants="scaled,dot").rows]
['scaled', 'dot']
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from attncli.api.config import HEAD_STATISTICS, check_model_options, limits_of, run_config
from attncli.api.outputs import Records
from attncli.api.page import behaviour_page, model_page
from attncli.api.runs import generation_of, load
from attncli.errors import ConfigError, DataError
from attncli.io import documents
from attncli.pipeline.limits import Limits
from attncli.pipeline.read import MAX_TOKENS

if TYPE_CHECKING:  # annotations only: the model code loads with a model run
    from attncli.models.generate import Generation
    from attncli.models.model import Model


def heads(
    text: str,
    *,
    model: str | Model,
    stat: str = "entropy",
    context: str | None = None,
    part: str | None = None,
    generate: Generation | int | None = None,
    precision: int | None = None,
) -> Records:
    """`attn heads`: every head of every layer of `model` on `text`, its statistics and pattern labels
    (`stat`: the number each cell of the table shows, by its name or its column: previous-token or previous);
    an encoder–decoder's `part` over the source `context`; `generate`: of a decoder's text and the tokens it
    writes after it (an encoder–decoder's: the target it writes from `context` after `text`)."""
    from attncli.core.statistics import stat_named  # late: start-up (not at import)
    from attncli.core.stats import entropy_scale
    from attncli.models import route
    from attncli.render.heads import heads_view

    loaded, name = load(model)
    how = generation_of(generate)
    doc = route.heads(loaded, text, context, part, how)
    column = stat_named(stat)
    if column not in doc["stats"]:
        why = doc.get("undefined", {}).get(column, "it is a statistic of cross-attention (--part cross) only")
        raise ConfigError(f"--stat {stat}: {why}; here choose one of {', '.join(doc['stats'])}")
    page_at_last_layer = partial(route.result, loaded, text, None, None, context, part, how)
    view = model_page(page_at_last_layer, "attn heads", precision, loaded, name, text, context)
    keys = len(doc.get("context_tokens", doc["tokens"]))  # a cross-attention's keys are the source's tokens
    table = partial(heads_view, doc, column, entropy_scale(None, keys)[0])
    return Records(documents.Records("attn heads", table, doc=doc, view=view), precision)


def corpus(
    lines: Iterable[str],
    *,
    model: str | Model,
    name: str = "lines",
    workers: int = 1,
    max_lines: int | None = None,
    dask: str | None = None,
    progress: Callable[[int], None] | None = None,
    stops: tuple[type[BaseException], ...] = (KeyboardInterrupt,),
    precision: int | None = None,
) -> Records:
    """`attn heads --lines`: the mean and spread of every head's statistics and detectors over a corpus, each of
    `lines` one text (the first `max_lines`; blank ones skipped), streamed in padded batches on `workers`
    processes, each loading the model from its path. `progress(n)` hears the lines read so far. One of `stops`
    (Ctrl-C in a notebook) ends the run with the statistics so far, marked partial, and is kept in `.stopped`.
    With `dask` (a scheduler's address) the cluster's workers read the file `name` themselves instead."""
    from attncli.models.corpus import (  # late: start-up (model code only with a model)
        Corpus,
        corpus_document,
        dask_stats,
        induction_stats,
        stream_stats,
    )
    from attncli.render.heads import corpus_view

    if max_lines is not None and max_lines < 1:
        raise ConfigError(f"--max-lines must be at least 1, got {max_lines}")
    if dask is not None and max_lines is not None:
        raise ConfigError("--dask needs --file and no --max-lines: the cluster's workers read all of that file")
    loaded, path = load(model)
    stats, stopped = None, None
    try:
        if dask is not None:
            stats = dask_stats(dask, path, name)
        else:
            for partial_stats, read in stream_stats(path, itertools.islice(lines, max_lines), workers):
                stats = partial_stats  # what to report if a stop ends the rest
                if progress is not None:
                    progress(read)
    except stops as e:
        stopped = e
    if stats is None or not stats.texts:
        if stopped is not None:
            raise stopped
        if stats is not None and stats.overflowed:
            raise DataError(
                f"no text: on every line of {name} it could take ({stats.overflowed:,}), {loaded.name}'s numbers "
                "overflowed (non-finite attention weights)"
            )
        raise DataError(f"no text: every line of {name} is blank or too long for {loaded.name}")
    ran = Corpus(name, stopped is not None, max_lines, 1 if dask else workers, dask)
    doc = corpus_document(loaded, stats, induction_stats(loaded), ran)
    out = Records(documents.Records("attn heads", partial(corpus_view, doc), doc=doc), precision)
    out.stopped = stopped
    return out


def tokens(
    text: str, *, tokenizer: str = "word", model: str | Model | None = None, max_tokens: int = MAX_TOKENS
) -> Records:
    """`attn tokens`: each token of `text`, its id and character offsets (with `model=`, the model's tokenizer)."""
    from attncli.pipeline.compare import tokens_document  # late: start-up (not for import attncli or --help)
    from attncli.pipeline.tokenize import TooManyTokens, tokenize
    from attncli.render.steps import tokens_view

    if not text:
        raise DataError("empty text: nothing to tokenize")
    limits_of(None, max_tokens)  # checks max_tokens itself
    try:
        if model is None:
            toks = tokenize(text, tokenizer, max_tokens)
        else:
            from attncli.models.run import model_tokens  # late: start-up (model code only with a model)

            toks = model_tokens(load(model)[0], text)
    except TooManyTokens as e:
        raise DataError(f"{e}: attn tokens lists every one; give a shorter text, or raise --max-tokens") from None
    doc = documents.Records("attn tokens", partial(tokens_view, text, toks), doc=tokens_document(text, toks))
    return Records(doc, warnings=toks.warnings)


def variants() -> Records:
    """`attn variants`: the attention variants of the registry, one row each (formula, parameters, paper, notes)."""
    from attncli.core.variants import VARIANTS  # late: start-up (not for import attncli or --help)

    def table(digits: int, width: int):  # Rich loads when the table is drawn, not for to_json()
        from attncli.render.variants import variants as variants_table  # late: start-up (Rich: not for to_json)

        return variants_table(rows, width)

    rows = [v.record() for v in VARIANTS.values()]
    return Records(documents.Records("attn variants", table, doc={"schema": "attncli.variants/1", "rows": rows}))


def compare(
    text: str,
    *,
    tokenizers: str = "char,word,bpe",
    variants: str = "scaled",
    heads: int = 1,
    dim: int = 16,
    dk: int | None = None,
    dv: int | None = None,
    d_a: int | None = None,
    mask: str | Sequence[str] | None = None,
    positional: str = "none",
    projection: str = "random",
    seed: int = 0,
    temperature: float = 1.0,
    rank: int | None = None,
    features: int | None = None,
    model: str | Model | None = None,
    layer: int | None = None,
    head: int | None = None,
    max_tokens: int = MAX_TOKENS,
    limits: Limits | None = None,
) -> Records:
    """`attn compare`: one run per tokenizer and variant (comma-separated names), side by side, and with
    `model=` its layer (`layer`, `head`) as one more row."""
    from attncli.pipeline.compare import compare_document, compare_runs, split_names  # late: start-up (not at import)
    from attncli.render.compare import compare_view

    check_model_options(model, {}, layer=layer, head=head)
    names = split_names(variants, "variants")
    run: dict[str, Any] = dict(
        heads=heads, dim=dim, dk=dk, dv=dv, d_a=d_a, mask=mask, positional=positional, projection=projection
    )
    config = run_config(**run, seed=seed, temperature=temperature, rank=rank, features=features, variants=names)
    limits = limits_of(limits, max_tokens, HEAD_STATISTICS)
    results = compare_runs(text, split_names(tokenizers, "tokenizers"), names, config, limits)
    warnings = tuple(w for r in results for w in r.tokens.warnings)
    if model is not None:
        from attncli.models import route  # late: start-up (model code only with a model)
        from attncli.models.run import compare_with_model

        loaded = load(model)[0]
        results.append(route.result(loaded, text, layer, head, part=route.own_part(loaded)))
        doc = compare_with_model(text, results[:-1], results[-1])
    else:
        doc = compare_document(text, results)
    table = partial(compare_view, doc["rows"], results)
    return Records(documents.Records("attn compare", table, doc=doc), warnings=warnings)


def lens(
    text: str, *, model: str | Model, top_k: int = 5, context: str | None = None, precision: int | None = None
) -> Records:
    """`attn lens`: the logit lens of a decoder, every layer's `top_k` next tokens at every position (an
    encoder–decoder's: its decoder's over the target `text`, reading the source `context`)."""
    from attncli.models.lens import lens_document  # late: start-up (model code only with a model)
    from attncli.render.lens import lens_view

    loaded, name = load(model)
    doc = lens_document(loaded, text, top_k, context=context)
    page = None if context is not None else behaviour_page(loaded, name, text, "lens", lens=True)
    return Records(documents.Records("attn lens", partial(lens_view, doc), doc=doc, view=page), precision)


def ablate(
    text: str,
    *,
    model: str | Model,
    heads: Sequence[tuple[int, int]] | None = None,
    target: str | None = None,
    mode: str = "zero",
    precision: int | None = None,
) -> Records:
    """`attn ablate`: each of `heads` ((layer, head) pairs; default every head) of a decoder switched off alone
    (`mode` zero or mean), ranked by how much it moves the logit of the next token (or `target`)."""
    from attncli.models.ablate import ablate_document  # late: start-up (model code only with a model)
    from attncli.render.ablate import ablate_view

    loaded, name = load(model)
    doc = ablate_document(loaded, text, None if heads is None else list(heads), target, mode)
    page = behaviour_page(loaded, name, text, "ablation", ablate=True, target=target, mode=mode)
    return Records(documents.Records("attn ablate", partial(ablate_view, doc), doc=doc, view=page), precision)
