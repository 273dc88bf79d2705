"""`attn tokens`: the tokens of a text, their ids and character offsets."""

from __future__ import annotations

import typer

from attncli.cli.model import Chat, GgufFile, ModelDir, System, check_options, model_path, written
from attncli.cli.options import Out, Source, Tokenizer, options
from attncli.cli.output import emit
from attncli.cli.text import text_of, warn


@options(source=Source, out=Out, writes=("Records",))
def tokens(
    ctx: typer.Context,
    source: Source,
    out: Out,
    tokenizer: Tokenizer = "word",
    model: ModelDir = None,
    gguf_file: GgufFile = None,
    chat: Chat = False,
    system: System = None,
) -> None:
    """List the tokens, ids and character offsets.

    Shows each token (escaped), its id, start and end, the text at those offsets, and
    whether the offsets give the input back; -f json|jsonl|csv for tools. --model DIR: the model's tokenizer.
    """
    from attncli import api  # late: start-up (not for --help)

    check_options(ctx, model)
    model = model_path(model, gguf_file)
    chosen = written(ctx, {"tokenizer": tokenizer, "max_tokens": source.max_tokens})
    listed = api.tokens(text_of(source), **chosen, model=model, chat=chat, system=system)
    warn(listed)
    emit(listed.document, out)
