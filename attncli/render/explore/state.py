"""What `attn explore` looks at, and the switches its keys make: no screen here, only the run and its cursor.

An `Explorer` holds one run (a text run through the pipeline, or a layer of a real model) and which of its
heads and cells is in focus. Every switch recomputes through the same code `attn show` runs, and changes
the state only when the new run succeeds: an option that does not go with the others (a variant that takes
no mask, an empty text) leaves the view as it was and says why.

>>> from attncli.pipeline.config import RunConfig
>>> e = Explorer("time flies like an arrow", RunConfig(heads=2))
>>> e.compute(); e.move(1, 3); e.switch_head(1); e.focus()
(1, 1, 3)
>>> e.cycle("variant"), e.result.config.variant
('variant: cosine', 'cosine')
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attncli.core.masks import MASKS
from attncli.core.variants import VARIANTS
from attncli.errors import AttnError, ConfigError
from attncli.pipeline.config import RunConfig
from attncli.pipeline.embed import POSITIONAL
from attncli.pipeline.heads import mean_of_heads, text_heads_document
from attncli.pipeline.limits import Limits
from attncli.pipeline.result import AttentionResult
from attncli.pipeline.tokenize import TOKENIZERS, Tokens

LENS_K = 5  # the lens view's most probable next tokens of each cell
MASK_ARG = 2  # the W of window:W and the K of topk:K that the `m` key offers (--mask sets any other)


def mask_choices() -> list[tuple[str, ...]]:
    """No mask, then one of each kind in MASKS: `(), ('causal',), ('window:2',), ('topk:2',)`."""
    return [(), *((k.name if not k.needs_arg else f"{k.name}:{max(k.min_arg, MASK_ARG)}",) for k in MASKS.values())]


# The text-run options a key cycles through: the RunConfig field, what it is, and its choices (the registries' keys).
SWITCHES: dict[str, tuple[str, Callable[[], list[Any]]]] = {
    "variant": ("score function", lambda: list(VARIANTS)),
    "mask": ("masks", mask_choices),
    "positional": ("positional encoding", lambda: list(POSITIONAL)),
    "tokenizer": ("tokenizer", lambda: list(TOKENIZERS)),
}


def shown_value(value: Any) -> str:
    """A switch's value as the status line says it: a mask tuple as `causal,window:2`, no mask as `none`."""
    if isinstance(value, tuple):
        return ",".join(value) or "none"
    return str(value)


