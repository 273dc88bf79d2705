"""Decoding with a key/value cache: N new tokens cost one pass over the prompt and N - 1 one-row passes.

Each layer keeps the keys and values (per key/value head, after RoPE) of every position run so far
(`KVCache`); a new token's row attends over them (attncli.models.network.attention's `cached`). The next token is the
argmax of the head's logits (attncli.models.network.unembed), as transformers' `generate(do_sample=False)`, or, with a
`Generation` that samples, drawn from them after a temperature, top-k and top-p (transformers' warpers, in that
order) with NumPy's random stream; until `n_new` tokens or the model's end-of-sequence token.

    ids = decode(model, encode(model, "The capital of France is").ids, 8)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attncli.core.attention import softmax
from attncli.core.threads import blas_threads
from attncli.errors import ConfigError
from attncli.models.files.folder import check_run, json_object
from attncli.models.files.hparams import ModelError
from attncli.models.network import parallel
from attncli.models.network.attention import cached
from attncli.models.network.model import Model
from attncli.models.network.unembed import next_logits, unembedding
from attncli.models.runs.tokens import ModelTokens
from attncli.pipeline.ranges import check_range


@dataclass(frozen=True)
class Generation:
    """--generate N, and how each new token is chosen: greedy, or (with a temperature, top_k or top_p) sampled."""

    new: int
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0

    def __post_init__(self):
        check_range("generate", self.new)
        if self.temperature is not None and not 0 < self.temperature < np.inf:
            raise ConfigError(f"--temperature must be a finite number above 0 to sample, got {self.temperature}")
        check_range("sample_top_k", self.top_k)
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ConfigError(f"--top-p must be in (0, 1], got {self.top_p}")
        check_range("seed", self.seed)

    @property
    def sampled(self) -> bool:
        return self.temperature is not None or self.top_k is not None or self.top_p is not None

    def describe(self) -> str:
        """How the tokens were chosen, for captions and JSON."""
        if not self.sampled:
            return "greedy (the most probable each time)"
        parts = [f"temperature {self.temperature:g}" if self.temperature is not None else None]
        parts += [f"top-k {self.top_k}" if self.top_k is not None else None]
        parts += [f"top-p {self.top_p:g}" if self.top_p is not None else None]
        chosen = ", ".join(p for p in parts if p)
        return f"sampled ({chosen}; seed {self.seed}: NumPy's default_rng, one uniform a token, not torch's stream)"

    def chooser(self) -> Callable[[np.ndarray], int]:  # -> choose(logits [vocab]) -> the next id
        """argmax, or a draw from NumPy's `default_rng(seed)`: one uniform u a token, the first id whose cumulative
        probability exceeds u (the probabilities after the temperature, then top-k, then top-p, as transformers
        warps them; the draws are NumPy's, so a seed gives other tokens than torch's with the same seed)."""
        if not self.sampled:
            return lambda logit: int(np.argmax(logit))
        rng = np.random.default_rng(self.seed)
        return lambda logit: draw(warped(logit, self.temperature, self.top_k, self.top_p), rng.random())


def warped(logit, temperature: float | None, top_k: int | None, top_p: float | None) -> np.ndarray:
    # [vocab] -> [vocab] float64 probabilities
    """Logits / temperature (less their largest first, which softmax ignores: a tiny temperature then sends the others
    to -inf, not every logit to ±inf and NaN); those below the k-th largest set to -inf (top-k: equal ones stay);
    then the least probable whose probabilities sum to at most 1 - top_p set to -inf (top-p: the most probable
    always stays).

    >>> warped(np.array([0.0, 1.0, 2.0, 3.0]), None, 2, None).round(3).tolist()
    [0.0, 0.0, 0.269, 0.731]
    >>> warped(np.array([0.0, 1.0, 2.0, 3.0]), None, None, 0.5).round(3).tolist()
    [0.0, 0.0, 0.0, 1.0]
    >>> warped(np.array([1.0, 3.0, 3.0]), 1e-320, None, None).tolist()
    [0.0, 0.5, 0.5]
    """
    z = np.asarray(logit, dtype=np.float64)
    with np.errstate(over="ignore"):  # to -inf: a probability of 0
        z = (z - z.max()) / (temperature or 1.0)
    if top_k is not None and top_k < z.size:
        z[z < np.partition(z, -top_k)[-top_k]] = -np.inf
    if top_p is not None:
        order = np.argsort(z, kind="stable")  # ascending
        cumulative = np.cumsum(softmax(z[order]))
        drop = cumulative <= 1 - top_p
        drop[-1] = False
        z[order[drop]] = -np.inf
    return softmax(z)


def draw(probs, u: float) -> int:  # [vocab] probabilities, u in [0, 1) -> an id
    """The first id whose cumulative probability exceeds u (inverse transform sampling).

    >>> draw(np.array([0.25, 0.0, 0.75]), 0.1), draw(np.array([0.25, 0.0, 0.75]), 0.3)
    (0, 2)
    """
    cumulative = np.cumsum(probs)
    return int(min(np.searchsorted(cumulative, u * cumulative[-1], side="right"), probs.size - 1))


class KVCache:
    """Each layer's keys and values of the positions already run, in arrays made for `capacity` positions:
    a layer's `attend` writes its new rows after `start` and reads all of them; `advance` moves `start` on
    once every layer has. An encoder–decoder's cross-attention keeps its keys and values of the source (`memory`)."""

    def __init__(self, n_layer: int, capacity: int):
        self.capacity, self.start = capacity, 0  # start: the positions cached before this pass
        self.keys: list[np.ndarray | None] = [None] * n_layer  # [h_kv, capacity, d_k]
        self.values: list[np.ndarray | None] = [None] * n_layer
        self.memories: dict[int, tuple] = {}  # layer -> the cross-attention's (keys, values) [n_src, h · d_k]

    def memory(self, layer: int, make: Callable[[], tuple]) -> tuple:  # -> (keys, values) [n_src, h · d_k] each
        """A cross-attention's projected keys and values of layer `layer`: make() on the first pass, then kept."""
        if layer not in self.memories:
            self.memories[layer] = make()
        return self.memories[layer]

    def extend(self, layer: int, k, v):  # [h_kv, m, d_k] twice -> [h_kv, start + m, d_k] twice (views)
        end = self.start + k.shape[-2]
        keys, values = self.keys[layer], self.values[layer]
        if keys is None or values is None:
            keys = self.keys[layer] = np.empty((k.shape[0], self.capacity, k.shape[-1]), k.dtype)
            values = self.values[layer] = np.empty((v.shape[0], self.capacity, v.shape[-1]), v.dtype)
        keys[:, self.start : end], values[:, self.start : end] = k, v
        return keys[:, :end], values[:, :end]

    def advance(self, m: int) -> None:
        self.start += m


