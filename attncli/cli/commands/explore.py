"""`attn explore`: the attention of a text, moved through with the keyboard in a full-screen app."""

from __future__ import annotations

import sys
from typing import Any

import typer

from attncli.cli.model import (
    Contrib,
    DropSink,
    Generate,
    GgufFile,
    Head,
    Layer,
    ModelDir,
    Part,
    SampleTopK,
    SampleTopP,
    Scale,
    check_options,
    generation,
    load_model,
)
from attncli.cli.options import Dtype, MeanHeads, Out, QueryRow, Run, Source, options, run_config
from attncli.cli.text import context_of, say, text_of, warn
from attncli.errors import ConfigError


@options(source=Source, run=Run, out=Out, skip=("fmt", "output", "save_svg", "save_html", "width", "theme"))
def explore(
    ctx: typer.Context,
    source: Source,
    run: dict[str, Any],
    out: Out,
    model: ModelDir = None,
    gguf_file: GgufFile = None,
    layer: Layer = None,
    head: Head = None,
    dtype: Dtype = "float64",
    mean_heads: MeanHeads = False,
    query: QueryRow = None,
    part: Part = None,
    generate: Generate = None,
    top_k: SampleTopK = None,
    top_p: SampleTopP = None,
    contrib: Contrib = "weights",
    scale: Scale = "sqrt",
    drop_sink: DropSink = False,
) -> None:
    """Move through the attention of TEXT with the keyboard: a full-screen app (? lists the keys, q quits).

    The matrix of `attn show` with a cursor (arrow keys), the focused query's row as bars with the formula of
    its weights; [ ] head, { } layer (--model), c part (an encoder–decoder: cross, decoder, encoder), v variant,
    m mask, p positional, t tokenizer, a mean over heads, h heads overview, e edit the text, s save SVG, j write
    JSON; a decoder's n b step through the tokens --generate wrote (w: the whole matrix), l its logit lens, x its
    heads switched off; o what the matrix measures (--model: weights, norm, ALTI, value zeroing, as --contrib), z
    its colour scale (as --scale), k key 0 dropped (as --drop-sink). The options are `attn show`'s (--generate N: a
    decoder's text and the N tokens it writes after it, or an encoder–decoder's target written from --context
    SOURCE).
    """
    from attncli.api.runs import check_contrib, check_scale  # late: start-up (not for --help)
    from attncli.cli.hints import limits_for
    from attncli.render.explore.state import Explorer

    check_options(ctx, model)
    check_contrib(contrib, model, False)
    check_scale(scale)
    how = generation(ctx, generate, top_k, top_p, run["temperature"], run["seed"])
    context, limits = context_of(run["context"], source.errors), limits_for(source.max_tokens, "show")
    loaded = None if model is None else load_model(model, gguf_file)
    explorer = Explorer(
        text_of(source),
        run_config(run, dtype=dtype),
        context,
        limits,
        loaded,
        layer,
        mean=mean_heads,
        part=part,
        generate=how,
        measure=contrib,
        scale=scale,
        drop_sink=drop_sink,
    )
    explorer.compute()  # a bad option or text fails here, before the screen is taken
    chosen = None if query is None else explorer.result.tokens.resolve(query)
    explorer.pick(head, None if chosen is None else chosen[0])
    warn(explorer.result.tokens)
    if chosen is not None and chosen[1] is not None:
        say(chosen[1])
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError(
            "attn explore is a full-screen app: it needs a terminal on stdin and stdout (attn show prints the tables)"
        )
    from attncli.render.explore.app import run_explorer  # late: start-up (Textual for this command only)

    raise typer.Exit(run_explorer(explorer, out.precision, out.color))
