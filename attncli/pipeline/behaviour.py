"""What a page is asked to show beyond its weights (`attn view`'s options), one plain object that the model code
computing the page (attncli.models.interpret.page) and the io encoding it (attncli.io.view) both read, and that a
text run's page takes without loading any model code."""

from __future__ import annotations

from dataclasses import dataclass, field

from attncli.core.scales import DEFAULT as DEFAULT_SCALE


@dataclass(frozen=True)
class Behaviour:
    """What a decoder's page adds to its attention: the logit lens (`lens`), every head switched off alone
    (`ablate`, watching `target`, default the model's own next token, with the head's output set to `mode`), and
    the causal answers of `attn patch`, `attn dla` and `attn knockout`: activation patching from the text into
    `corrupt` (`patch`, each activation of `what`, the reverse if `noising`) and the direct logit attribution
    (`dla`), both of m = logit(target) − logit(contrast); the edges from position `to` to the tokens of `span`
    blocked a window of `window` layers at a time (`knockout`). The page opens on `opens`; `known` holds the
    documents the command behind the page has computed already (`attn patch`'s own), used as they are. Any page:
    its colour scale, its weights without the sink, a measure's contribution maps (`looks`)."""

    lens: bool = False
    ablate: bool = False
    target: str | None = None
    mode: str = "zero"
    patch: bool = False
    corrupt: str | None = None
    contrast: str | None = None
    what: str = "resid"
    noising: bool = False
    dla: bool = False
    knockout: bool = False
    span: str | None = None
    to: int | None = None
    window: int | None = None
    opens: str | None = None  # the view the page opens on (a causal command's own page), else its first
    known: dict = field(default_factory=dict)  # a view's name -> the document its command already computed
    contrib: str = (
        "weights"  # --contrib: a measure of CONTRIBUTIONS whose maps the page adds (io/view_looks.py's `looks_view`)
    )
    scale: str = DEFAULT_SCALE  # --scale: the colour scale the page opens with (a key of attncli.render.style's SCALES)
    drop_sink: bool = False  # --drop-sink: the page carries the weights without key 0 too, and opens on them

    @property
    def looks(self) -> bool:
        """Whether the page draws more than the weights on their √ scale: then its colour controls come with it."""
        from attncli.core.measures import computed  # late: start-up (the registry of measures: only with a run)

        return computed(self.contrib) or self.scale != DEFAULT_SCALE or self.drop_sink
