"""The interactive page of a run (`attn view`, and `--save-html` / `-f html` of show, steps and heads).

A command hands `page_of(...)` to its document as `view`: the page's data is computed only when a page is
written (a model's every layer takes one more forward pass), and its HTML comes from the renderer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from attncli.cli.options import Out
from attncli.io import documents


def page_of(
    result,
    command: str,
    precision: int | None,
    model=None,
    model_dir: str | None = None,
    head: int | None = None,
    pair: tuple[str, str | None] | None = None,
) -> Callable[[], documents.View]:
    """`() -> View` of a result: a text run's heads and steps, or (with `model`) every layer and head of the model,
    and every part of an encoder–decoder's, run on `pair`, the (target, source) the command was given.

    `head` is the head the page opens at (a text run's; a model's comes with its result)."""

    def build() -> documents.View:
        from attncli.io.view import model_view, result_view  # late: start-up (only when a page is written)
        from attncli.render.html_view import page
        from attncli.render.stats import show_view

        if model is not None and model_dir is not None:
            doc = model_view(model, result, model_dir, command, pair)
        else:
            doc = result_view(result, command, precision, head)
        return documents.View(command, partial(show_view, result), doc=doc, page=page)

    return build


def model_page(result_of: Callable, command: str, out: Out, loaded, model: str, text: str, context: str | None):
    """`() -> View`, the interactive page of the model result `result_of()` returns (every layer and head, and an
    encoder–decoder's every part of TEXT over --context; made only when a page is written)."""
    return lambda: page_of(result_of(), command, out.precision, loaded, model, pair=(text, context))()
