"""`attn compare`: tokenizers and variants (and a model's layer) side by side."""

from __future__ import annotations

from dataclasses import asdict

import typer

from attncli.cli.model import GgufFile, Head, Layer, ModelDir, check_options, model_path
from attncli.cli.options import Out, Run, Source, Tokenizers, VariantNames, options
from attncli.cli.output import emit
from attncli.cli.text import text_of, warn


@options(source=Source, run=Run, out=Out, skip=("tokenizer", "variant", "context"), writes=("Records",))
def compare(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    tokenizers: Tokenizers = "char,word,bpe",
    variants: VariantNames = "scaled",
    model: ModelDir = None,
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
    --model DIR adds a real model's layer (--layer, --head) as one more column.
    """
    from attncli import api
    from attncli.api.config import HEAD_STATISTICS
    from attncli.cli.hints import limits_for

    check_options(ctx, model, every=True)
    model = model_path(model, gguf_file)
    text = text_of(source)
    limits = limits_for(source.max_tokens, "compare", HEAD_STATISTICS)
    chosen = {k: v for k, v in asdict(run).items() if k not in ("tokenizer", "variant", "context")}
    compared = api.compare(
        text, tokenizers=tokenizers, variants=variants, **chosen, model=model, layer=layer, head=head, limits=limits
    )
    warn(compared)
    emit(compared.document, out)
