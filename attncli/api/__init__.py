"""The Python API: each `attn` command as a function whose keywords are the command's options, returning what
the command writes. The command line is a thin shell over it (cli/commands/: parsing and printing only).

    >>> from attncli import api
    >>> r = api.show("time flies like an arrow", heads=2, mask="causal")
    >>> r.weights[1, 0].tolist()  # the first query sees only itself
    [1.0, 0.0, 0.0, 0.0, 0.0]

`show`, `steps` and `compute` return an `Attention` (tokens, weights, outputs, the whole result), `view` a
`Page`, `heads`, `corpus`, `tokens`, `compare`, `variants`, `lens`, `ablate`, `patch`, `dla`, `knockout` and
`catalog` `Records`, `show_lines` its `Lines`, `rollout` an `Output`; each has `to_json()` (what `-f json` prints),
`save(path)` (what `-o path` writes), the table in a terminal REPL and, in a notebook, the page inline.
"""

from attncli.api.lines import Lines, show_lines
from attncli.api.outputs import Attention, Output, Page, Records
from attncli.api.records import ablate, catalog, compare, corpus, dla, heads, knockout, lens, patch, tokens, variants
from attncli.api.runs import compute, rollout, show, steps, view

__all__ = [
    "Attention",
    "Lines",
    "Output",
    "Page",
    "Records",
    "ablate",
    "catalog",
    "compare",
    "compute",
    "corpus",
    "dla",
    "heads",
    "knockout",
    "lens",
    "patch",
    "rollout",
    "show",
    "show_lines",
    "steps",
    "tokens",
    "variants",
    "view",
]
