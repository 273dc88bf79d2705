"""What a run will cost in memory, estimated before anything big is allocated, and the limits it must fit.

Attention is quadratic: h heads × m queries × n keys cells, 8 bytes each (float64), in several
arrays at once (the scores, the weights, the scoring's temporaries, the mask, a top-k sort).
`run_bytes` adds them up for a `RunConfig` and the token counts, with the vectors and weight
matrices (W_Q [d_model, h·d_k] can be large on its own) and what the chosen output holds on top
(the head statistics of a table, the Python lists of `attn steps -f json`):

    >>> from attncli.pipeline.config import RunConfig
    >>> e = run_bytes(RunConfig().resolve(), 4000, 4000)
    >>> e.cells, human_bytes(e.total)        # 1 head, 4000 × 4000, -f json
    (16000000, '249.2 MiB')

`check` refuses an estimate past `Limits.max_bytes` with `MemoryRefused` (a DataError, exit 1),
whose message says what it would cost, and which carries what the cheaper paths would need
(`fits`); the suggestions in the message come from the caller (`Limits.hints`: the CLI's, which
knows its commands and options). The count of tokens is limited first, more cheaply
(`Limits.max_tokens`, see `tokenize.check_count`): a 10 MB text is refused from its length,
before it is tokenized. NumPy-free and quick: the arithmetic only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attncli.core.masks import acts_on_scores
from attncli.core.variants import VARIANTS, option_values
from attncli.errors import DataError
from attncli.pipeline.budget import ENV, MAX_MEMORY
from attncli.pipeline.ranges import check_range
from attncli.pipeline.read import MAX_TOKENS, human_bytes

if TYPE_CHECKING:  # `attn variants` reads the formats, and through them these limits, but tokenizes nothing
    from attncli.pipeline.tokenize import TooManyTokens

F = 8  # bytes of a float64
TOKEN_BYTES = 300  # one token as Python holds it: its string, id, offsets (tuples) and its share of the lists


@dataclass(frozen=True)
class OutputCost:
    """What the output holds on top of the run, under `label`: `bytes_per_cell` for each query–key
    cell of one head, or (`of_largest`) for each number of the largest array."""

    label: str
    bytes_per_cell: int
    of_largest: bool = False

    def bytes(self, m: int, n: int, largest: int) -> dict[str, int]:
        return {self.label: self.bytes_per_cell * (largest if self.of_largest else m * n)}


# (config or None, the estimate or None for a count of tokens, `fits`) -> suggestions, in the order worth trying
Hints = Callable[[object, "Estimate | None", dict[str, int]], list[str]]


@dataclass(frozen=True)
class Limits:
    """`max_tokens` per text (and per context), `max_bytes` per run's estimate; None: no limit.
    `output` is what rendering the result adds; `hints` what to suggest when a run is refused."""

    max_tokens: int | None = MAX_TOKENS
    max_bytes: int | None = MAX_MEMORY
    output: OutputCost | None = None
    hints: Hints | None = None
    weights: bool = True  # attn compute: False with --no-weights (its .npy sizes are checked before compute())
    dtype: str = "float64"  # attn compute: --dtype

    def __post_init__(self):
        check_range("max_tokens", self.max_tokens)


NO_LIMITS = Limits(None, None)


# The parts of an Estimate that suggestions name (cli/hints.py); the rest are described by their key only.
ATTENTION = "attention"  # the [h, m, n] arrays
PROJECTIONS = "W_Q, W_K, W_V, W_O"
VARIANT_PARAMETERS = "variant parameters"


@dataclass(frozen=True)
class Estimate:
    """Bytes by what holds them; `cells` = h·m·n of the attention matrices and the bytes they take per cell."""

    parts: dict[str, int]
    cells: int
    per_cell: int  # bytes per cell at the peak, over all the [h, m, n] arrays
    shape: tuple[int, int, int]  # h, m, n
    runs: int = 1

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def describe(self) -> str:
        h, m, n = self.shape
        runs = f"{self.runs} runs of up to " if self.runs > 1 else ""
        if self.cells:
            head = (
                f"{runs}{h} head{'s' if h > 1 else ''} × {m:,} × {n:,} = {self.cells:,} cells × "
                f"{self.per_cell} bytes ({human_bytes(self.parts.get(ATTENTION, 0))})"
            )
        else:
            head = f"{runs}{h} head{'s' if h > 1 else ''}, {m:,} queries, {n:,} keys, outputs only"
        others = sorted(
            ((v, k) for k, v in self.parts.items() if k != ATTENTION and v >= self.total / 20), reverse=True
        )
        return head + "".join(f", {k} {human_bytes(v)}" for v, k in others[:3])


def attention_bytes_per_cell(
    variant: str, masks: tuple[str, ...], trace: bool = False, temperature: float = 1.0, itemsize: int = F
) -> int:
    """Bytes per (head, query, key) cell at the peak of attend(): scores and weights (8 + 8), the scoring's
    temporaries, the masks (1 + 1) and top-k's sort, the trace's [h, m, n] terms (measured with
    tracemalloc over every variant, mask, head count and trace: the peak is 0.6 to 1.0 of this)."""
    entry = VARIANTS[variant]
    per = 2 * itemsize + entry.cost.score_temporaries * itemsize
    if masks:
        per += 2  # the boolean mask and np.isfinite's
    if acts_on_scores(masks):
        per += 2 * itemsize + F  # top-k's masked copy, ranks and (int64) argsort, beyond the weights' place
    if trace:
        per += entry.cost.trace_cells * itemsize  # qk (and the gate) for steps
        if masks:
            per += itemsize  # steps' S' with −∞ where masked
    return per


BLOCK_ROWS, THREADS = 256, 2  # kernels.attention_outputs: query rows per block, blocks at once


def outputs_only_bytes(
    variant: str, h: int, m: int, n: int, rank: int | None, features: int | None, itemsize: int = F
) -> int:
    """--no-weights: the blocked kernels' scratch (a few [block, n] tiles per thread), or linformer's
    [h, m, R] and performer's [h, m + n, F] (measured: well under this)."""
    entry = VARIANTS[variant]
    if entry.fast.linear is not None:  # its one option (--rank, --features) is the width of its linear path
        (width,) = option_values(entry, {"rank": rank, "features": features}).values()
        return 3 * itemsize * h * (m + n) * width
    return itemsize * THREADS * BLOCK_ROWS * n  # (measured: 0.1 to 0.6 of this, more when scores are large)


