"""`show`, `steps` and `view`: one text's attention, from a seeded text run or a real model's layer.

Each takes the options of its command as keywords, with the same defaults and the same checks (errors are the
AttnError family, with the command line's words), and returns what the command writes:

    >>> import attncli
    >>> r = attncli.show("time flies like an arrow", heads=2)
    >>> r.tokens, r.weights.shape, r.outputs.shape
    (['time', 'flies', 'like', 'an', 'arrow'], (2, 5, 5), (5, 16))
    >>> attncli.steps("time flies", variant="cosine").result.config.variant
    'cosine'

`model=` takes what `--model` takes (a folder, a .gguf, a cached name) or a model `attncli.models.load_model`
loaded, so that a notebook loads it once. `limits` replaces the memory guard of `max_tokens` and
ATTN_MAX_MEMORY (the command line passes its own, whose refusals suggest its options).

The functions import what they run inside them: a text run loads no model code, and `attncli.api` itself
(imported by every command) no NumPy and no Rich (tests/cli/test_startup.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from attncli.api.config import HEAD_STATISTICS, check_chat, check_show, limits_of, run_config
from attncli.api.keywords import checked
from attncli.api.outputs import Attention, Output, Page
from attncli.api.page import behaviour_of, check_behaviour, model_page, page_of
from attncli.core.scales import DEFAULT as DEFAULT_SCALE
from attncli.errors import ConfigError
from attncli.io import documents
from attncli.pipeline.limits import Limits
from attncli.pipeline.read import MAX_TOKENS

if TYPE_CHECKING:  # annotations only: the model code loads with a model run
    from attncli.models.network.model import Model
    from attncli.models.runs.generate import Generation


def load(model: str | Model, chat: bool = False, system: str | None = None) -> tuple[Model, str]:
    """(the loaded model, the name its page's commands use): `model` loaded if it is a path or a name; `chat`:
    each text it is given is read as the user's message in its chat template (`system` the system message)."""
    if isinstance(model, str):
        from attncli.models import load_model  # late: start-up (the model code loads only for a model run)

        loaded, name = load_model(model), model
    else:
        loaded, name = model, str(model.path)
    if chat:
        from attncli.models.runs.route import with_chat  # late: start-up (model code only with a model)

        loaded = with_chat(loaded, system)
    return loaded, name


def generation_of(generate: Generation | int | None) -> Generation | None:
    """`generate=`: N new tokens (greedy), or a `Generation` (its sampling too), or None."""
    if generate is None or not isinstance(generate, int):
        return generate
    from attncli.models.runs.generate import Generation  # late: start-up (model code only with a model)

    return Generation(generate)


@checked
def show(
    text: str,
    *,
    model: str | Model | None = None,
    layer: int | None = None,
    head: int | None = None,
    part: str | None = None,
    generate: Generation | int | None = None,
    chat: bool = False,
    system: str | None = None,
    stats: bool = False,
    no_weights: bool = False,
    dtype: str = "float64",
    mean_heads: bool = False,
    query: int | str | None = None,
    matrix_only: bool = False,
    raw_tokens: bool = False,
    max_tokens: int = MAX_TOKENS,
    precision: int | None = None,
    limits: Limits | None = None,
    contrib: str = "weights",
    scale: str = "sqrt",
    drop_sink: bool = False,
    **run: Any,
) -> Attention:
    """`attn show`: the attention matrix and the outputs of `text`, of a seeded text run or (`model=`) of a real
    model's `layer` (default the last; an encoder–decoder's `part`, with the source in `context`); `generate`: a
    decoder's text and the tokens it writes after it (N, greedy, or a `attncli.models.runs.generate.Generation`); an
    encoder–decoder's target written from `context` after `text` (its beginning, or "").

    `mean_heads`, `query` (one query's row as bars: its index, or its token as text or as the vocabulary writes
    it), `matrix_only` and `raw_tokens` (the labels as the vocabulary writes them) change only what the table
    draws, and so do `scale` ("log": the weights' colours on a log scale, the numbers the same) and `drop_sink`
    (the weights without key 0, the first token, each row renormalized over the keys left); an ambiguous `query`
    (a repeated token) is one of the output's `warnings`. `contrib` (a measure of attncli.core.measures'
    CONTRIBUTIONS other than "weights", with a `model`): the table draws that measure's maps of the layer instead
    of the weights, and the document adds them under "contributions"."""
    from attncli.core.measures import computed  # late: start-up (the registry of measures: only with a run)

    check_contrib(contrib, model, mean_heads or query is not None or no_weights)
    check_scale(scale)
    if drop_sink and (mean_heads or query is not None or no_weights or computed(contrib)):
        raise ConfigError(
            "--drop-sink redraws each head's weights: drop --mean-heads, --query, --no-weights and --contrib"
        )
    context = run.pop("context")
    check_chat(chat, system)
    check_show(stats, no_weights, head, mean_heads)
    from attncli.pipeline.heads import stats_document  # late: start-up (not at import)
    from attncli.render.stats import show_view

    query = None if query is None else str(query)  # an index or a token, as --query reads it

    table = partial(
        show_view, stats=stats, mean=mean_heads, query=query, matrix_only=matrix_only, scale=scale, drop_sink=drop_sink
    )
    if model is not None:
        from attncli.models.runs import route  # late: start-up (model code only with a model)
        from attncli.pipeline.behaviour import Behaviour

        loaded, name = load(model, chat, system)
        result = route.result(loaded, text, layer, head, context, part, generation_of(generate))
        looks = Behaviour(contrib=contrib, scale=scale, drop_sink=drop_sink)  # its page's, as attn view's
        page: Callable[[], documents.View] | None = model_page(
            lambda: result, "attn show", precision, loaded, name, text, context, looks
        )
    else:
        from attncli.pipeline.result import one_head  # late: start-up (not for import attncli or --help)
        from attncli.pipeline.run import run as run_text

        config = run_config(**run, dtype=dtype, weights=not no_weights)
        limits = limits_of(limits, max_tokens, HEAD_STATISTICS if stats else None)
        result = run_text(text, config, context=context, limits=limits)
        result = result if head is None else one_head(result, head)
        looked = None
        if scale != DEFAULT_SCALE or drop_sink:  # its page's too, as attn view's (Behaviour.looks)
            from attncli.pipeline.behaviour import Behaviour  # late: start-up (the page's, with these options only)

            looked = Behaviour(scale=scale, drop_sink=drop_sink)
        page = None if no_weights else page_of(result, "attn show", precision, behaviour=looked)
    if raw_tokens:  # the labels as the vocabulary writes them (the page built from `result` too)
        result = result.raw_tokens()
    note = None
    if query is not None:  # a query the table cannot draw fails here, not when the table is shown
        result.attention("--query shows a row of the weights: run without --no-weights")
        note = result.tokens.resolve(query)[1]
    extra: dict[str, Any] | None = {"stats": stats_document(result, precision)} if stats else None
    drawn = partial(table, result)
    contributions = None
    if computed(contrib):
        from attncli.models.interpret.contrib import of_result  # late: start-up (model code only with a model)
        from attncli.render.contrib import contribution_view

        contributions = of_result(result, contrib)
        extra = (extra or {}) | {"contributions": contributions.document(precision)}
        drawn = partial(contribution_view, result, contributions)
    doc = documents.Result("attn show", drawn, result=result, extra=extra, view=page)
    shown = Attention(doc, result, precision, contributions)
    shown.warnings += () if note is None else (note,)
    return shown


def check_scale(scale: str) -> None:
    """ConfigError unless `scale` is one of the colour scales (attncli.render.style's SCALES)."""
    from attncli.render.style import SCALES  # late: start-up (Rich only where a table is drawn)

    if scale not in SCALES:
        raise ConfigError(f"--scale {scale!r} is not a colour scale; the scales are {', '.join(SCALES)}")


def check_contrib(contrib: str, model: object, weights_only: bool) -> None:
    """ConfigError unless `contrib` is a measure of CONTRIBUTIONS, of a model's run, drawn as its own maps."""
    from attncli.core.measures import CONTRIBUTIONS, computed  # late: start-up (the registry loads with a run)

    if contrib not in CONTRIBUTIONS:
        raise ConfigError(f"--contrib {contrib!r} is not a measure; the measures are {', '.join(CONTRIBUTIONS)}")
    if not computed(contrib):
        return
    if model is None:
        raise ConfigError(f"--contrib {contrib} measures a real model's layer: give --model (a text run has weights)")
    if weights_only:
        raise ConfigError(f"--contrib {contrib} draws its own maps: drop --mean-heads, --query and --no-weights")


@checked
def rollout(
    text: str,
    *,
    model: str | Model,
    layer: int | None = None,
    context: str | None = None,
    part: str | None = None,
    precision: int | None = None,
) -> Output:
    """`attn show --rollout`: the attention rollout (Abnar & Zuidema 2020) of `model` on `text`, token to token
    through layers 0..`layer` (default the last); an encoder–decoder's `part` over the source `context`."""
    from attncli.models.runs import route  # late: start-up (model code only with a model)
    from attncli.render.heads import rollout_view

    rolled = route.rollout(load(model)[0], text, layer, context, part)
    return Output(documents.Rollout("attn show", partial(rollout_view, rolled), rollout=rolled), precision)


@checked
def steps(
    text: str,
    *,
    query: int | str = 0,
    model: str | Model | None = None,
    layer: int | None = None,
    head: int | None = None,
    part: str | None = None,
    generate: Generation | int | None = None,
    chat: bool = False,
    system: str | None = None,
    max_tokens: int = MAX_TOKENS,
    precision: int | None = None,
    limits: Limits | None = None,
    contrib: str = "weights",
    **run: Any,
) -> Attention:
    """`attn steps`: every stage of the run, tokens to outputs, each a table (`query`: the query whose slice a
    per-pair term shows, its index or its token as `show`'s); with `model=` the stages of one layer's attention
    (`layer`, `head`, `part`). `contrib` (a measure of CONTRIBUTIONS other than "weights", with a `model`): the
    table draws that measure's maps of the layer where it draws the weights A, and the document adds them under
    "contributions", as `show`'s."""
    from attncli.core.measures import computed  # late: start-up (the registry of measures: only with a run)

    check_contrib(contrib, model, False)
    context = run.pop("context")
    check_chat(chat, system)
    from attncli.io.formats import JSON_LISTS  # late: start-up (not for import attncli or --help)
    from attncli.render.steps import show_steps

    if model is not None:
        from attncli.models.runs import route  # late: start-up (model code only with a model)

        loaded, name = load(model, chat, system)
        result = route.result(loaded, text, layer, head, context, part, generation_of(generate))
        page = model_page(lambda: result, "attn steps", precision, loaded, name, text, context)
    else:
        from attncli.pipeline.run import run as run_text  # late: start-up (not for import attncli or --help)

        config = run_config(**run)
        result = run_text(text, config, context=context, trace=True, limits=limits_of(limits, max_tokens, JSON_LISTS))
        page = page_of(result, "attn steps", precision)
    row, note = result.tokens.resolve(str(query))
    contributions, extra = None, None
    if computed(contrib):
        from attncli.models.interpret.contrib import of_result  # late: start-up (model code only with a model)

        contributions = of_result(result, contrib)
        extra = {"contributions": contributions.document(precision)}
    table = partial(show_steps, result, query=row, contributions=contributions)
    doc = documents.Steps("attn steps", table, result=result, view=page, extra=extra)
    stepped = Attention(doc, result, precision, contributions)
    stepped.warnings += () if note is None else (note,)
    return stepped


@checked
def view(
    text: str,
    *,
    model: str | Model | None = None,
    layer: int | None = None,
    head: int | None = None,
    part: str | None = None,
    generate: Generation | int | None = None,
    chat: bool = False,
    system: str | None = None,
    lens: bool = False,
    ablate: bool = False,
    target: str | None = None,
    mode: str = "zero",
    patch: bool = False,
    corrupt: str | None = None,
    contrast: str | None = None,
    what: str = "resid",
    noising: bool = False,
    dla: bool = False,
    knockout: bool = False,
    span: str | None = None,
    to: int | None = None,
    window: int | None = None,
    contrib: str = "weights",
    scale: str = "sqrt",
    drop_sink: bool = False,
    max_tokens: int = MAX_TOKENS,
    precision: int | None = None,
    limits: Limits | None = None,
    output: str | None = None,
    **run: Any,
) -> Page:
    """`attn view`: the interactive page of `text` (`.html`) and its data (`.doc`), written to `output` too if
    given; with `model=`, every layer and head of the model, opened at `layer`, `head` (and `part`; without `head`,
    a decoder's page opens on its layer's least sink-bound head and says so: attncli.io.view.opening); a decoder's
    with the logit lens (`lens`) and every head switched off alone (`ablate`, watching `target`, the head's output
    set to `mode`: zero or mean), as `attn lens` and `attn ablate` compute them; activation patching from `text`
    into `corrupt` (`patch`, with `what` and `noising`) and the direct logit attribution (`dla`) of
    m = logit(`target`) − logit(`contrast`), as `attn patch` and `attn dla`; the edges from position `to` to the
    tokens of `span` blocked `window` layers at a time (`knockout`), as `attn knockout`. `contrib` (a measure of
    CONTRIBUTIONS other than "weights", with a `model`): the page adds its Contributions view, that measure's maps
    of every layer (`attn show --contrib`'s numbers); `scale` the colour scale the page opens with and `drop_sink`
    its weights without key 0, each row renormalized (both switchable on the page, which has these controls
    whenever one of the three is given)."""
    check_contrib(contrib, model, False)
    check_scale(scale)
    context = run.pop("context")
    views = dict(lens=lens, ablate=ablate, patch=patch, dla=dla, knockout=knockout)
    check_chat(chat, system)
    causal: dict[str, Any] = dict(patch=patch, corrupt=corrupt, contrast=contrast, what=what, noising=noising, dla=dla)
    causal |= dict(knockout=knockout, span=span, to=to, window=window)
    check_behaviour({**views, **causal, "target": target, "mode": mode}, lambda k: f"{k}=")
    if model is not None:
        from attncli.models.runs import route  # late: start-up (model code only with a model)

        # --context: an encoder–decoder's source, or an encoder's sentence pair
        loaded, name = load(model, chat, system)
        asked = replace(behaviour_of(loaded, lens, ablate, target, mode, **causal), contrib=contrib, scale=scale)
        asked = replace(asked, drop_sink=drop_sink)
        generation = generation_of(generate)
        result = route.result(loaded, text, layer, head, context, part, generation)
        build = page_of(
            result, "attn view", precision, loaded, name, pair=(text, context), behaviour=asked, generate=generation
        )
    else:
        from attncli.io.formats import JSON_LISTS  # late: start-up (not for import attncli or --help)
        from attncli.pipeline.result import one_head
        from attncli.pipeline.run import run as run_text

        limits = limits_of(limits, max_tokens, JSON_LISTS)
        result = run_text(text, run_config(**run), context=context, trace=True, limits=limits)
        if head is not None:
            one_head(result, head)  # checks that the run has it
        from attncli.pipeline.behaviour import Behaviour  # late: start-up (only when a page is written)

        looked = Behaviour(scale=scale, drop_sink=drop_sink)
        build = page_of(result, "attn view", precision, head=head, behaviour=looked)
    shown = Page(build(), result, precision)
    if output is not None:
        shown.save(output)
    return shown


@checked
def compute(
    q: Any,
    k: Any = None,
    v: Any = None,
    *,
    mask: str | None = None,
    no_weights: bool = False,
    dtype: str = "float64",
    params: dict[str, Any] | None = None,
    precision: int | None = None,
    limits: Limits | None = None,
    **run: Any,
) -> Attention:
    """`attn compute`: one head of attention on your own queries q [m, d_q], keys k [n, d_k] (default q) and values
    v [n, d_v] (default k), anything `numpy.asarray` takes; no embedding, no projection. `params`: a learned
    variant's parameters by name (default: seeded by `seed`). `q` may also be the matrices the command line read
    (an `attncli.pipeline.matrices.Given`).

        >>> r = compute([[1, 0], [0, 1]], v=[[10, 0], [0, 10]], variant="dot")
        >>> r.weights.round(3).tolist()
        [[[0.731, 0.269], [0.269, 0.731]]]
    """
    import numpy as np  # late: start-up (the matrices are NumPy's from here on)

    from attncli.api.config import check_variant_options
    from attncli.pipeline import given, matrices
    from attncli.render.show import show as show_table

    variant, rank, features = run["variant"], run["rank"], run["features"]
    check_variant_options([variant], rank, features)
    if isinstance(q, matrices.Given):
        read = q
    else:
        qa = matrices.matrix(np.asarray(q), "q")
        ka = qa if k is None else matrices.matrix(np.asarray(k), "k")
        va = ka if v is None else matrices.matrix(np.asarray(v), "v")
        listed = None if params is None else {name: np.asarray(p).tolist() for name, p in params.items()}
        read = matrices.Given(qa, ka, va, k is not None or v is not None, "arrays", listed)
    if limits is None:  # no tokens here: the memory guard alone, priced for the dtype and weights asked
        limits = replace(limits_of(None, None), weights=not no_weights, dtype=dtype)
    result = given.compute(
        read, variant, mask, run["temperature"], run["seed"], run["d_a"], limits, dtype=dtype, weights=not no_weights,
        rank=rank, features=features,
    )  # fmt: skip
    return Attention(documents.Result("attn compute", partial(show_table, result), result=result), result, precision)
