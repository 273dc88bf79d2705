"""`attn view`: the interactive page of a run, one self-contained HTML file (or its data, -f json)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from attncli.cli.commands.knockout import To, Window
from attncli.cli.commands.patch import Noising, What
from attncli.cli.model import (
    Ablate,
    Chat,
    Contrast,
    Contrib,
    Corrupt,
    DropSink,
    Generate,
    GgufFile,
    Head,
    Layer,
    Lens,
    Mode,
    ModelDir,
    Part,
    SampleTopK,
    SampleTopP,
    Scale,
    Span,
    System,
    Target,
    check_options,
    generation,
    model_path,
    run_given,
)
from attncli.cli.options import Out, Run, Source, options, row
from attncli.cli.output import check_writes, emit
from attncli.cli.text import context_of, text_of, warn

PatchView = Annotated[bool, row("patch")]
DlaView = Annotated[bool, row("dla")]
KnockoutView = Annotated[bool, row("knockout")]


@options(source=Source, run=Run, out=Out, skip=("color", "save_svg", "save_html", "width", "theme"), writes=("View",))
def view(
    ctx: typer.Context,
    source: Source,
    run: dict[str, Any],
    out: Out,
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
    lens: Lens = False,
    ablate: Ablate = False,
    target: Target = None,
    mode: Mode = "zero",
    patch: PatchView = False,
    corrupt: Corrupt = None,
    contrast: Contrast = None,
    what: What = "resid",
    noising: Noising = False,
    dla: DlaView = False,
    knockout: KnockoutView = False,
    span: Span = None,
    to: To = None,
    window: Window = None,
    contrib: Contrib = "weights",
    scale: Scale = "sqrt",
    drop_sink: DropSink = False,
) -> None:
    """Write an interactive page of TEXT: head, model, matrix and steps views, in one self-contained HTML file.

    -o FILE.html (or a redirect) writes the page: inline script and style, no request of any kind, so it opens
    offline from the file in any current browser. -f json writes its data (schema attncli.view/4), the same
    document the page embeds. With --model DIR: every layer and head of the model, opened at --layer, --head
    (an encoder's sentence pair with --context, the boundary drawn), and the steps of that layer (without --head,
    a decoder's page opens on the layer's head of least weight on token 0, the sink, and says so); an
    encoder–decoder's (TEXT the target, --context the source) every part, opened at --part (default cross);
    a decoder's --generate N: of TEXT and the N tokens it writes after it, which the page steps through (an
    encoder–decoder's: of the target it writes from --context SOURCE after TEXT). A decoder's --lens adds the
    logit lens view (as attn lens), --ablate the ablation view (as attn ablate, every head; --target, --mode),
    --patch the patching view (as attn patch), --dla the direct logit attribution view (as attn dla), --knockout
    the knockout view (as attn knockout). --contrib M adds the Contributions view, the maps of measure M of every
    layer (as attn show --contrib); --scale and --drop-sink open the page on that colour scale and on the weights
    without key 0, and give it the controls that switch them."""
    from attncli import api  # late: start-up (not for --help)
    from attncli.api.page import check_behaviour
    from attncli.cli.hints import limits_for
    from attncli.io import documents
    from attncli.io.formats import JSON_LISTS

    causal: dict[str, Any] = {
        "patch": patch,
        "corrupt": corrupt,
        "contrast": contrast,
        "what": what,
        "noising": noising,
        "dla": dla,
    }
    causal |= {"knockout": knockout, "span": span, "to": to, "window": window}
    check_options(ctx, model)
    flags = {"span": "from"}  # an option's keyword -> its name on the command line
    check_behaviour(
        {**causal, "lens": lens, "ablate": ablate, "target": target, "mode": mode}, lambda k: f"--{flags.get(k, k)}"
    )
    how = generation(ctx, generate, top_k, top_p, run["temperature"], run["seed"])
    check_writes(documents.View, "attn view", out)  # before the run: a page is HTML (or its data, JSON)
    model = model_path(model, gguf_file)
    text = text_of(source)
    context = context_of(run["context"], source.errors)
    limits = limits_for(source.max_tokens, "steps", JSON_LISTS)
    chosen = {**run_given(ctx, run, how is not None), "context": context, "layer": layer, "head": head, "part": part}
    chosen |= {"lens": lens, "ablate": ablate, "target": target, "mode": mode, **causal}
    chosen |= {"contrib": contrib, "scale": scale, "drop_sink": drop_sink}
    if how is not None:  # --temperature and --seed are the sampling's here, not a text run's (run_given)
        chosen |= {"generate": how}
    page = api.view(text, **chosen, model=model, chat=chat, system=system, precision=out.precision, limits=limits)
    warn(page)
    emit(page.document, out)