def _vectors(config, m: int, n: int, cross: bool) -> dict[str, int]:
    """X, Q, K, V, the head outputs and O; the projections and the variant's parameters."""
    d, h, dk, dv, da = config.dim, config.heads, config.d_k, config.d_v, config.d_a
    parts = {
        "tokens": TOKEN_BYTES * (m + (n if cross else 0)),
        "vectors": F * ((m + (n if cross else 0)) * d * 2 + (m + n) * h * dk + n * h * dv + 2 * m * h * dv + m * d),
    }
    if config.projection == "identity":
        parts["projections"] = F * d * d
    else:
        parts[PROJECTIONS] = F * (2 * d * h * dk + 2 * d * h * dv)
    params = VARIANTS[config.variant].param_count(h, dk, dk, da)
    if params:
        parts[VARIANT_PARAMETERS] = F * params
    return parts


def run_bytes(
    config, m: int, n: int, trace: bool = False, output: OutputCost | None = None, cross: bool = False
) -> Estimate:
    """The bytes `pipeline.run` (and then its `output`) allocates for m queries and n keys.

    `config` is resolved (d_k, d_v, d_a filled in). With `trace` (attn steps) the variant's terms are
    kept, and additive's tanh(W₁q + W₂k + b) is an [h, m, n, d_a] array; otherwise additive works in
    slices of ~32 MB. A table adds the head statistics (about six [m, n] arrays for one head at a
    time); `attn steps -f json` turns each array into Python lists and a string while writing it,
    ~160 bytes for each number of the largest. Measured with tracemalloc (tests/test_limits.py),
    the peak of a run is 0.6 to 1.0 of the estimate.
    """
    h = config.heads
    itemsize = 4 if getattr(config, "dtype", "float64") == "float32" else F
    if not getattr(config, "weights", True):  # --no-weights: outputs only, never an [h, m, n] array
        parts = {
            "outputs-only scratch": outputs_only_bytes(
                config.variant, h, m, n, getattr(config, "rank", None), getattr(config, "features", None), itemsize
            ),
            **_vectors(config, m, n, cross),
        }
        return Estimate(parts, 0, 0, (h, m, n))
    cells = h * m * n
    per = attention_bytes_per_cell(config.variant, config.mask, trace, config.temperature, itemsize)
    parts = {ATTENTION: cells * per, **_vectors(config, m, n, cross)}
    largest = cells
    entry = VARIANTS[config.variant]
    if entry.cost.hidden:  # slices of [h, rows, n, d_a] of ~32 MB: the sum, tanh, einsum's
        parts[f"{entry.name}'s slices"] = min(3 * F * cells * config.d_a, 3 * 2**25)
        if trace:
            # (computed in float64, and in float32 a rounded copy as well)
            parts[f"{entry.name}'s {entry.cost.hidden}"] = (F + (itemsize if itemsize != F else 0)) * cells * config.d_a
            largest = cells * config.d_a
    if output is not None:
        parts.update(output.bytes(m, n, largest))
    return Estimate(parts, cells, per, (h, m, n))


