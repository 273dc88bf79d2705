"""`attn view`: the interactive page of a run, one self-contained HTML file (or its data, -f json)."""

from __future__ import annotations

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
from attncli.cli.options import Out, Run, Source, options
from attncli.cli.output import emit
from attncli.cli.text import context_of, text_of, warn
from attncli.errors import ConfigError


@options(source=Source, run=Run, out=Out, skip=("color", "save_svg", "save_html", "width", "theme"))
def view(
    ctx: typer.Context,
    source: Source,
    run: Run,
    out: Out,
    model: ModelDir = None,
    layer: Layer = None,
    head: Head = None,
    part: Part = None,
    generate: Generate = None,
    top_k: SampleTopK = None,
    top_p: SampleTopP = None,
) -> None:
    """Write an interactive page of TEXT: head, model, matrix and steps views, in one self-contained HTML file.

    -o FILE.html (or a redirect) writes the page: inline script and style, no request of any kind, so it opens
    offline from the file in any current browser. -f json writes its data (schema attncli.view/1), the same
    document the page embeds. With --model DIR: every layer and head of the model, opened at --layer, --head;
    an encoder–decoder's (TEXT the target, --context the source) every part, opened at --part (default cross);
    a decoder's --generate N: of TEXT and the N tokens it writes after it."""
    from attncli.cli.hints import limits_for
    from attncli.cli.view import page_of
    from attncli.io.formats import JSON_LISTS
    from attncli.pipeline.result import one_head
    from attncli.pipeline.run import run as run_text

    check_options(ctx, model, keep=("context", *(SAMPLING if generate is not None else ())), both=("head",))
    how = generation(ctx, generate, top_k, top_p, run.temperature, run.seed)
    text = text_of(source)
    if model is not None:
        from attncli.models.encdec import is_seq2seq
        from attncli.models.seq2seq import part_result

        loaded, context = load_model(model), context_of(run.context, source.errors)
        if context is not None and not is_seq2seq(loaded):
            raise ConfigError(
                f"--context with --model: the page runs an encoder–decoder's source and target, and {loaded.name} "
                "is not one; attn show --context shows its sentence pair"
            )
        result = part_result(loaded, text, layer, head, context, part, how)
        build = page_of(result, "attn view", out.precision, loaded, model, pair=(text, context))
    else:
        limits = limits_for(source.max_tokens, "steps", JSON_LISTS)
        result = run_text(text, run.config(), context=context_of(run.context, source.errors), trace=True, limits=limits)
        if head is not None:
            one_head(result, head)  # checks that the run has it
        build = page_of(result, "attn view", out.precision, head=head)
    warn(result.tokens)
    emit(build(), out)
