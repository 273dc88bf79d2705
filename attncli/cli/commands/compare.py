"""`attn compare`: tokenizers and variants (and a model's layer) side by side."""

from __future__ import annotations

from functools import partial

import typer

from attncli.cli.model import Head, Layer, ModelDir, check_options, load_model
from attncli.cli.options import Out, Run, Source, Tokenizers, VariantNames, options
from attncli.cli.output import emit
from attncli.cli.text import text_of, warn


@options(source=Source, run=Run, out=Out, skip=("tokenizer", "variant", "context"))
def compare(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    tokenizers: Tokenizers = "char,word,bpe",
    variants: VariantNames = "scaled",
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
) -> None:
    """Compare tokenizers and variants side by side.

    One summary table (tokens, vocabulary, unknown or byte tokens, n², multiply-adds,
    weight bytes, row entropy, row maximum), then the heatmaps of head 0, side by side
    when the terminal is wide enough. -f json|jsonl|csv gives the summary rows.
    An approximation (linformer, performer) adds its error against exact scaled attention on the
    same inputs: the largest |ΔA| and the mean KL divergence per row.
    --model DIR adds a real model's layer (--layer, --head) as one more column.
    """
    from attncli.cli.hints import HEAD_STATISTICS, limits_for  # late: start-up (not for --help)
    from attncli.io import documents
    from attncli.pipeline.compare import compare_document, compare_runs, split_names
    from attncli.render.compare import compare_view

    check_options(ctx, model, every=True)
    text = text_of(source)
    names = split_names(variants, "variants")
    config = run.config(variants=names)
    limits = limits_for(source.max_tokens, "compare", HEAD_STATISTICS)
    results = compare_runs(text, split_names(tokenizers, "tokenizers"), names, config, limits)
    for r in results:
        warn(r.tokens)
    if model is not None:
        from attncli.models.run import compare_with_model, model_result  # late: start-up (model code only with --model)

        results.append(model_result(load_model(model), text, layer, head))
        doc = compare_with_model(text, results[:-1], results[-1])
    else:
        doc = compare_document(text, results)
    emit(documents.Records("attn compare", partial(compare_view, doc["rows"], results), doc=doc), out)
