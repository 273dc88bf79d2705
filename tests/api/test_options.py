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
from attncli.api.options import GROUP, MODEL, RUN
from attncli.api.own import EVERY
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


# rows whose command line default is not the API's, and why
API_DEFAULT = {
    "workers": "the command line's None is the cores (at most 4); the API's 1 runs the lines in this process",
    "path": "the command line's None (no --path) is the API's () (no folder of the user's)",
    "steps_query": "the command line reads a token or an index as text ('0'); the API's is the index 0",
}
NAMED = [r for r in EVERY if r not in RUN]  # the rows each function names in its own signature


@pytest.mark.parametrize("name", sorted({o for row in NAMED for o in row.functions.split()}))
def test_an_option_is_in_each_signature_the_table_names_with_the_tables_default(name):
    """The options of a model's run and each command's own stay in their functions' own signatures (the bodies read
    them one by one), with the row's default (or required, where the function cannot go without it: patch's
    corrupt=) and its kind (a function with a keyword of the same name the row does not list takes another option:
    heads' required model; KEYWORDS has one row per keyword of a function)."""
    own = inspect.signature(getattr(api, name).__wrapped__).parameters
    for row in (r for r in NAMED if name in r.functions.split()):
        default = own[row.name].default
        assert default in (row.default, inspect.Parameter.empty) or row.id in API_DEFAULT, (name, row.id)
        assert own[row.name].kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        assert KINDS[(name, row.name)] is row.kind


def test_each_row_is_one_option():
    ids = [r.id for r in EVERY]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert all(r.range is None or r.kind.plain(r.range.least) == r.range.least for r in EVERY)


COMMANDS = sorted({c for row in EVERY for c in row.commands.split() if c != GROUP})


@pytest.mark.parametrize("name", COMMANDS)
def test_each_commands_typer_option_is_the_tables_row(name):
    """Each option a command offers from the table is its row: flags, help, default, choices. A row of Source or
    Out (GROUP) is each command's that takes the group; -f's help adds the formats of what a command writes."""
    params = {p.name: p for p in _command(name).params}
    rows = [r for r in EVERY if name in r.commands.split() or (r.commands == GROUP and r.name in params)]
    assert {r.name for r in rows if r.commands == GROUP} >= {"fmt", "output"} & set(params)
    for row in rows:
        param = params[row.name]
        assert tuple(param.opts) == row.flags, (name, row.id)
        assert param.help == row.help or (row.name == "fmt" and param.help.startswith(row.help[:14])), (name, row.id)
        assert param.default == row.default and param.show_default is row.show_default
        if row.choices is not None:
            assert tuple(param.type.choices) == tuple(row.choices())


def test_every_command_offers_the_tables_options_only():
    """No command offers an option that is not a row of the table (TEXT is an argument; --version is attn's)."""
    known = {f for row in EVERY for f in row.flags}
    from attncli.cli.app import COMMANDS as NAMES

    offered = {f for n in NAMES if n != "help" for p in _command(n).params for f in p.opts if f.startswith("-")}
    assert offered <= known, offered - known


def _typer_flags(tree: ast.AST):
    """(line, flags) of every typer.Option(...) call of a module, its string arguments (a row's are its fields)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Option":
            yield node.lineno, {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}


def test_no_module_declares_a_tables_option_again():
    flags = {f for row in EVERY for f in row.flags}
    names = {row.name: row for row in RUN}
    found = []
    for path in sorted((PACKAGE / "cli").rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        for line, given in _typer_flags(ast.parse(path.read_text())):
            found += [(where, line, f) for f in given & flags]
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
    """Each row's help is written once in the package: in api/options.py, or api/own.py for a command's own."""
    for row in EVERY:
        holders = [p for p in PACKAGE.rglob("*.py") if row.help[:40] in p.read_text()]
        where = "api/options.py" if row in MODEL + RUN or row.commands == GROUP else "api/own.py"
        shared = "api/options.py" if row.id == "model_context" else where  # a model's --context, said once
        assert [p.relative_to(PACKAGE).as_posix() for p in holders] == [shared], row.id


def test_the_pipelines_config_agrees_with_the_table():
    """RunConfig (the pipeline's, below the API) keeps a default of each option, and RANGES the ranges it checks:
    the same options, the same defaults as the table's rows."""
    from dataclasses import fields

    from attncli.pipeline.config import RunConfig
    from attncli.pipeline.ranges import RANGES

    field = {"dk": "d_k", "dv": "d_v"}  # RunConfig's names of --dk and --dv
    defaults = {f.name: f.default for f in fields(RunConfig)} | {"mask": None}  # its masks are a tuple, () for none
    for row in RUN:
        if row.name != "context":  # the run's second text, not a choice of its config
            assert defaults[field.get(row.name, row.name)] == row.default, row.name
    assert set(RANGES) >= {"dim", "heads", "dk", "dv", "d_a", "seed", "rank", "features"}


def test_each_range_is_an_options():
    """pipeline/ranges.py's RANGES holds each range once: every entry is an option a command offers (by the flag
    its message names), and the messages are the one check's."""
    from attncli.cli.app import COMMANDS
    from attncli.pipeline.ranges import RANGES, check_range

    flags = {f for name in COMMANDS if name != "help" for p in _command(name).params for f in p.opts}
    for name, bound in RANGES.items():
        flag = bound.flag or "--" + name.replace("_", "-")
        assert flag in flags, name
        with pytest.raises(ConfigError, match=f"^{flag} must be (between|at least) "):
            check_range(name, bound.least - 1)
        check_range(name, bound.least)


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
