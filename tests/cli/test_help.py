"""Help tells the truth: each command's -f offers exactly the formats that write what it makes, and each of them
does; no summary of `attn --help` is cut, at any width."""

from __future__ import annotations

import pytest
import typer

from attncli.cli.app import COMMANDS, app
from tests.conftest import ROOT, attn
from tests.model_fixtures import make_bert

RUNS = {  # a command line of each command that writes a document
    "show": ["show", "time flies"],
    "steps": ["steps", "time flies"],
    "view": ["view", "time flies"],
    "tokens": ["tokens", "time flies"],
    "compare": ["compare", "time flies"],
    "compute": ["compute", "--input", str(ROOT / "docs" / "two_by_two.json")],
    "variants": ["variants"],
    "heads": ["heads", "time flies", "--model", "BERT"],
}


def offered(command: str) -> list[str]:
    group = typer.main.get_command(app)
    ctx = group.make_context("attn", [command, "--help"], resilient_parsing=True)
    found = group.get_command(ctx, command)
    return [c for p in found.params if "--format" in p.opts for c in p.type.choices]


@pytest.mark.parametrize("command", list(RUNS))
def test_every_format_the_help_offers_writes_and_no_other_is_offered(command, tmp_path_factory):
    from attncli.io.formats import FORMATS

    bert = str(make_bert(tmp_path_factory.mktemp("m") / "bert"))
    args = [bert if a == "BERT" else a for a in RUNS[command]]
    names = offered(command)
    assert names, command
    for name in FORMATS:
        out = tmp_path_factory.mktemp("out") / f"out.{name}"
        r = attn(*args, "-f", name, "-o", out)
        if name not in names:
            assert r.exit_code == 2 and f"'{name}' is not one of" in r.stderr, (command, name, r.stderr)
        elif name == "parquet" and "needs pyarrow" in r.stderr:
            continue  # the optional extra: offered, and its absence said in one line
        else:
            assert r.exit_code == 0 and out.stat().st_size > 0, (command, name, r.stderr)


def test_show_says_what_lines_write():
    r = attn("show", "--help", env={"COLUMNS": "200"})
    help_text = " ".join(r.stdout.split())
    assert "with --lines: table, jsonl, csv, svg, html (default jsonl)" in help_text
    assert "parquet" not in help_text.split("--format", 1)[1].split("-o,")[0]


def test_view_writes_a_page_or_its_data_and_refuses_a_picture_in_one_line(tmp_path):
    assert offered("view") == ["json", "html"]
    r = attn("view", "time flies", "-o", tmp_path / "x.svg")
    said = "Error: attn view writes an HTML page (-o FILE.html) or its data (-f json), not svg\n"
    assert r.exit_code == 2 and r.stderr == said
    assert not (tmp_path / "x.svg").exists()


@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_no_summary_is_cut(columns):
    commands = attn("--help", env={"COLUMNS": columns}).stdout.split("Commands:")[1]
    assert "..." not in commands
    for name, summary in COMMANDS.items():
        assert " ".join(summary.split()) in " ".join(commands.replace("-\n", "-").split()), name
