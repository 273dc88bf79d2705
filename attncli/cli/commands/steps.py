"""`attn steps`: every stage of a run, tokens to outputs, each its own table."""

from __future__ import annotations

from typing import Any

import typer

from attncli.cli.model import (
    Chat,
    Contrib,
    Generate,
    GgufFile,
    Head,
    Layer,
    ModelDir,
    Part,
    SampleTopK,
    SampleTopP,
    System,
    check_options,
    generation,
    model_path,
    run_given,
)
from attncli.cli.options import Out, Query, Run, Source, options
from attncli.cli.output import contrib_format, emit, writing
from attncli.cli.text import context_of, text_of, warn


@options(source=Source, run=Run, out=Out, writes=("Steps",))
def steps(
    ctx: typer.Context,
    source: Source,
    run: dict[str, Any],
    out: Out,
    query: Query = "0",
    model: ModelDir = None,
    gguf_file: GgufFile = None,
    chat: Chat = False,
    system: System = None,
    layer: Layer = None,
    head: Head = None,
    part: Part = None,
    generate: Generate = None,
    top_k: SampleTopK = None,
    top_p: SampleTopP = None,
    contrib: Contrib = "weights",
) -> None:
    """Walk through every stage, tokens to outputs.

    Each stage of the pipeline is its own table, with its formula and shape in the title:
    tokens, X, Q, K, V per head, the scores, the mask, A = softmax(S) with its row sums,
    O per head and the merged O. -f json (or npz) gives every array, exactly.
    With --model DIR: the stages of one layer's attention in a real model (--layer, --head); an encoder–decoder's
    --part cross (default) takes Q from the decoder (TEXT, the target) and K, V from the encoder (--context);
    a decoder's --generate N: of TEXT and the N tokens it writes after it (an encoder–decoder's: of the target it
    writes from --context SOURCE after TEXT); --contrib: the layer's norm, alti or value-zeroing maps drawn where
    the weights A are (-f json adds them under "contributions").
    """
    from attncli import api  # late: start-up (not for --help)
    from attncli.api.options import computed  # late: start-up (the registry of measures: only with a run)
    from attncli.cli.hints import limits_for
    from attncli.io import documents

    check_options(ctx, model)
    if computed(contrib):
        contrib_format(contrib, out, documents.Steps)
    how = generation(ctx, generate, top_k, top_p, run["temperature"], run["seed"])
    model = model_path(model, gguf_file)
    text = text_of(source)
    context = context_of(run["context"], source.errors)
    limits = limits_for(source.max_tokens, "steps", writing(documents.Steps, out))
    chosen = {**run_given(ctx, run, how is not None), "context": context, "query": query}
    chosen |= {"layer": layer, "head": head, "part": part}
    if how is not None:  # --temperature and --seed are the sampling's here, not a text run's (run_given)
        chosen |= {"generate": how}
    stepped = api.steps(
        text, **chosen, model=model, chat=chat, system=system, contrib=contrib, precision=out.precision, limits=limits
    )
    warn(stepped)
    emit(stepped.document, out)