def _ids(value) -> set[int]:  # an eos_token_id of config.json: an id, a list of ids, or null
    values = value if isinstance(value, list) else [value]
    return {v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def setting(model: Model, key: str):
    """A generation setting (eos_token_id, forced_eos_token_id, ...): generation_config.json's, else config.json's."""
    if (model.path / "generation_config.json").is_file():
        generation = json_object(model.path, "generation_config.json")
        if key in generation:
            return generation[key]
    return model.config.get(key)


def eos_ids(model: Model) -> set[int]:
    """The ids that end a generation: the model's eos_token_id (`setting`; none: never)."""
    return _ids(setting(model, "eos_token_id"))


def forced(model: Model, length: int, n_new: int) -> Callable[[int], set[int]]:
    # -> the ids forced as the i-th new token (empty: none)
    """transformers' forced tokens, which its generate applies from the model's settings: forced_bos_token_id as
    the token after the first (a decoder input of length 1: an encoder–decoder's start token alone),
    forced_eos_token_id (an id or a list) as the last of the n_new, `length` the ids before the first new one."""
    bos, eos = _ids(setting(model, "forced_bos_token_id")), _ids(setting(model, "forced_eos_token_id"))

    def ids(i: int) -> set[int]:  # the end wins where both apply (transformers runs its processor last)
        return eos if eos and i == n_new - 1 else bos if length + i == 1 else set()

    return ids


def writes(model: Model, first, n_new: int, how: Generation | None, step, stop: set[int] | None = None) -> list[int]:
    # [m] ids of the first pass, step(rows [m] int64) -> [vocab] logits of the last row -> up to n_new new ids
    """The decoding loop: `step` runs the ids it is given through the model with its key/value cache (the first
    pass all of `first`, then one new token a pass) and returns the next token's logits; the token is `how`'s
    choice (greedy by default) or the forced one (`forced`), until n_new or an end id (`stop`, default the
    model's `eos_ids`; it is kept). One BLAS thread: a one-row pass is too small to share."""
    stop, choose = eos_ids(model) if stop is None else stop, (how or Generation(n_new)).chooser()
    force = forced(model, len(first), n_new)
    new: list[int] = []
    rows = np.asarray(first, dtype=np.int64)
    with blas_threads(1), parallel.threads(1):
        while len(new) < n_new:
            logit = step(rows)
            if not np.isfinite(logit).all():
                raise ModelError(f"the logits of {model.name} are not finite (NaN or infinity): nothing was written")
            if ids := force(len(new)):  # as transformers' processors: every other logit -inf, the forced ones 0
                logit = np.full(logit.shape, -np.inf, logit.dtype)
                logit[sorted(i for i in ids if i < logit.size)] = 0
            token = choose(logit)
            new.append(token)
            if token in stop:
                break
            rows = np.asarray([token], dtype=np.int64)
    return new


def check_room(model: Model, n_prompt: int, n_new: int) -> None:
    """ConfigError when `n_new` is not a count from 1, or alone more than the model's positions (the command
    line's mistake, whatever the text); ModelError when the prompt and the new tokens exceed the positions."""
    if n_new < 1:
        raise ConfigError(f"--generate must be at least 1, got {n_new}")
    if n_new > model.max_positions:
        raise ConfigError(
            f"--generate {n_new:,} is more tokens than {model.name} takes in all, whatever the text: at most "
            f"{model.max_positions} ({model.hp['positions_key']})"
        )
    if n_prompt + n_new > model.max_positions:
        raise ModelError(
            f"the text is {n_prompt} token{'s' * (n_prompt != 1)} and --generate {n_new} more, but {model.name} "
            f"takes at most {model.max_positions} ({model.hp['positions_key']})"
        )


def decode(model: Model, ids, n_new: int, eos: set[int] | None = None, how: Generation | None = None) -> list[int]:
    # [n] prompt ids -> up to n_new new ids
    """The n_new tokens greedy decoding (or `how`'s sampling) writes after `ids` (fewer if it writes an `eos` id,
    which is kept; default: the model's own, `eos_ids`), one cached pass per token, on one BLAS thread."""
    prompt = [int(i) for i in ids]
    check_room(model, len(prompt), n_new)
    if not prompt or min(prompt) < 0 or max(prompt) >= model.vocab_size:
        raise ModelError(f"the prompt's ids must be 1 or more rows of the embedding table of {model.name}")
    unembedding(model)  # no head: say so before the first pass
    f, cache = model.family, KVCache(model.n_layer, len(prompt) + n_new)

    def step(rows):  # [m] -> [vocab]
        x = f.embed(model, rows)  # [m, d_model]: the prompt, then one new token a pass
        for l in range(model.n_layer):
            x, _ = f.attention(model, l, x)
            x = f.mlp(model, l, x)
        cache.advance(len(rows))
        return next_logits(model, x[-1:])[0]

    with cached(cache):
        return writes(model, prompt, n_new, how, step, eos)


def continued(model: Model, t: ModelTokens, how: Generation, end: int) -> ModelTokens:
    """The encoded prompt `t` and the tokens decoding (`how`) writes after it (each at the offset `end`, the
    text's length: they are not cut from it), the whole run priced against the memory limit first."""
    if t.second is not None:
        raise ModelError("--generate continues one text: drop --context")
    check_room(model, len(t), how.new)
    room = check_run(model.weights.least(), model.n_layer, model.n_head, model.d_model, len(t) + how.new, model.name)
    model.weights.fit(room)
    new = decode(model, t.ids, how.new, how=how)
    return ModelTokens(
        t.strings + tuple(model.tokenizer.id_to_token(i) or "" for i in new),
        t.ids + tuple(new),
        t.offsets + ((end, end),) * len(new),
        t.types + (0,) * len(new),
        t.special + (False,) * len(new),
        segments=t.segments + ("assistant",) * len(new) if t.segments else (),  # a chat: the assistant answers
    )
