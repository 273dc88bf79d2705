"""The options of a text run are declared once (api/options.py's RUN) and everything else is made from that row:
the API's signatures, their type checks, the commands' Typer options; and the rule of what a model may meet is one,
followed alike by the command line and the API (issue 38, item 1)."""

from __future__ import annotations

import ast
import inspect

import pytest
import typer

import attncli
from attncli import api
from attncli.api.keywords import KINDS
from attncli.api.options import MODEL, OPTIONS, RUN
from attncli.errors import ConfigError
from tests.conftest import ROOT, app, attn, refused

GPT2 = str(ROOT / "tests" / "models" / "golden" / "gpt2")
PACKAGE = ROOT / "attncli"
FUNCTIONS = {o: getattr(api, o) for row in RUN for o in row.functions.split()}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_each_api_signature_lists_the_tables_options_with_their_defaults(name):
    function = FUNCTIONS[name]
    own = inspect.signature(function.__wrapped__).parameters
    listed = inspect.signature(function).parameters
    for row in (r for r in RUN if name in r.functions.split()):
        assert row.name not in own, f"{name}() declares {row.name}= itself: it comes from api/options.py's RUN"
        assert listed[row.name].default == row.default and listed[row.name].kind is inspect.Parameter.KEYWORD_ONLY
        assert KINDS[(name, row.name)] is row.kind
    assert "run" not in listed  # help() and completion show the keywords, not **run


def test_help_of_the_api_lists_every_keyword_with_its_default():
    shown = inspect.signature(attncli.show)
    assert "heads: 'int' = 1" in str(shown) and "dk: 'int | None' = None" in str(shown)
    assert [p for p in shown.parameters][:3] == ["text", "tokenizer", "variant"]


def _command(name: str):
    group = typer.main.get_command(app)
    ctx = group.make_context("attn", [name, "--help"], resilient_parsing=True)
    return group.get_command(ctx, name)


@pytest.mark.parametrize("name", sorted({o for row in MODEL for o in row.functions.split()}))
def test_a_model_option_is_in_each_signature_the_table_names_with_the_tables_default(name):
    """The options of a model's run stay in their functions' own signatures (the bodies read them one by one), with
    the row's default and its kind (a function with a keyword of the same name the row does not list takes another
    option: heads' required model; KEYWORDS has one row per keyword of a function)."""
    own = inspect.signature(getattr(api, name).__wrapped__).parameters
    for row in (r for r in MODEL if name in r.functions.split()):
        assert own[row.name].default == row.default and own[row.name].kind is inspect.Parameter.KEYWORD_ONLY
        assert KINDS[(name, row.name)] is row.kind


@pytest.mark.parametrize("name", sorted({c for row in OPTIONS for c in row.commands.split()}))
def test_each_commands_typer_option_is_the_tables_row(name):
    params = {p.name: p for p in _command(name).params}
    for row in (r for r in OPTIONS if name in r.commands.split()):
        param = params[row.name]
        assert tuple(param.opts) == row.flags and param.help == row.help, (name, row.name)
        assert param.default == row.default and param.show_default is row.show_default
        if row.choices is not None:
            assert tuple(param.type.choices) == tuple(row.choices())


