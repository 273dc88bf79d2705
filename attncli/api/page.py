"""The interactive page of a run (`attn view`, `--save-html` / `-f html` of show, steps and heads, and a result
shown in a notebook).

A result's document carries `page_of(...)` as its `view`: the page's data is computed only when a page is
written or shown (a model's every layer takes one more forward pass), and its HTML comes from the renderer.
In a notebook the page sits in an `<iframe srcdoc>` (`inline`): its script and its ids stay inside its own
frame, so several pages on one notebook never clash, and the frame's sandbox gives it no access to the notebook.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from attncli.errors import ConfigError
from attncli.io import documents
from attncli.pipeline.behaviour import Behaviour

FRAME_HEIGHT = 720  # pixels: the page's views fit at this height from 480 pixels wide up (tests/api: the browser)


def page_of(
    result,
    command: str,
    precision: int | None,
    model=None,
    model_dir: str | None = None,
    head: int | None = None,
    pair: tuple[str, str | None] | None = None,
    behaviour: Behaviour | None = None,
    generate=None,
) -> Callable[[], documents.View]:
    """`() -> View` of a result: a text run's heads and steps, or (with `model`) every layer and head of the model,
    and every part of an encoder–decoder's, run on `pair`, the (target, source) the command was given; a
    decoder's with the lens and the ablation `behaviour` (attncli.pipeline.behaviour.Behaviour) asks for, any page
    with the colour scale, the sinkless weights and the contribution maps it asks for; an encoder–decoder's with the
    target it writes with `generate` (attncli.models.runs.generate.Generation) in every part.

    `head` is the head the page opens at (a text run's; a model's comes with its result)."""

    def build() -> documents.View:
        from attncli.io.view import result_view  # late: start-up (only when a page is written)
        from attncli.render.html_view import page
        from attncli.render.stats import show_view

        if model is not None and model_dir is not None:
            doc = model_document(model, result, model_argument(model_dir), command, pair, behaviour, generate)
        else:
            doc = result_view(result, command, precision, head, behaviour or Behaviour())
        return documents.View(command, partial(show_view, result), doc=doc, page=page)

    return build


def model_document(
    model,
    result,
    model_arg: str,
    command: str,
    pair: tuple[str, str | None] | None = None,
    behaviour: Behaviour | None = None,
    generate=None,
) -> dict:
    """The page's document of a model `result` (schema attncli.view/4): its data computed by the model code
    (attncli.models.interpret.page's `model_page`: every layer and head from one pass, and the views `behaviour`
    asks for), encoded by attncli.io.view's `model_view`; `model_arg` is --model as the page's commands name it."""
    from attncli.io.view import model_view  # late: start-up (only when a model's page is written)
    from attncli.models.interpret.page import model_page

    behaviour = behaviour or Behaviour()
    data = model_page(model, result, pair, behaviour, generate)
    return model_view(data, model, result, model_arg, command, behaviour)


# what each of the page's views asks for: a view's own options, and those it shares (the watched token, m's B)
VIEW_OPTIONS = {
    "ablate": ("mode",),
    "patch": ("corrupt", "what", "noising"),
    "knockout": ("span", "to", "window"),
}
SHARED = {"target": ("ablate", "patch", "dla"), "contrast": ("patch", "dla")}
NEEDED = {"patch": ("corrupt", "target"), "dla": ("target",), "knockout": ("span",)}
DEFAULTS = {"mode": "zero", "what": "resid", "noising": False}


def check_behaviour(given: dict[str, Any], word: Callable[[str], str]) -> None:
    """The page's views' options before any model is loaded: an option of a view not asked for, or a view without
    what it needs, is a ConfigError naming them as `word` writes an option ("--target" or "target=").

    >>> check_behaviour({"patch": True, "corrupt": None, "target": "x"}, lambda k: "--" + k)
    Traceback (most recent call last):
    attncli.errors.ConfigError: --patch needs --corrupt (the corrupt text)
    """

    def set_(name: str) -> bool:  # given, and not its default (by identity: --to 0 is given)
        value = given.get(name)
        return value is not None and value is not False and value != DEFAULTS.get(name)

    for view, options in VIEW_OPTIONS.items():
        stray = [word(o) for o in options if set_(o)]
        if stray and not given.get(view):
            raise ConfigError(
                f"{' and '.join(stray)} {'is' if len(stray) == 1 else 'are'} {word(view)}'s: add {word(view)}"
            )
    for option, views in SHARED.items():
        if set_(option) and not any(given.get(v) for v in views):
            raise ConfigError(f"{word(option)} is for {', '.join(word(v) for v in views)}: add one of them")
    for view, options in NEEDED.items():
        for o in options:
            if given.get(view) and given.get(o) is None:
                what = {"corrupt": "the corrupt text", "target": "the token A of m", "span": "the keys to block"}[o]
                raise ConfigError(f"{word(view)} needs {word(o)} ({what})")


def behaviour_of(model, lens: bool, ablate: bool, target: str | None, mode: str, **causal: Any) -> Behaviour:
    """The lens, the ablation and the causal answers (`causal`: Behaviour's patch, dla, knockout and their
    options) a decoder's page is asked for (attncli.pipeline.behaviour.Behaviour), or the refusal of
    `models.network.unembed.unembedding` when the model has no next-token head to read them from (an encoder:
    ConfigError, as `attn lens` says it; a checkpoint saved without its head: ModelError), ConfigError for an
    encoder–decoder or an unknown `mode` or `what`."""
    if not (lens or ablate or causal.get("patch") or causal.get("dla") or causal.get("knockout")):
        return Behaviour()
    from attncli.models.interpret.ablate import MODES  # late: start-up (model code: a --model run only)
    from attncli.models.interpret.patch import WHAT
    from attncli.models.network.unembed import unembedding
    from attncli.models.runs import route

    if mode not in MODES:
        raise ConfigError(f"the ablation's mode is one of {', '.join(MODES)}, not {mode!r}")
    if causal.get("what", "resid") not in WHAT:
        raise ConfigError(f"--what must be one of {', '.join(WHAT)}, not {causal['what']!r}")
    if route.kind(model).reads_source:
        raise ConfigError(
            f"{model.name} is an encoder–decoder ({model.model_type}): the page's lens, ablation, patch, dla and "
            "knockout are a decoder-only model's (its decoder's lens: attn lens TARGET --context SOURCE)"
        )
    unembedding(model)  # its own refusal, with the exit code `attn lens` has for it (docs/limits.md)
    return Behaviour(lens, ablate, target, mode, **causal)


def model_argument(given: str) -> str:
    """--model in the commands a page shows, as one shell word: as the user named it (a folder relative to where
    the page was made, a model name in the cache), never an absolute path, which would tell whoever gets the page
    where it was made and run nowhere else: "$MODEL" then, the folder to set it to.

    >>> model_argument("models/bert"), model_argument("gpt2"), model_argument("/home/me/m")
    ('models/bert', 'gpt2', '"$MODEL"')
    """
    import os  # late: start-up (shlex: a model's page only)
    import shlex

    return '"$MODEL"' if os.path.isabs(os.path.expanduser(given)) else shlex.quote(given)


def model_page(
    result_of: Callable,
    command: str,
    precision: int | None,
    loaded,
    model: str,
    text: str,
    context: str | None,
    behaviour: Behaviour | None = None,
) -> Callable[[], documents.View]:
    """`() -> View`, the interactive page of the model result `result_of()` returns (every layer and head, and an
    encoder–decoder's every part of TEXT over --context; made only when a page is written), with what `behaviour`
    asks for (`attn show --contrib`, `--scale`, `--drop-sink`: the page's own)."""
    return lambda: page_of(result_of(), command, precision, loaded, model, pair=(text, context), behaviour=behaviour)()


def causal_page(
    command: str, precision: int | None, loaded, model: str, text: str, doc: dict, **asked: Any
) -> Callable[[], documents.View]:
    """`() -> View`: the page of `attn patch`, `attn dla` or `attn knockout` (`command`) on `text`, every layer and
    head of `loaded`, opening on the command's view with its document `doc` (not computed again); `asked`: the
    command's options as attncli.pipeline.behaviour.Behaviour's fields (patch=True, corrupt=..., ...)."""
    view = command.removeprefix("attn ")

    def build() -> documents.View:
        from attncli.models.runs import route  # late: start-up (only when a page is written)

        flags: dict[str, Any] = {view: True}
        behaviour = Behaviour(**flags, **asked, opens=view, known={view: doc})
        result = route.result(loaded, text, None, None, None, None, None)
        return page_of(result, command, precision, loaded, model, pair=(text, None), behaviour=behaviour)()

    return build


def behaviour_page(loaded, name: str, text: str, opens: str, **asked) -> Callable[[], documents.View] | None:
    """`() -> View`: the page of `attn view --model` with the lens or the ablation `asked` for (the fields of
    attncli.pipeline.behaviour.Behaviour), opening on its view `opens` ("lens", "ablation"): what
    `attncli.lens(...)` and `attncli.ablate(...)` show in a notebook. None for a model without that page (an
    encoder–decoder)."""
    from attncli.models.runs import route  # late: start-up (model code only with a model)

    if route.kind(loaded).reads_source:
        return None

    def build() -> documents.View:
        from attncli.models.runs import route  # late: start-up (model code only when the page is shown)

        result = route.result(loaded, text)
        behaviour = Behaviour(**asked, opens=opens)
        return page_of(result, "attn view", None, loaded, name, pair=(text, None), behaviour=behaviour)()

    return build


def inline(page: str, height: int = FRAME_HEIGHT) -> str:
    """The page as one `<iframe>` for a notebook's output: the whole page in `srcdoc` (escaped, so no token of it
    can end the attribute), sandboxed to run its own script only, `height` pixels tall.

    >>> frame = inline('<p title="a&b">x</p>', 300)
    >>> frame.startswith('<iframe srcdoc="&lt;p title=&quot;a&amp;b&quot;&gt;x&lt;/p&gt;"'), 'height:300px' in frame
    (True, True)
    """
    import html  # late: start-up (~10 ms: it loads html.entities, 2,231 names; a notebook's frame only)

    return (
        f'<iframe srcdoc="{html.escape(page, quote=True)}" sandbox="allow-scripts" title="attn view" '
        f'style="width:100%;height:{height}px;border:1px solid #ccc"></iframe>{FIT}'
    )


# The frame's height follows its page: the page posts its height after each drawing (view.js, `fitFrame`), and
# this script, where the notebook runs an output's scripts, sets it (between 240 and 4000 pixels); else the
# frame keeps its `height` and scrolls. Only messages from this frame's own window count.
FIT = (
    "<script>(function (f) { window.addEventListener('message', function (e) {"
    " if (e.source === f.contentWindow && e.data && e.data.attnHeight > 0)"
    " f.style.height = Math.min(4000, Math.max(240, Math.ceil(e.data.attnHeight))) + 'px'; });"
    " })(document.currentScript.previousElementSibling);</script>"
)
