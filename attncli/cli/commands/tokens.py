"""`attn tokens`: the tokens of a text, their ids and character offsets."""

from __future__ import annotations

from functools import partial

import typer

from attncli.cli.model import ModelDir, check_options, load_model
from attncli.cli.options import Out, Source, Tokenizer, options
from attncli.cli.output import emit
from attncli.cli.text import text_of, warn
from attncli.errors import DataError


@options(source=Source, out=Out)
def tokens(ctx: typer.Context, source: Source, out: Out, tokenizer: Tokenizer = "word", model: ModelDir = None) -> None:
    """List the tokens, ids and character offsets.

    Shows each token (escaped), its id, start and end, the text at those offsets, and
    whether the offsets give the input back; -f json|jsonl|csv for tools. --model DIR: the model's tokenizer.
    """
    from attncli.cli.hints import limits_for  # late: start-up (not for --help)
    from attncli.io import documents
    from attncli.pipeline.compare import tokens_document
    from attncli.pipeline.tokenize import TooManyTokens, tokenize
    from attncli.render.steps import tokens_view

    check_options(ctx, model)
    text = text_of(source)
    if not text:
        raise DataError("empty text: nothing to tokenize")
    limits_for(source.max_tokens, "tokens")  # checks --max-tokens itself
    try:
        if model is None:
            toks = tokenize(text, tokenizer, source.max_tokens)
        else:
            from attncli.models.run import model_tokens  # late: start-up (model code only with --model)

            toks = model_tokens(load_model(model), text)
    except TooManyTokens as e:
        raise DataError(f"{e}: attn tokens lists every one; give a shorter text, or raise --max-tokens") from None
    warn(toks)
    emit(documents.Records("attn tokens", partial(tokens_view, text, toks), doc=tokens_document(text, toks)), out)