def _typer_flags(tree: ast.AST):
    """(line, flags) of every typer.Option(...) call of a module, its string arguments."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Option":
            yield node.lineno, {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}


# options that share a row's flag but are other options, each with its own meaning and help
NOT_THE_ROW = {
    ("cli/options.py", "--seed"): "attn compute's --seed seeds the learned variants' parameters only",
    ("cli/commands/heads.py", "--context"): "a model's sentence pair or source, not a text run's cross-attention",
    ("cli/commands/lens.py", "--context"): "an encoder–decoder's source",
    ("cli/commands/ablate.py", "--heads"): "the heads ablate switches off, LAYER.HEAD pairs",
    ("cli/model.py", "--model"): "attn compare's, which may be given several times (ModelDirs)",
    ("cli/commands/heads.py", "--model"): "a model heads cannot run without",
    ("cli/commands/lens.py", "--model"): "a decoder lens cannot run without",
    ("cli/commands/ablate.py", "--model"): "a decoder ablate cannot run without",
}


def test_no_module_declares_a_tables_option_again():
    flags = {f for row in OPTIONS for f in row.flags}
    names = {row.name: row for row in RUN}
    found = []
    for path in sorted((PACKAGE / "cli").rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        for line, given in _typer_flags(ast.parse(path.read_text())):
            found += [(where, line, f) for f in given & flags if (where, f) not in NOT_THE_ROW]
    for path in sorted((PACKAGE / "api").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in FUNCTIONS:
                taken = {a.arg for a in node.args.kwonlyargs} & set(names)
                found += [(path.name, node.lineno, n) for n in taken if node.name in names[n].functions.split()]
    assert not found, found


# (command line, API keywords, the refusal's words on each): the same options refused for the same reason
BOTH_WAYS = [
    (["show", "a b", "--model", GPT2, "--heads", "1"], ("show", {"model": GPT2, "heads": 1}), "drop --heads",
     "drop heads="),
    (["show", "a b", "--model", GPT2, "-d", "8", "--seed", "0"], ("show", {"model": GPT2, "dim": 8, "seed": 0}),
     "drop -d/--dim, --seed", "drop dim=, seed="),
    (["show", "a b", "--model", GPT2, "--dtype", "float32"], ("show", {"model": GPT2, "dtype": "float32"}),
     "drop --dtype", "drop dtype="),
    (["show", "a b", "--model", GPT2, "--max-tokens", "9"], ("show", {"model": GPT2, "max_tokens": 9}),
     "drop --max-tokens", "drop max_tokens="),
    (["steps", "a b", "--model", GPT2, "--mask", "causal"], ("steps", {"model": GPT2, "mask": "causal"}),
     "drop --mask", "drop mask="),
    (["tokens", "a b", "--model", GPT2, "-t", "word"], ("tokens", {"model": GPT2, "tokenizer": "word"}),
     "drop -t/--tokenizer", "drop tokenizer="),
    (["view", "a b", "--model", GPT2, "--positional", "none"], ("view", {"model": GPT2, "positional": "none"}),
     "drop --positional", "drop positional="),
    (["show", "a b", "--layer", "1", "--part", "cross"], ("show", {"layer": 1, "part": "cross"}),
     "--layer, --part need --model DIR", "layer= and part= need model="),
    (["show", "a b", "--generate", "2"], ("show", {"generate": 2}), "--generate needs --model DIR",
     "generate= needs model="),
    (["steps", "a b", "--head", "0"], ("steps", {"head": 0}), "--head needs --model DIR", "head= needs model="),
    (["compare", "a b", "--layer", "0"], ("compare", {"layer": 0}), "--layer needs --model DIR",
     "layer= needs model="),
]  # fmt: skip


@pytest.mark.parametrize("line, call, cli_words, api_words", BOTH_WAYS)
def test_a_model_meets_the_same_options_on_the_command_line_and_in_the_api(line, call, cli_words, api_words):
    refused(attn(*line), cli_words, code=2)
    function, keywords = call
    with pytest.raises(ConfigError) as e:
        getattr(attncli, function)("a b", **keywords)
    assert api_words in str(e.value)


def test_what_both_let_a_model_meet():
    """The default variant is what a model does (given, it is not refused); a text run's own --head is not a
    model's; compare's options shape the runs the model's layer is set beside."""
    for line, call in [
        (
            ["show", "a b", "--model", GPT2, "-v", "scaled", "-f", "json"],
            ("show", {"model": GPT2, "variant": "scaled"}),
        ),
        (["show", "a b", "--head", "0", "-f", "json"], ("show", {"head": 0})),
        (["compare", "a b", "--model", GPT2, "--heads", "2", "-f", "json"], ("compare", {"model": GPT2, "heads": 2})),
    ]:
        assert attn(*line).exit_code == 0
        getattr(attncli, call[0])("a b", **call[1])


def test_none_and_false_are_not_given():
    attncli.show("a b", model=GPT2, dk=None, no_weights=False, layer=None)


def test_the_table_is_the_one_place_of_a_run_options_help():
    """Each row's help is written once in the package: in api/options.py."""
    for row in OPTIONS:
        holders = [p for p in PACKAGE.rglob("*.py") if row.help[:40] in p.read_text()]
        assert [p.relative_to(PACKAGE).as_posix() for p in holders] == ["api/options.py"], row.name


def test_the_pipelines_config_agrees_with_the_table():
    """RunConfig (the pipeline's, below the API) keeps a default of each option, and RANGES the ranges it checks:
    the same options, the same defaults as the table's rows."""
    from dataclasses import fields

    from attncli.pipeline.config import RANGES, RunConfig

    field = {"dk": "d_k", "dv": "d_v"}  # RunConfig's names of --dk and --dv
    defaults = {f.name: f.default for f in fields(RunConfig)} | {"mask": None}  # its masks are a tuple, () for none
    for row in RUN:
        if row.name != "context":  # the run's second text, not a choice of its config
            assert defaults[field.get(row.name, row.name)] == row.default, row.name
    assert set(RANGES) <= {row.name for row in RUN}


def test_the_model_rule_names_only_options_that_exist():
    """Every name the one rule lists (options a model has no use without, options always fine with one, each
    command's own that still apply) is an option of a command or a keyword of the API."""
    from attncli.api.options import BOTH, KEEP, MODEL_ONLY, SAMPLING, WITH_MODEL
    from attncli.cli.app import COMMANDS

    offered = {p.name for name in COMMANDS if name != "help" for p in _command(name).params}
    keywords = {name for (_, name) in KINDS}
    listed = {*MODEL_ONLY, *WITH_MODEL, *SAMPLING, *(n for k in KEEP.values() for n in k or ()), *BOTH["show"]}
    assert listed <= offered | keywords, listed - offered - keywords
    assert set(KEEP) <= set(COMMANDS) and set(BOTH) <= set(KEEP)