def compute_bytes(
    variant: str,
    masks,
    m: int,
    n: int,
    d_q: int,
    d_k: int,
    d_v: int,
    d_a: int,
    temperature: float = 1.0,
    output: OutputCost | None = None,
    *,
    weights: bool = True,
    dtype: str = "float64",
    rank: int | None = None,
    features: int | None = None,
) -> Estimate:
    """The bytes of `attn compute` on q [m, d_q], k [n, d_k], v [n, d_v] (one head, no projection)."""
    matrices = {"matrices": F * (m * d_q + n * d_k + n * d_v + 2 * m * d_v)}
    itemsize = 4 if dtype == "float32" else F
    if not weights:
        return Estimate(
            {"outputs-only scratch": outputs_only_bytes(variant, 1, m, n, rank, features, itemsize), **matrices},
            0,
            0,
            (1, m, n),
        )
    cells = m * n
    per = attention_bytes_per_cell(variant, tuple(str(x) for x in masks), False, temperature, itemsize)
    parts = {ATTENTION: cells * per, **matrices}
    if VARIANTS[variant].cost.hidden:
        parts[f"{variant}'s slices"] = min(3 * F * cells * d_a, 3 * 2**25) + F * d_a * (m + n)
    if output is not None:
        parts.update(output.bytes(m, n, cells))
    return Estimate(parts, cells, per, (1, m, n))


def combine(estimates: list[Estimate]) -> Estimate:
    """Several runs held at once (attn compare): all their arrays, and the largest run's shape."""
    parts: dict[str, int] = {}
    for e in estimates:
        for k, v in e.parts.items():
            parts[k] = parts.get(k, 0) + v
    big = max(estimates, key=lambda e: e.cells)
    return Estimate(parts, sum(e.cells for e in estimates), big.per_cell, big.shape, runs=len(estimates))


class MemoryRefused(DataError):
    """A run refused before it starts, its `estimate` past the limit. `fits`: about what the cheaper
    paths would need, in bytes ("outputs-only": without the weights, "float32": in 4-byte cells), for
    those that the run's variant and masks allow."""

    def __init__(self, message: str, estimate: Estimate | None = None, fits: dict[str, int] | None = None):
        super().__init__(message)
        self.estimate = estimate
        self.fits = fits or {}


def fits(config, estimate: Estimate) -> dict[str, int]:
    """About how many bytes the run would need without the weights, and in float32, where those paths apply."""
    if config is None or not estimate.cells:
        return {}
    out = {}
    h, m, n = estimate.shape
    rest = estimate.total - estimate.parts.get(ATTENTION, 0)
    variant = VARIANTS[config.variant]
    if (
        config.weights
        and variant.outputs_only
        and all(str(x).partition(":")[0] in variant.fast.masks for x in config.mask)
    ):
        options = {"rank": config.rank, "features": config.features}
        out["outputs-only"] = rest + outputs_only_bytes(variant.name, h, m, n, options["rank"], options["features"])
    if config.dtype == "float64":
        out["float32"] = rest + estimate.parts.get(ATTENTION, 0) // 2
    return out


def check(estimate: Estimate, limits: Limits, what: str, config=None, lead: tuple[str, ...] = ()) -> None:
    """MemoryRefused when the estimate passes `limits.max_bytes`: the cost, the limit, and what would fit
    (`lead`, then `limits.hints`, then ATTN_MAX_MEMORY)."""
    if limits.max_bytes is None or estimate.total <= limits.max_bytes:
        return
    cheaper = fits(config, estimate)
    suggested = limits.hints(config, estimate, cheaper) if limits.hints else []
    tips = "; ".join(
        dict.fromkeys(
            [*lead, *suggested, f"or set {ENV} (now {human_bytes(limits.max_bytes)}) if the machine has the memory"]
        )
    )
    raise MemoryRefused(
        f"{what} would need about {human_bytes(estimate.total)} of memory, more than the "
        f"{human_bytes(limits.max_bytes)} allowed: {estimate.describe()}. Try {tips}",
        estimate,
        cheaper,
    )


def too_many_tokens(error: TooManyTokens, what: str, config, limits: Limits) -> DataError:
    """The message for a text over --max-tokens: its count, what its matrices alone would take, what fits."""
    n = error.about
    cells = config.heads * n * n
    weights = cells * F
    suggested = limits.hints(config, None, {}) if limits.hints else []
    tips = "; ".join(dict.fromkeys([*suggested, "or raise --max-tokens if the machine has the memory"]))
    return DataError(
        f"the {what} has {error.describe()}, more than --max-tokens {error.max_tokens:,}: its "
        f"attention weights alone would take {config.heads} head{'s' if config.heads > 1 else ''} × "
        f"{n:,} × {n:,} × 8 bytes = {human_bytes(weights)} (the run about "
        f"{human_bytes(cells * attention_bytes_per_cell(config.variant, config.mask))}). Try {tips}"
    )
