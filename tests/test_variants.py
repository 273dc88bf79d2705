"""`attn variants`, and every registered variant proven against its formula:
a slow reference written with Python loops and `math`, compared in float64."""

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from attncli.attention import VARIANTS
from attncli.cli import app

runner = CliRunner()


# ---- attn variants: generated from the registry ----------------------------------------------------


def test_variants_json_lists_every_registered_variant():
    r = runner.invoke(app, ["variants", "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["schema"] == "attncli.variants/1"
    assert [row["name"] for row in doc["rows"]] == list(VARIANTS)
    for row in doc["rows"]:
        v = VARIANTS[row["name"]]
        assert row["formula"] == v.formula and row["paper"] == v.paper and row["summary"] == v.summary
        assert row["parameters"] == v.param_shapes and row["notes"] == list(v.notes)
    by_name = {row["name"]: row for row in doc["rows"]}
    assert by_name["additive"]["parameters"] == {"W1": "[h, d_a, d_q]", "W2": "[h, d_a, d_k]", "b": "[h, d_a]",
                                                 "v": "[h, d_a]"}
    assert any("seed 000" in note for note in by_name["cosine"]["notes"])


def test_variants_table_shows_formulas_and_shapes_literally():
    r = runner.invoke(app, ["variants", "--color", "never"], env={"COLUMNS": "120"})
    assert r.exit_code == 0
    for v in VARIANTS.values():
        assert v.name in r.stdout and v.formula in r.stdout
    assert "W1 [h, d_a, d_q]" in r.stdout  # brackets are text, not Rich markup


def test_variants_jsonl_and_csv_have_one_row_per_variant():
    lines = runner.invoke(app, ["variants", "-f", "jsonl"]).stdout.splitlines()
    assert [json.loads(line)["name"] for line in lines] == list(VARIANTS)
    rows = list(csv.DictReader(io.StringIO(runner.invoke(app, ["variants", "-f", "csv"]).stdout)))
    assert [row["name"] for row in rows] == list(VARIANTS)
    assert json.loads(rows[-1]["parameters"]) == VARIANTS[rows[-1]["name"]].param_shapes


def test_variants_rejects_array_formats():
    r = runner.invoke(app, ["variants", "-f", "npy"])
    assert r.exit_code == 2 and "npy" in r.stderr