@dataclass
class Explorer:
    """One run and its focus: head `head` (or the `mean` of the heads), query row `query`, key column `key`.

    `model` (a loaded `attncli.models.Model`) makes it a model run at `layer` (None: the last), of `part` of an
    encoder–decoder (None: cross with a `context`, the source; `text` is the target); otherwise a text run of
    `config` (with `context`: cross-attention) within `limits`. `generate`: a decoder model's every run is of
    the text and the tokens greedy decoding writes after it (deterministic: the same tokens at every layer).
    """

    text: str
    config: RunConfig
    context: str | None = None
    limits: Limits | None = None
    model: Any = None
    layer: int | None = None
    head: int = 0
    mean: bool = False
    query: int = 0
    key: int = 0
    part: str | None = None
    generate: Any = (
        None  # a decoder's --generate (attncli.models.runs.generate.Generation): every run is of the text and
    )
    # the tokens it writes after it
    step: int | None = None  # of a generation: the written token in focus (0: the first), None: the whole matrix
    measure: str = "weights"  # --contrib: what the matrix draws, a key of CONTRIBUTIONS (`o` cycles)
    scale: str = "sqrt"  # --scale: how the matrix's shades are placed, a key of attncli.render.style's SCALES (`z`)
    drop_sink: bool = False  # --drop-sink: the weights drawn without key 0, each row renormalized (`k`)
    result: AttentionResult = field(init=False)
    cache: dict[str, tuple[tuple[int, ...], Any]] = field(default_factory=dict, init=False, repr=False)
    # the lens, the ablation and the written tokens' probabilities, each with the token ids it is of (an edited
    # text has other ids: computed again); each computed by one thread at a time (a screen's, or the app's)
    locks: dict[str, threading.Lock] = field(
        default_factory=lambda: {what: threading.Lock() for what in ("written", "lens", "ablate", "dla", "contrib")},
        init=False,
        repr=False,
    )

    # ---- computing ----------------------------------------------------------------------------------

    def _run(self, text: str, config: RunConfig, layer: int | None, part: str | None) -> AttentionResult:
        if self.model is not None:
            from attncli.models.runs import route  # late: start-up (model code only with --model)

            return route.result(self.model, text, layer, None, self.context, part, self.generate)
        from attncli.pipeline.run import run  # late: start-up (the pipeline loads with the first text)

        return run(text, config, context=self.context, limits=self.limits)

    def compute(
        self,
        text: str | None = None,
        config: RunConfig | None = None,
        layer: int | None = None,
        part: str | None = None,
    ) -> None:
        """Run again with a new text, config, layer or part; AttnError leaves everything as it was."""
        text = self.text if text is None else text
        config = self.config if config is None else config
        layer = self.layer if layer is None else layer
        part = self.part if part is None else part
        result = self._run(text, config, layer, part)
        if result.weights is None:
            raise AttnError("attn explore shows the weights: run without --no-weights")
        self.text, self.config, self.result = text, config, result
        if self.model is not None:
            from attncli.models.runs.route import check_part  # late: start-up (model code only with --model)

            self.layer = result.source.layer  # type: ignore[attr-defined]  # ModelLayer: the layer it resolved
            self.part = check_part(self.model, part, self.context)
        n_head, n_q, n_k = result.weights.shape
        self.head = min(self.head, n_head - 1)
        self.query, self.key = min(self.query, n_q - 1), min(self.key, n_k - 1)
        if self.step is not None:  # the same step of the new run, or its last (an edit may write fewer)
            self.step = None if self.written() == 0 else min(self.step, self.written() - 1)
            self._to_step()

    @property
    def weights(self) -> np.ndarray:  # -> [h, m, n]
        return self.result.attention()[1]

    @property
    def n_head(self) -> int:
        return self.weights.shape[0]

    @property
    def n_layer(self) -> int:
        """The layers of the run: a text run's one, a model's (an encoder–decoder's part's)."""
        if self.model is None:
            return 1
        from attncli.models.runs.route import part_layers  # late: start-up (model code only with --model)

        return part_layers(self.model, self.part or "encoder")

    def parts(self) -> tuple[str, ...]:
        """The parts this run can switch between: an encoder–decoder's (those it has the source for), else none."""
        if self.model is None:
            return ()
        from attncli.core.parts import PARTS  # late: start-up (model code only with --model)
        from attncli.models.runs.route import kind  # late: start-up (model code only with --model)

        k = kind(self.model)
        return tuple(p for p in k.parts if k.reads_source and (self.context is not None or not PARTS[p].needs_source))

    def focus(self) -> tuple[int, int, int]:
        """(head, query, key) of the cell in focus."""
        return self.head, self.query, self.key

    def pick(self, head: int | None, query: int | None) -> None:
        """The head and query row to start on (--head, --query); ConfigError for a head the run has not."""
        if head is not None:
            if not -self.n_head <= head < self.n_head:  # negative counts from the end, as with --model
                raise ConfigError(
                    f"--head {head} is out of range: the run has {self.n_head} head{'s' * (self.n_head > 1)}, "
                    f"0..{self.n_head - 1} (negative counts from the end)"
                )
            self.head = head % self.n_head
        if query is not None:
            self.query = query

    # ---- the keys -------------------------------------------------------------------------------------

    def move(self, d_query: int, d_key: int) -> None:
        """The cursor one step (or more) over the queries and keys, stopping at the edges; stepping through the
        written tokens, up and down go to the previous and next one."""
        if self.step is not None and d_query:
            self.step_through(d_query)
        elif d_query:
            self.query = max(0, min(self.weights.shape[1] - 1, self.query + d_query))
        self.key = max(0, min(self.seen() - 1, self.key + d_key))

    def switch_head(self, step: int) -> str | None:
        """The next (step 1) or previous (-1) head, round; a message when there is only one."""
        if self.n_head == 1:
            return "one head: --heads N runs more" if self.model is None else "this layer has one head"
        self.mean = False
        self.head = (self.head + step) % self.n_head
        return None

    def switch_layer(self, step: int) -> str | None:
        """The next or previous layer of the model, round; a message for a text run (it has one layer)."""
        if self.model is None:
            return "a text run has one layer: --model DIR explores a real model's layers"
        assert self.layer is not None
        self.compute(layer=(self.layer + step) % self.n_layer)
        return None

    def switch_part(self, step: int) -> str | None:
        """The next or previous part of an encoder–decoder (cross, decoder, encoder), round, at the same layer
        (or the part's last, when it has fewer); a message when the run has one part."""
        parts = self.parts()
        if len(parts) < 2:
            if self.model is None:
                return "a text run has one attention: --model DIR of an encoder–decoder (BART, T5, Marian) has parts"
            if parts:
                return "only the encoder's part: --context SOURCE runs TEXT through the decoder (cross, decoder)"
            return f"{self.model.name} has one part, its own self-attention (parts: an encoder–decoder's)"
        from attncli.models.runs.route import part_layers  # late: start-up (model code only with --model)

        assert self.layer is not None and self.part is not None
        part = parts[(parts.index(self.part) + step) % len(parts)]
        self.compute(layer=min(self.layer, part_layers(self.model, part) - 1), part=part)
        return f"part: {part}"

    def toggle_mean(self) -> str | None:
        if self.n_head == 1:
            return "one head: its mean is itself (--heads N runs more)"
        self.mean = not self.mean
        return None

    def cycle(self, name: str) -> str:
        """The next choice of SWITCHES[name] that runs; says which it is, and which were skipped and why."""
        if self.model is not None:
            return f"--model uses the model's own {SWITCHES[name][0]}: run without --model to switch it"
        current = getattr(self.config, name)
        choices = SWITCHES[name][1]()
        if current not in choices:  # a tokenizer.json, a window:5 from the command line: first in the round
            choices.insert(0, current)
        start = choices.index(current)
        skipped = []
        for step in range(1, len(choices)):
            value = choices[(start + step) % len(choices)]
            try:
                self.compute(config=replace(self.config, **{name: value}))
            except AttnError as e:
                skipped.append(f"{shown_value(value)} ({e})")
                continue
            return f"{name}: {shown_value(value)}" + (f"; skipped {'; '.join(skipped)}" if skipped else "")
        return f"{name}: no other choice runs with these options" + (f": {'; '.join(skipped)}" if skipped else "")

    # ---- what the matrix draws: the weights or a measure's maps, on a colour scale, with or without the sink -----

    def switch_measure(self) -> str:
        """The next measure of CONTRIBUTIONS (weights, norm, ALTI, value zeroing, round) for the layer in view: its
        maps come from `maps` (computed in a thread by the app when they are not yet: `maps_ready`)."""
        from attncli.core.measures import CONTRIBUTIONS, computed  # late: start-up (the registry loads with the key)

        if self.model is None:
            return "a text run has its weights only: --model DIR measures a real model's layer (norm, ALTI, ...)"
        names = list(CONTRIBUTIONS)
        self.measure = names[(names.index(self.measure) + 1) % len(names)]
        return f"measure: {CONTRIBUTIONS[self.measure].title}" + (
            "" if not computed(self.measure) or self.maps_ready() else " (computing …)"
        )

    def switch_scale(self) -> str:
        """The next colour scale of SCALES (√, log, linear, round): the numbers stay the same."""
        from attncli.render.style import SCALES  # late: start-up (Rich's colours: with the key)

        names = list(SCALES)
        self.scale = names[(names.index(self.scale) + 1) % len(names)]
        return f"colour: {SCALES[self.scale].words}"

    def toggle_sink(self) -> str:
        """The weights without key 0 (each row renormalized), or back to the weights as run."""
        self.drop_sink = not self.drop_sink
        return "key 0 dropped, each row renormalized" if self.drop_sink else "key 0 back: the weights as run"

    def maps_key(self) -> tuple:
        return (self.result.tokens.ids, self.layer, self.part, self.measure)

    def maps_ready(self) -> bool:
        """Whether the maps of the measure in view are computed for this run's tokens, layer and part."""
        found = self.cache.get("contrib")
        return found is not None and found[0] == self.maps_key()

    def maps(self) -> Any:
        """The maps of the measure in view (attncli.models.interpret.contrib.Contributions), once `maps_ready`."""
        return self.cache["contrib"][1]

    def maps_job(self) -> Callable[[], Any]:
        """What computes `attn show --contrib`'s maps of the measure in view on this run's layer, every head: the run
        as it is now, for a thread to call (one at a time); the last maps computed are kept."""
        from attncli.models.interpret.contrib import of_result  # late: start-up (model code only with --model)

        key, result, measure = self.maps_key(), self.result, self.measure

        def job() -> Any:
            with self.locks["contrib"]:
                found = self.cache.get("contrib")
                if found is None or found[0] != key:
                    found = self.cache["contrib"] = (key, of_result(result, measure))
                return found[1]

        return job

    def drawn(self) -> tuple[np.ndarray, np.ndarray | None, str, bool]:
        # -> [m, n] the matrix drawn, [m, n] bool masked or None, what it is, whether it is the head's in focus
        """What the matrix draws: the head in focus (or the heads' mean), or its measure's map when computed
        (the layer's for a measure without per-head maps, and for the mean), or the weights without key 0."""
        from attncli.core.measures import CONTRIBUTIONS, computed  # late: start-up (the registry loads with the key)

        masked = self.result.masked
        if computed(self.measure) and self.maps_ready():
            c, m = self.maps(), CONTRIBUTIONS[self.measure]
            cells = None if masked is None else masked[self.head]
            if c.heads is not None and not self.mean:
                return c.heads[self.head], cells, m.title, True
            return (
                c.layer_matrix,
                cells,
                m.title + (" · all heads together" if m.per_head else " (of the layer)"),
                False,
            )
        if self.mean:
            array, cells = mean_of_heads(self.result)
        else:
            array, cells = self.weights[self.head], None if masked is None else masked[self.head]
        what = "Attention weights A = softmax(S)"
        if computed(self.measure):
            what += f" (computing {self.measure} …)"
        if not self.drop_sink:
            return array, cells, what, True
        from attncli.pipeline.heads import sinkless  # late: start-up (with the key)

        kept, left = sinkless(array, cells)
        full = np.concatenate([np.zeros((len(kept), 1)), kept], axis=1)
        shut = np.concatenate([np.ones((len(kept), 1), dtype=bool), left], axis=1)
        return full, shut, what + ", key 0 dropped (each row renormalized)", True

    # ---- what the model wrote, the lens, the ablation ---------------------------------------------------------

    def not_a_decoder(self, lens: bool = False, ablate: bool = False) -> str | None:
        """Why this run has no next token to predict, so no written tokens to step through, lens (`lens`) or
        ablation (`ablate`) (None: it has). An encoder–decoder's decoder has written tokens and a lens, over the
        target it reads the source for; attn ablates a decoder-only model's heads."""
        if self.model is None:
            return "a text run predicts no token: --model DIR of a decoder has the lens, the ablation and --generate"
        from attncli.models.network.unembed import unembedding  # late: start-up (model code only with --model)
        from attncli.models.runs.route import kind

        seq2seq = kind(self.model).reads_source  # an encoder–decoder: parts, its decoder writes the target
        if seq2seq and self.context is None:
            return (
                f"{self.model.name} is an encoder–decoder: its decoder writes a target from a source: --context SOURCE"
            )
        if seq2seq and not ablate:
            if lens or self.result.tokens.generated is not None or self.generate is None:
                return None
            return (
                "the encoder's part reads the source: the target the model wrote is the rows of the cross and "
                "decoder parts (c)"
            )
        try:
            unembedding(self.model)
        except AttnError as err:
            return str(err)  # it says what the lens, the ablation and --generate need
        return None

    def written(self) -> int:
        """How many tokens the model wrote after the text (--generate), 0 without."""
        start = self.result.tokens.generated
        return 0 if start is None else len(self.result.tokens) - start

    def seen(self) -> int:
        """The keys in view: stepping through the written tokens, those the row in focus saw (the row that chose
        the written token: the tokens before it); else all."""
        return self.weights.shape[2] if self.step is None else self.query + 1

    def written_at(self) -> int:
        """Stepping through the written tokens: the position of the one in focus (the query in focus, the row
        that chose it, is the one before)."""
        assert self.step is not None
        return len(self.result.tokens) - self.written() + self.step

    def _to_step(self) -> None:
        if self.step is not None:
            self.query = self.written_at() - 1  # the row that chose the token: its output predicted it
            self.key = min(self.key, self.query)

    def step_through(self, step: int) -> str | None:
        """The next (1) or previous (-1) token the model wrote, from the whole matrix the first (or the last);
        a message when the run wrote none."""
        if self.written() == 0:
            return self.not_a_decoder() or "the model wrote nothing here: --generate N has it write N tokens"
        first = 0 if step > 0 else self.written() - 1
        self.step = first if self.step is None else max(0, min(self.written() - 1, self.step + step))
        self._to_step()
        return None

    def whole(self) -> str | None:
        """Back from stepping through the written tokens to the whole matrix."""
        if self.step is None:
            return "the whole matrix is in view (n steps through the tokens the model wrote)"
        self.step = None
        return None

    def _cached(self, what: str, tokens: Tokens, make: Callable[[], Any]) -> Any:
        """`make()`, or what it gave for these tokens before (`tokens` taken when asked: a text edited while it
        runs has other ids)."""
        with self.locks[what]:
            found = self.cache.get(what)
            if found is None or found[0] != tokens.ids:
                found = self.cache[what] = (tokens.ids, make())
            return found[1]

    def written_probability(self) -> float:
        """The probability the model gave the written token in focus after the tokens before it."""
        from attncli.models.interpret.lens import written_probabilities  # late: start-up (model code only with --model)

        tokens, start, source = self.result.tokens, len(self.result.tokens) - self.written(), None
        if self.context is not None:  # an encoder–decoder's target, written reading the source
            from attncli.models.runs.seq2seq import encoder_tokens  # late: start-up (model code only with --model)

            source = encoder_tokens(self.model, self.context).ids
        found = self._cached("written", tokens, lambda: written_probabilities(self.model, tokens.ids, start, source))
        assert self.step is not None
        return float(found[self.step])

    def lens(self) -> dict:
        """`attn lens -f json` of this run's tokens (a generation's whole sequence), the top LENS_K of each cell."""
        from attncli.core.parts import PARTS  # late: start-up (model code only with --model)
        from attncli.models.interpret.lens import lens_document
        from attncli.models.runs.seq2seq import decoder_tokens

        tokens, context = self.result.tokens, self.context
        if context is not None and self.part is not None and not PARTS[self.part].needs_source:
            tokens = decoder_tokens(self.model, self.text)  # the encoder's part: its rows are the source's
        return self._cached(
            "lens", tokens, lambda: lens_document(self.model, self.text, LENS_K, tokens, context=context)
        )

    def ablation(self, progress: Callable[[int, int], None] | None = None) -> dict:
        """`attn ablate -f json` of the text (a generation's before its first written token): every head
        switched off alone; `progress(done, total)` after each layer."""
        from attncli.models.interpret.ablate import ablate_document  # late: start-up (model code only with --model)

        tokens, text = self.result.tokens, self.text
        return self._cached(
            "ablate", tokens, lambda: ablate_document(self.model, text, tokens=tokens, progress=progress)
        )

    def attribution(self) -> dict:
        """`attn dla -f json` of the text (a generation's before its first written token) for the model's own
        next token there (models.dla.own_next: no contrast, m = its logit): each part's direct share of it."""
        from attncli.models.interpret.dla import dla_document, own_next  # late: start-up (model code only with --model)

        tokens, text = self.result.tokens, self.text
        return self._cached(
            "dla", tokens, lambda: dla_document(self.model, text, own_next(self.model, tokens), tokens=tokens)
        )

    def done(self, what: str) -> bool:
        """Whether `what` ("lens", "ablate", "dla") of these tokens is computed already."""
        return what in self.cache and self.cache[what][0] == self.result.tokens.ids

    # ---- what the panels read ---------------------------------------------------------------------------

    def row(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        # -> weights [n], scores [n] or None, masked [n] or None
        """The focused query's row of weights, scores and mask: of the head in focus, or the mean of the heads
        (which has no scores; a key is masked when every head masks it)."""
        scores, weights = self.result.attention()
        masked = self.result.masked
        if self.mean:
            average, every = mean_of_heads(self.result)
            n = self.seen()
            return average[self.query, :n], None, None if every is None else every[self.query, :n]
        h, i, n = self.head, self.query, self.seen()
        return weights[h, i, :n], scores[h, i, :n], None if masked is None else masked[h, i, :n]

    def heads_document(self) -> dict:
        """Every head's statistics and pattern label, as `attn heads -f json` has them: a model's every layer, or
        the one layer of a text run."""
        if self.model is not None:
            from attncli.models.runs import route  # late: start-up (model code only with --model)

            return route.heads(self.model, self.text, self.context, self.part, self.generate)
        causal = any(m.partition(":")[0] == "causal" for m in self.config.mask)
        return text_heads_document(self.result, causal)

    def open_head(self, layer: int, head: int) -> None:
        """The heads overview's Enter: that layer's run, that head in focus."""
        if self.model is not None and layer != self.layer:
            self.compute(layer=layer)
        self.head, self.mean = head, False
