"""`attn lens`: the logit lens of a decoder (or an encoder–decoder's decoder), its next-token prediction after every
layer at every position."""

from __future__ import annotations

from typing import Annotated

from attncli.cli.model import Chat, System, model_value
from attncli.cli.options import File, Out, Text, options, row
from attncli.cli.output import emit
from attncli.cli.text import context_of, given_text

ModelRequired = Annotated[str, row("lens_model", callback=model_value)]
LensContext = Annotated[str | None, row("lens_context")]
TopK = Annotated[int, row("top_k")]


@options(out=Out, writes=("Records",))
def lens(
    model: ModelRequired,
    out: Out,
    text: Text = None,
    file: File = None,
    top_k: TopK = 5,
    context: LensContext = None,
    chat: Chat = False,
    system: System = None,
) -> None:
    """The logit lens: what a decoder would predict next after each layer, layers × positions.

    Every layer's residual stream (the embeddings, then each block's output) through the model's final norm and
    unembedding: the most probable next token at each position and its probability; the last layer is the model's
    own prediction. -f json|jsonl|csv: rows of layer, position and the --top-k tokens, ids and probabilities.
    An encoder–decoder (--context SOURCE): its decoder's layers over TEXT, the target, with teacher forcing."""
    from attncli import api  # late: start-up (not for --help)

    source = context_of(context, "strict")
    doc = api.lens(
        given_text(text, file),
        model=model,
        top_k=top_k,
        context=source,
        chat=chat,
        system=system,
        precision=out.precision,
    )
    emit(doc.document, out)
