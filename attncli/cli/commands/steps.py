"""`attn steps`: every stage of a run, tokens to outputs, each its own table."""

from __future__ import annotations

from functools import partial

import typer

from attncli.cli.model import (
    SAMPLING,
    Generate,
    Head,
    Layer,
    ModelDir,
    Part,
    SampleTopK,
    SampleTopP,
    check_options,
    generation,
    load_model,
)
from attncli.cli.options import Out, Query, Run, Source, options
from attncli.cli.output import emit, writing
from attncli.cli.text import context_of, text_of, warn
from attncli.cli.view import model_page


@options(source=Source, run=Run, out=Out)
def steps(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    query: Query = 0,
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
    part: Part = None,
    generate: Generate = None,
    top_k: SampleTopK = None,
    top_p: SampleTopP = None,
) -> None:
    """Walk through every stage, tokens to outputs.

    Each stage of the pipeline is its own table, with its formula and shape in the title:
    tokens, X, Q, K, V per head, the scores, the mask, A = softmax(S) with its row sums,
    O per head and the merged O. -f json (or npz) gives every array, exactly.
    With --model DIR: the stages of one layer's attention in a real model (--layer, --head); an encoder–decoder's
    --part cross (default) takes Q from the decoder (TEXT, the target) and K, V from the encoder (--context);
    a decoder's --generate N: of TEXT and the N tokens it writes after it.
    """
    from attncli.cli.hints import limits_for
    from attncli.cli.view import page_of
    from attncli.io import documents
    from attncli.pipeline.run import run as run_text
    from attncli.pipeline.steps import check_query
    from attncli.render.steps import show_steps

    check_options(ctx, model, keep=("query", "context", *(SAMPLING if generate is not None else ())))
    how = generation(ctx, generate, top_k, top_p, run.temperature, run.seed)
    text = text_of(source)
    context = context_of(run.context, source.errors)
    if model is not None:
        from attncli.models.seq2seq import part_result

        loaded = load_model(model)
        result = part_result(loaded, text, layer, head, context, part, how)
        view = model_page(lambda: result, "attn steps", out, loaded, model, text, context)
    else:
        config = run.config()
        limits = limits_for(source.max_tokens, "steps", writing(documents.Steps, out))
        result = run_text(text, config, context=context, trace=True, limits=limits)
        view = page_of(result, "attn steps", out.precision)
    check_query(result, query)
    warn(result.tokens)
    table = partial(show_steps, result, query=query)
    emit(documents.Steps("attn steps", table, result=result, view=view), out)
