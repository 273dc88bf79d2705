"""`attn compare`: tokenizers and variants (and a model's layer) side by side."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import typer

from attncli.cli.model import GgufFile, Head, Layer, ModelDirs, check_options, given, model_path, run_given
from attncli.cli.options import Out, Run, Source, Tokenizers, VariantNames, options
from attncli.cli.output import emit
from attncli.cli.text import text_of, warn
from attncli.errors import ConfigError


@options(source=Source, run=Run, out=Out, writes=("Records",))
def compare(
    ctx: typer.Context,
    source: Source,
    run: dict[str, Any],
    out: Out,
    tokenizers: Tokenizers = None,
    variants: VariantNames = "scaled",
    model: ModelDirs = None,
    gguf_file: GgufFile = None,
    layer: Layer = None,
    head: Head = None,
) -> None:
    """Compare tokenizers and variants side by side.

    One summary table (tokens, vocabulary, unknown or byte tokens, n², multiply-adds,
    weight bytes, row entropy, row maximum), then the heatmaps of head 0, side by side
    when the terminal is wide enough. -f json|jsonl|csv gives the summary rows.
    An approximation (linformer, performer) adds its error against exact scaled attention on the
    same inputs: the largest |ΔA| and the mean KL divergence per row.
    --model DIR adds a real model's layer (--layer, --head) as one more column; --model A --model B ... puts
    the models' own tokenizers side by side (and char, word, bpe or a tokenizer.json with --tokenizers).
    """
    from attncli import api  # late: start-up (not for --help)
    from attncli.api.config import HEAD_STATISTICS
    from attncli.cli.hints import limits_for

    models = model or []
    if len(models) > 1:  # their tokenizers: the options of a run have nothing to shape
        fine = {"model", "tokenizers", *(f.name for group in (Source, Out) for f in fields(group))}
        ran = [p for p in given(ctx) if p.name not in fine]
        if ran:
            raise ConfigError(
                "several --model compare their tokenizers, not attention: drop "
                + ", ".join("/".join(p.opts) for p in ran)
            )
    check_options(ctx, models[0] if models else None)
    model = [model_path(m, gguf_file) or m for m in models] if models else None
    text = text_of(source)
    limits = limits_for(source.max_tokens, "compare", HEAD_STATISTICS)
    chosen = run_given(ctx, run, False)
    compared = api.compare(
        text, tokenizers=tokenizers, variants=variants, **chosen, model=model, layer=layer, head=head, limits=limits
    )
    warn(compared)
    emit(compared.document, out)
