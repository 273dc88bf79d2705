"""`heads`, `tokens` and `compare`: the commands whose output is a small document of rows (`Records`).

>>> import attncli
>>> [row["token"] for row in attncli.tokens("time flies", tokenizer="char").rows][:4]
['t', 'i', 'm', 'e']
>>> [row["variant"] for row in attncli.compare("time flies", tokenizers="word", variants="scaled,dot").rows]
['scaled', 'dot']
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attncli.api.config import HEAD_STATISTICS, check_chat, limits_of, run_config
from attncli.api.keywords import checked
from attncli.api.options import DEFAULTS
from attncli.api.outputs import Records
from attncli.api.page import behaviour_page, causal_page, model_page
from attncli.api.runs import check_contrib, generation_of, load
from attncli.errors import ConfigError, DataError
from attncli.io import documents
from attncli.pipeline.limits import Limits
from attncli.pipeline.ranges import check_range
from attncli.pipeline.read import MAX_TOKENS

if TYPE_CHECKING:  # annotations only: the model code loads with a model run
    from attncli.models.network.model import Model
    from attncli.models.runs.generate import Generation


@checked
def heads(
    text: str,
    *,
    model: str | Model,
    stat: str = "entropy",
    context: str | None = None,
    part: str | None = None,
    generate: Generation | int | None = None,
    chat: bool = False,
    system: str | None = None,
    precision: int | None = None,
    contrib: str = "weights",
) -> Records:
    """`attn heads`: every head of every layer of `model` on `text`, its statistics and pattern labels
    (`stat`: the number each cell of the table shows, by its name or its column: previous-token or previous);
    an encoder–decoder's `part` over the source `context`; `generate`: of a decoder's text and the tokens it
    writes after it (an encoder–decoder's: the target it writes from `context` after `text`). `contrib` (a
    measure of CONTRIBUTIONS with per-head maps other than "weights": norm): every statistic, label and sink
    number computed on each head's maps of that measure as shares of each row, the document saying so under
    "contrib"."""
    from attncli.core.measures import computed  # late: start-up (the registry of measures: only with a run)
    from attncli.core.statistics import stat_named  # late: start-up (not at import)
    from attncli.core.stats import entropy_scale
    from attncli.models.runs import route
    from attncli.render.heads import heads_view

    check_contrib(contrib, model, False)
    check_chat(chat, system)
    loaded, name = load(model, chat, system)
    how = generation_of(generate)
    if not computed(contrib):
        doc = route.heads(loaded, text, context, part, how)
    else:
        from attncli.models.interpret.contrib import heads_of  # late: start-up (model code only with a model)

        doc = heads_of(loaded, text, contrib, context, part, how)
    column = stat_named(stat)
    if column not in doc["stats"]:
        why = doc.get("undefined", {}).get(column, "it is a statistic of cross-attention (--part cross) only")
        raise ConfigError(f"--stat {stat}: {why}; here choose one of {', '.join(doc['stats'])}")
    page_at_last_layer = partial(route.result, loaded, text, None, None, context, part, how)
    view = None  # with --contrib: the page draws the weights, not the measure's statistics
    if not computed(contrib):
        view = model_page(page_at_last_layer, "attn heads", precision, loaded, name, text, context)
    keys = len(doc.get("context_tokens", doc["tokens"]))  # a cross-attention's keys are the source's tokens
    table = partial(heads_view, doc, column, entropy_scale(None, keys)[0])
    return Records(documents.Records("attn heads", table, doc=doc, view=view), precision)


@checked
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
    from attncli.models.runs.corpus import (  # late: start-up (model code only with a model)
        Corpus,
        corpus_document,
        dask_stats,
        induction_stats,
        stream_stats,
    )
    from attncli.render.heads import corpus_view

    check_range("max_lines", max_lines)
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


@checked
def tokens(
    text: str,
    *,
    model: str | Model | None = None,
    chat: bool = False,
    system: str | None = None,
    max_tokens: int = MAX_TOKENS,
    **run: Any,
) -> Records:
    """`attn tokens`: each token of `text`, its id and character offsets (with `model=`, the model's tokenizer)."""
    from attncli.pipeline.compare import tokens_document  # late: start-up (not for import attncli or --help)
    from attncli.pipeline.tokenize import TooManyTokens, tokenize
    from attncli.render.steps import tokens_view

    if not text:
        raise DataError("empty text: nothing to tokenize")
    limits_of(None, max_tokens)  # checks max_tokens itself
    check_chat(chat, system)
    try:
        if model is None:
            toks = tokenize(text, run["tokenizer"], max_tokens)
        else:
            from attncli.models.runs.run import model_tokens  # late: start-up (model code only with a model)

            toks = model_tokens(load(model, chat, system)[0], text)
    except TooManyTokens as e:
        raise DataError(f"{e}: attn tokens lists every one; give a shorter text, or raise --max-tokens") from None
    text = toks.chat_text or text  # --chat: the offsets point into the chat the template wrote
    doc = documents.Records("attn tokens", partial(tokens_view, text, toks), doc=tokens_document(text, toks))
    return Records(doc, warnings=toks.warnings)


@checked
def variants() -> Records:
    """`attn variants`: the attention variants of the registry, one row each (formula, parameters, paper, notes)."""
    from attncli.core.variants import VARIANTS  # late: start-up (not for import attncli or --help)

    def table(digits: int, width: int):  # Rich loads when the table is drawn, not for to_json()
        from attncli.render.variants import variants as variants_table  # late: start-up (Rich: not for to_json)

        return variants_table(rows, width)

    rows = [v.record() for v in VARIANTS.values()]
    return Records(documents.Records("attn variants", table, doc={"schema": "attncli.variants/1", "rows": rows}))


@checked
def compare(
    text: str,
    *,
    tokenizers: str | None = None,
    variants: str = "scaled",
    model: str | Model | Sequence[str | Model] | None = None,
    layer: int | None = None,
    head: int | None = None,
    max_tokens: int = MAX_TOKENS,
    limits: Limits | None = None,
    **run: Any,
) -> Records:
    """`attn compare`: one run per tokenizer and variant (comma-separated names, default char,word,bpe), side by
    side, and with `model=` its layer (`layer`, `head`) as one more row. With several models (a list: folders,
    GGUF files, names), their tokenizers side by side, and those of `tokenizers` when given: a row each."""
    from attncli.pipeline.compare import compare_document, compare_runs, split_names  # late: start-up (not at import)
    from attncli.render.compare import compare_view

    if isinstance(model, Sequence) and not isinstance(model, str):
        models = list(dict.fromkeys(model))
        if len(models) > 1:
            given = dict(run, variants=variants)  # several models ignore none of them silently
            defaults = DEFAULTS | {"variants": inspect.signature(compare).parameters["variants"].default}
            kept = [k for k, v in given.items() if v != defaults[k]] + ["layer"] * (layer is not None)
            if kept or head is not None:
                raise ConfigError(
                    "several models compare their tokenizers, not attention: drop "
                    + ", ".join(k.replace("_", "-") for k in [*kept, *["head"] * (head is not None)])
                )
            return _tokenizers(text, models, tokenizers, max_tokens)
        model = models[0] if models else None
    names = split_names(variants, "variants")
    config = run_config(**run, variants=names)
    limits = limits_of(limits, max_tokens, HEAD_STATISTICS)
    results = compare_runs(text, split_names(tokenizers or "char,word,bpe", "tokenizers"), names, config, limits)
    warnings = tuple(w for r in results for w in r.tokens.warnings)
    if model is not None:
        from attncli.models.runs import route  # late: start-up (model code only with a model)
        from attncli.models.runs.run import compare_with_model

        loaded = load(model)[0]
        results.append(route.result(loaded, text, layer, head, part=route.own_part(loaded)))
        doc = compare_with_model(text, results[:-1], results[-1])
    else:
        doc = compare_document(text, results)
    table = partial(compare_view, doc["rows"], results)
    return Records(documents.Records("attn compare", table, doc=doc), warnings=warnings)


def _tokenizers(text: str, models: list, tokenizers: str | None, max_tokens: int) -> Records:
    """`compare` with several models: each model's tokenizer (and those of `tokenizers`), a row each."""
    from attncli.models.runs.run import model_tokens  # late: start-up (model code only with a model)
    from attncli.pipeline.compare import split_names, tokenizer_row, tokenizers_document
    from attncli.pipeline.run import check_text
    from attncli.pipeline.tokenize import tokenize
    from attncli.render.compare import tokenizers_view

    check_text(text, "text")
    limits_of(None, max_tokens)  # checks max_tokens itself
    rows = []
    for given in models:
        loaded = load(given)[0]
        tokens = model_tokens(loaded, text)
        if len(tokens) > max_tokens:
            raise DataError(
                f"{loaded.name} cuts the text into {len(tokens):,} tokens, more than --max-tokens {max_tokens:,}"
            )
        rows.append(tokenizer_row(text, tokens, loaded.name))
    for name in split_names(tokenizers, "tokenizers") if tokenizers else []:
        rows.append(tokenizer_row(text, tokenize(text, name, max_tokens), name))
    doc = tokenizers_document(text, rows)
    return Records(documents.Records("attn compare", partial(tokenizers_view, rows), doc=doc))


@checked
def lens(
    text: str,
    *,
    model: str | Model,
    top_k: int = 5,
    context: str | None = None,
    chat: bool = False,
    system: str | None = None,
    precision: int | None = None,
) -> Records:
    """`attn lens`: the logit lens of a decoder, every layer's `top_k` next tokens at every position (an
    encoder–decoder's: its decoder's over the target `text`, reading the source `context`)."""
    from attncli.models.interpret.lens import lens_document  # late: start-up (model code only with a model)
    from attncli.render.lens import lens_view

    check_chat(chat, system)
    loaded, name = load(model, chat, system)
    doc = lens_document(loaded, text, top_k, context=context)
    page = None if context is not None else behaviour_page(loaded, name, text, "lens", lens=True)
    return Records(documents.Records("attn lens", partial(lens_view, doc), doc=doc, view=page), precision)


@checked
def ablate(
    text: str,
    *,
    model: str | Model,
    heads: Sequence[tuple[int, int]] | None = None,
    target: str | None = None,
    mode: str = "zero",
    contrast: str | None = None,
    rank_by: str | None = None,
    chat: bool = False,
    system: str | None = None,
    precision: int | None = None,
) -> Records:
    """`attn ablate`: each of `heads` ((layer, head) pairs; default every head) of a decoder switched off alone
    (`mode` zero or mean), ranked by how much it moves the next token (or `target`): `rank_by` logprob (default),
    logit, or logit-diff (target − `contrast`, the default with a contrast). The result's `warnings` are the
    notes on the tokens named (an ambiguous one; a target that is another spelling of the next token)."""
    from attncli.models.interpret.ablate import ablate_document  # late: start-up (model code only with a model)
    from attncli.render.ablate import ablate_view

    check_chat(chat, system)
    loaded, name = load(model, chat, system)
    doc = ablate_document(
        loaded, text, None if heads is None else list(heads), target, mode, contrast=contrast, rank_by=rank_by
    )
    page = behaviour_page(loaded, name, text, "ablation", ablate=True, target=target, mode=mode)
    view = documents.Records("attn ablate", partial(ablate_view, doc), doc=doc, view=page)
    return Records(view, precision, tuple(doc["notes"]))


@checked
def catalog(*, path: str | Path | Sequence[str | Path] = ()) -> Records:
    """`attn models` (not `models`, the name of attncli's package of real models): every model attn can open on
    this machine, found offline (the Hugging Face and llama.cpp
    caches, Ollama, LM Studio, and the folder or folders `path`, as `--path`), one row each: the name `--model`
    takes, where it lives, family, parameters, quant, bytes, and whether attn supports it (`why` not). Only
    headers are read."""
    from attncli.models.opening.catalog import installed  # late: start-up (not for import attncli or --help)

    folders = [Path(p).expanduser() for p in ([path] if isinstance(path, str | Path) else path)]
    for folder in folders:
        if not folder.exists():
            raise DataError(f"--path {folder}: no such folder or file")
    rows, notes = installed(folders)

    def table(digits: int, width: int):  # Rich loads when the table is drawn, not for to_json()
        from attncli.render.models import models as models_table  # late: start-up (Rich: not for to_json)

        return models_table(rows, notes, width)

    doc = {"schema": "attncli.models/1", "rows": rows, "notes": notes}
    return Records(documents.Records("attn models", table, doc=doc), warnings=tuple(notes))


@checked
def patch(
    text: str,
    *,
    corrupt: str,
    model: str | Model,
    target: str,
    contrast: str | None = None,
    what: str = "resid",
    noising: bool = False,
    precision: int | None = None,
) -> Records:
    """`attn patch`: activation patching of a decoder between `text` (clean) and `corrupt` (as many tokens): each
    activation of `what` (resid, heads, attn-out, mlp-out) moved from the clean run into the corrupt one (or the
    reverse, `noising`), scored by how much of m = logit(target) − logit(contrast) it restores."""
    from attncli.models.interpret.patch import patch_document  # late: start-up (model code only with a model)
    from attncli.render.causal import patch_view

    loaded, name = load(model)
    doc = patch_document(loaded, text, corrupt, target, contrast, what, noising)
    asked = dict(corrupt=corrupt, target=target, contrast=contrast, what=what, noising=noising)
    view = causal_page("attn patch", precision, loaded, name, text, doc, **asked)
    return Records(
        documents.Records("attn patch", partial(patch_view, doc), doc=doc, view=view), precision, tuple(doc["notes"])
    )


@checked
def dla(
    text: str, *, model: str | Model, target: str, contrast: str | None = None, precision: int | None = None
) -> Records:
    """`attn dla`: direct logit attribution, each head's, MLP's and the embeddings' share of m = logit(target) −
    logit(contrast) at the last position, through the final norm with its scale frozen; the parts sum to m."""
    from attncli.models.interpret.dla import dla_document  # late: start-up (model code only with a model)
    from attncli.render.causal import dla_view

    loaded, name = load(model)
    doc = dla_document(loaded, text, target, contrast)
    view = causal_page("attn dla", precision, loaded, name, text, doc, target=target, contrast=contrast)
    return Records(
        documents.Records("attn dla", partial(dla_view, doc), doc=doc, view=view), precision, tuple(doc["notes"])
    )


@checked
def knockout(
    text: str,
    *,
    model: str | Model,
    span: str,
    to: int | None = None,
    window: int | None = None,
    precision: int | None = None,
) -> Records:
    """`attn knockout`: the attention edges from position `to` (default the last) to the tokens of `span`
    (positions such as "2-4", or a part of the text) blocked in every window of `window` consecutive layers, and
    the relative change of the model's top next-token probability (Geva et al. 2023)."""
    from attncli.models.interpret.knockout import knockout_document  # late: start-up (model code only with a model)
    from attncli.render.causal import knockout_view

    loaded, name = load(model)
    doc = knockout_document(loaded, text, span, to, window)
    view = causal_page("attn knockout", precision, loaded, name, text, doc, span=span, to=to, window=window)
    return Records(documents.Records("attn knockout", partial(knockout_view, doc), doc=doc, view=view), precision)
