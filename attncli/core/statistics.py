"""The registry of head statistics: one entry per idea, whatever command shows it.

Each `Statistic` is one number per query row of a head's weights a (rows = queries, columns = keys), averaged
over the rows: its name, the formula, what it means where it is shown (`attn heads` on one text, over a
cross-attention, over a corpus with `--lines`), the pattern label a head earns when it dominates, and the short
hint under a cell of the heads grid. `attn heads`, `attn heads --lines`, the explorer and the page read their
names, words and labels from here; `attncli.core.stats` computes them. Plain data: `attn heads --help` reads it
without NumPy.

    >>> STATISTICS["previous-token"].formula, STATISTICS["previous-token"].hint
    ('a[i, i-1], rows i >= 1', 'prev')
    >>> stat_named("previous-token"), LABELS
    ('previous', ('previous-token', 'diagonal', 'first-token/sink', 'broad'))

One name per idea: "previous-token" is the weight on the token just before the query. `attn heads -f json` has
always written it in a column named "previous" (and `--stat previous` chooses it): that column name is the entry's
`column`, and `stat_named` takes either.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Statistic:
    """A statistic of the registry: its one name, its formula, and what each command that shows it says."""

    name: str  # the one name of the idea (a detector's name in `attn heads --lines`)
    formula: str  # per query row i
    label: str  # the pattern label of a head where it dominates ("" for none)
    hint: str  # the short label under a heads-grid cell ("" for none)
    definition: str | None = None  # `attn heads` on one text (self-attention); None: not shown there
    cross: str | None = None  # `attn heads --part cross`: target rows over source columns
    undefined: str | None = None  # why it means nothing across two sequences (no `cross` then)
    corpus: str | None = None  # `attn heads --lines`
    detector: bool = False  # a head detector of `attn heads --lines` (a mean weight in [0, 1])
    column: str = ""  # its key in `attn heads -f json` rows, when that is not `name`
    shade_by: str = ""  # the statistic whose value (0..1) shades its cells, when not its own
    sinks: str | None = None  # `attn heads`' sinks section (one text): what it measures there

    @property
    def key(self) -> str:
        return self.column or self.name


STATISTICS = {
    s.name: s
    for s in (
        Statistic(
            "entropy",
            "-Σ_j a[i, j] log2 a[i, j], in bits (0 · log 0 = 0)",
            "",
            "",
            definition="entropy of each row in bits: 0 = one key, log2(keys) = uniform",
            cross="entropy of each row over the source tokens in bits: 0 = one source token, log2(source) = uniform",
            corpus="row entropy in bits (0: all weight on one key)",
            shade_by="broadness",
        ),
        Statistic(
            "max",
            "max_j a[i, j]",
            "",
            "",
            definition="largest weight of each row: how peaked the head is",
            cross="largest weight of each row: how sharp the alignment is",
        ),
        Statistic(
            "diagonal",
            "a[i, i]",
            "diagonal",
            "diag",
            definition="weight on the query itself (key i for query i)",
            undefined="a[i, i] would pair target token i with source token i of another sentence; see diagonality, "
            "the weight near the proportional diagonal",
            corpus="weight on the query itself, a[i, i]",
        ),
        Statistic(
            "previous-token",
            "a[i, i-1], rows i >= 1",
            "previous-token",
            "prev",
            definition="weight on the token just before the query (key i-1 for query i; rows i >= 1)",
            undefined="the token before a target token is in the target, not among the source keys; see monotonic",
            corpus="weight on the token just before the query, a[i, i-1] (rows i >= 1)",
            detector=True,
            column="previous",
        ),
        Statistic(
            "duplicate-token",
            "Σ_{j<i, t_j = t_i} a[i, j], rows whose token occurred before",
            "duplicate-token",
            "dup",
            corpus="weight on earlier copies of the query's own token (rows whose token came before)",
            detector=True,
        ),
        Statistic(
            "induction",
            "a[i, i - P + 1] on a random sequence of period P repeated twice, rows of the second copy",
            "induction",
            "ind",
            corpus="on a random sequence repeated twice, weight on the token after the query's earlier copy",
            detector=True,
        ),
        Statistic(
            "first-token",
            "a[i, 0]",
            "first-token/sink",
            "sink",
            definition="weight on the first token ([CLS] in BERT): an 'attention sink'",
            cross="weight on the first source token",
            corpus="weight on the first token, a[i, 0]: an attention sink",
            detector=True,
        ),
        Statistic(
            "distance",
            "Σ_j a[i, j] |i - j|",
            "",
            "",
            corpus="attention distance Σ_j a[i, j] |i - j|, in tokens",
        ),
        Statistic(
            "broadness",
            "entropy / log2(keys row i may see)",
            "broad",
            "brd",
            definition="row entropy divided by its maximum log2(keys): 1 = uniform over the keys it may see",
            cross="row entropy divided by its maximum log2(source tokens): 1 = uniform over the source",
        ),
        Statistic(
            "diagonality",
            "Σ_{|j - i (n-1)/(m-1)| < 1} a[i, j]",
            "diagonal-alignment",
            "aln",
            cross="weight on the one or two source tokens nearest the proportional diagonal j = i (n-1)/(m-1) "
            "(row i of m target tokens, column j of n source tokens): an alignment that keeps the word order",
        ),
        Statistic(
            "monotonic",
            "share of i with argmax_j a[i+1, j] >= argmax_j a[i, j]",
            "",
            "",
            cross="share of consecutive target tokens whose strongest source token does not move left: 1 = a "
            "monotonic alignment (1 for a single target token)",
        ),
        Statistic(
            "sink",
            "α_k = mean_{i >= k} a[i, k] for each of the first SINK_POSITIONS keys k; a sink head when α_0 > ε",
            "",
            "",
            sinks="mean weight the queries that may see it put on each of the first positions (Gu et al. 2025, "
            "'When attention sink emerges in language models', α_k); a sink head when α_0 > ε = 0.3, and the "
            "model's sink rate Sink^ε the share of its heads that are",
        ),
        Statistic(
            "massive-activation",
            "‖h_l[i]‖ / median_j ‖h_l[j]‖, h_l the residual stream entering layer l",
            "",
            "",
            sinks="the residual stream's norm at each position over its median across the positions, per layer "
            "(Sun et al. 2024, 'Massive activations in large language models': a sink token's stream is far longer)",
        ),
        Statistic(
            "last-token",
            "a[i, n-1]",
            "last-token/sink",
            "eos",
            cross="weight on the last source token (the </s>, or mBART's language code, that ends a source)",
        ),
    )
}

# The statistics each view shows, in its order (the order of the JSON's keys).
SELF = ("entropy", "max", "diagonal", "previous-token", "first-token", "broadness")
CROSS = ("entropy", "max", "diagonality", "monotonic", "first-token", "last-token", "broadness")
DETECTED = ("previous-token", "duplicate-token", "induction", "first-token")
CORPUS = ("entropy", "distance", "diagonal")
SINKS = ("sink", "massive-activation")  # `attn heads`' sinks section (one text)
SINK_EPSILON = 0.3  # Gu et al. 2025's threshold ε of Sink^ε
SINK_POSITIONS = 4  # the first positions whose mean weight `attn heads` reports
# The masses that label a head (the largest >= PATTERN_MASS wins, ties in this order), then broadness.
PATTERNS = ("previous-token", "diagonal", "first-token", "broadness")
CROSS_PATTERNS = ("diagonality", "first-token", "last-token", "broadness")

HEAD_STATS = {STATISTICS[n].key: STATISTICS[n].definition for n in SELF}  # `attn heads`' column -> its meaning
CROSS_STATS = {n: STATISTICS[n].cross for n in CROSS}
CROSS_UNDEFINED = {STATISTICS[n].key: STATISTICS[n].undefined for n in SELF if STATISTICS[n].undefined}
DETECTORS = {n: STATISTICS[n].corpus for n in DETECTED}
CORPUS_STATISTICS = {n: STATISTICS[n].corpus for n in CORPUS}
LABELS = tuple(STATISTICS[n].label for n in PATTERNS)
CROSS_LABELS = tuple(STATISTICS[n].label for n in CROSS_PATTERNS)
COLUMNS = tuple(dict.fromkeys([*HEAD_STATS, *CROSS_STATS]))  # every column of `attn heads -f json`
STAT_CHOICES = (*COLUMNS, *(s.name for s in STATISTICS.values() if s.column and s.column in COLUMNS))  # `--stat`
HINTS = {  # a pattern label or a detector -> its hint under a grid cell
    **{s.label: s.hint for s in STATISTICS.values() if s.label},
    **{n: STATISTICS[n].hint for n in DETECTED},
}
EVIDENCE = {STATISTICS[n].label: STATISTICS[n].key for n in (*PATTERNS, *CROSS_PATTERNS)}  # label -> its column


def stat_named(name: str) -> str:
    """The `attn heads` column of a statistic given by its name or its column (`previous-token` -> `previous`)."""
    entry = STATISTICS.get(name)
    return entry.key if entry is not None else name


def shade_key(column: str) -> str:
    """The column whose value shades a cell of `column` (entropy: its broadness, on 0..1)."""
    entry = STATISTICS.get(column)
    return entry.shade_by or column if entry is not None else column
