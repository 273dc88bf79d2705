"""`--contrib` on `attn steps` and `attn heads` for every part of an encoder–decoder: show's maps, by equality.

show's maps of each part are held to transformers' by tests/models/test_contrib_parts.py's goldens; here steps'
`contributions` are show's for the same part, layer and head, and heads' statistics are those of show's per-head
norm maps of the part, each row as shares (cross-attention: its own statistics, CROSS).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attncli
from attncli.core.contrib import normalize_rows
from attncli.core.measures import CONTRIBUTIONS
from attncli.core.parts import PARTS
from attncli.core.statistics import CROSS_PATTERNS
from attncli.core.stats import cross_head_stats, head_stats, label_heads
from attncli.models.interpret.contrib import heads_of
from attncli.models.runs import route
from tests.conftest import attn

GOLDEN = Path(__file__).parents[1] / "models" / "golden"
TARGET, SOURCE = "le chat est assis", "the cat sat"
MEASURES = [m for m in CONTRIBUTIONS if m != "weights"]


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


def on(name: str, part: str, *more) -> tuple:
    """The arguments of a run of the golden encoder–decoder `name`'s `part`, the target over the source."""
    return (TARGET, "--model", GOLDEN / name, "--context", SOURCE, "--part", part, *more)


# ---- attn steps ------------------------------------------------------------------------------------


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("part", ["decoder", "cross"])
@pytest.mark.parametrize(("name", "more"), [("bart", ("--layer", "0")), ("marian-heads", ("--head", "1"))])
def test_steps_contributions_of_a_part_are_shows(name, more, part, measure):
    """-f json's `contributions` of steps equal show's for the same part, layer and head, key for key (the part,
    its note, cross ALTI's residual among them); the steps are still the part's, its weights among them.
    marian-heads' decoder has 2 heads to its encoder's 4: --head 1 is a decoder head."""
    args = (*on(name, part, *more), "--contrib", measure, "-f", "json")
    stepped, shown = json.loads(ok("steps", *args)), json.loads(ok("show", *args))
    assert stepped["contributions"] == shown["contributions"]
    assert stepped["contributions"]["measure"] == measure and stepped["contributions"]["part"] == part
    weights = next(s for s in stepped["steps"] if s["name"] == "weights")["array"]
    np.testing.assert_array_equal(weights, [h["weights"] for h in shown["heads"]])


@pytest.mark.parametrize(
    ("part", "measure", "titles"),
    [
        ("decoder", "norm", ("norm ‖αf(x)‖, decoder layer 1, per head", "decoder self-attention: f_h(y_j)")),
        (
            "cross",
            "alti",
            (
                "ALTI contributions, cross layer 1",
                "ALTI contributions, cross layer 1: the residual's share",
                "ALTI contributions rolled out through decoder layers 0..1",
                "ALTI+ (Ferrando et al. 2022b",
            ),
        ),
        (
            "cross",
            "value-zeroing",
            ("value zeroing (cosine distance), cross layer 1", "with source token j's values zeroed"),
        ),
    ],
)
def test_the_steps_table_says_the_part_and_the_measure(part, measure, titles):
    """At the softmax stage, where the weights were: every matrix titled by the measure and the part, and the
    line of what the maps are on that part (as show's table draws it)."""
    out = ok("steps", *on("bart", part, "--contrib", measure, "--width", "200"))
    softmax = " ".join(out[out.index("· softmax") : out.index("· mix")].split())  # the notes' lines wrap
    for title in titles:
        assert title in softmax, title
    assert "drawn in place of the weights" in softmax and "check: A[" not in softmax


# ---- attn heads ------------------------------------------------------------------------------------


@pytest.mark.parametrize("part", list(PARTS))
@pytest.mark.parametrize("name", ["bart", "marian-heads"])
def test_heads_by_norm_of_a_part_are_the_statistics_of_shows_norm_maps(name, part):
    """Every statistic and label of `attn heads --part P --contrib norm` recomputed here from each layer's `attn show
    --part P --contrib norm -f json` per-head maps, each row divided by its sum: self-attention's statistics on
    the encoder and the decoder (causal), cross-attention's own on cross. Equal to the bit: both compute the
    same float64 norms of the same pass's attentions (JSON keeps a float64 exactly). The rest of the document is
    `attn heads --part P`'s, tokens, source and what means nothing on cross among it."""
    doc = json.loads(ok("heads", *on(name, part, "--contrib", "norm", "-f", "json")))
    maps = []
    for layer in range(doc["n_layer"]):
        shown = json.loads(ok("show", *on(name, part, "--layer", layer, "--contrib", "norm", "-f", "json")))
        maps.append(normalize_rows(np.array(shown["contributions"]["heads"])))  # [h, m, n]
    maps = np.stack(maps)  # [L, h, m, n]
    cross = PARTS[part].keys != PARTS[part].queries
    stats = cross_head_stats(maps) if cross else head_stats(maps, causal=doc["causal"])
    assert set(doc["stats"]) == set(stats)
    for key, want in stats.items():
        got = [[r[key] for r in doc["rows"] if r["layer"] == l] for l in range(doc["n_layer"])]
        np.testing.assert_array_equal(got, want, err_msg=key)
    labels = label_heads(stats, CROSS_PATTERNS) if cross else label_heads(stats)
    assert [[r["label"] for r in doc["rows"] if r["layer"] == l] for l in range(doc["n_layer"])] == labels
    weights = json.loads(ok("heads", *on(name, part, "-f", "json")))
    assert {k: v for k, v in doc.items() if k not in ("rows", "contrib")} == {
        k: v for k, v in weights.items() if k != "rows"
    }
    assert doc["contrib"]["measure"] == "norm" and {r["measure"] for r in doc["rows"]} == {"norm"}
    assert ("note" in doc["contrib"]) == PARTS[part].needs_source  # the decoder's parts say what f_h reads


def test_heads_of_a_part_by_the_weights_is_heads_itself():
    model = attncli.models.load_model(GOLDEN / "bart-heads")
    for part in PARTS:
        assert heads_of(model, TARGET, "weights", SOURCE, part) == route.heads(model, TARGET, SOURCE, part)


def test_heads_of_a_written_target_by_norm():
    """--generate: the statistics are of the target the model writes from the source, its tokens the weights'."""
    args = (*on("bart", "cross"), "--generate", "3", "-f", "json")
    doc, weights = json.loads(ok("heads", *args, "--contrib", "norm")), json.loads(ok("heads", *args))
    assert doc["tokens"] == weights["tokens"] and doc["generated"] == weights["generated"]
    assert len(doc["rows"]) == len(weights["rows"]) and doc["rows"] != weights["rows"]


def test_the_heads_table_of_cross_names_its_measure_and_what_it_reads():
    out = ok("heads", *on("t5", "cross", "--contrib", "norm", "--width", "200"))
    assert "entropy of every head by norm ‖αf(x)‖, as shares of each row" in out
    assert "cross-attention: f_h(s_j) = (s_j W_V^h + b_V^h) W_O^h of the encoder's output" in out
    assert "no diagonal: a[i, i] would pair target token i" in out  # what means nothing on cross, as for the weights
    table = attncli.heads(TARGET, model=str(GOLDEN / "t5"), context=SOURCE, part="decoder", contrib="norm")
    assert table.view is None and table.doc["contrib"]["note"].startswith("decoder self-attention")
