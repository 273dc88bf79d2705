"""Mistakes on the command line get attn's own one line (`Error: ...`, exit 2) with a hint that helps, or none:
quote a text of several words, the command or option meant when it is close, the commands that take an option."""

from __future__ import annotations

import pytest

from tests.conftest import attn, refused


def one_line(args, *wanted: str, unwanted: tuple[str, ...] = ()) -> str:
    """A wrong command line: conftest's `refused` with exit 2, in attn's words, never Click's usage text."""
    r = attn(*args)
    line = refused(r, *wanted, code=2).rstrip("\n")
    assert "Usage:" not in r.output and "Try " not in r.output, (args, r.output)
    for u in unwanted:
        assert u not in line, (args, line)
    return line


def test_words_of_an_unquoted_text_say_to_quote_it():
    one_line(["show", "hello", "world"], "quote", 'attn show "hello world"')
    one_line(["steps", "time", "flies", "like"], 'attn steps "time flies like"', "3 words")
    one_line(["compute", "x"], "attn compute takes no text", "'x'")


def test_a_mistyped_command_is_named_when_it_is_close():
    one_line(["shwo", "x"], "no command 'shwo'", "did you mean `attn show`")
    one_line(["frobnicate"], "no command 'frobnicate'", "the commands are show, steps", unwanted=("did you mean",))


@pytest.mark.parametrize(
    "args, wanted, unwanted",
    [
        (["tokens", "x", "--heads", "2"], ["no option --heads", "it is an option of attn show"], ["--help?"]),
        (["steps", "x", "--rollout"], ["no option --rollout", "it is an option of attn show"], ["--color"]),
        (["show", "x", "--colour", "never"], ["did you mean --color?"], []),
        (["show", "x", "--bogus"], ["attn show has no option --bogus"], ["did you mean", "it is an option"]),
        (["--bogus"], ["attn has no option --bogus"], ["did you mean"]),
    ],
)
def test_an_unknown_option_suggests_only_a_close_one_or_the_commands_that_take_it(args, wanted, unwanted):
    one_line(args, *wanted, unwanted=tuple(unwanted))


def test_clicks_other_usage_errors_are_one_line_too():
    one_line(["show", "x", "--layer", "x"], "invalid value for '--layer'", "(attn show --help)")
    one_line(["show", "x", "--heads"], "'--heads' requires an argument")
    one_line(["show", "x", "-f", "nope"], "'nope' is not one of")


def test_attn_help_is_the_help_of_attn_or_of_a_command():
    assert attn("help").stdout == attn("--help").stdout and attn("help").exit_code == 0
    for command in ("show", "heads", "help"):
        r = attn("help", command)
        assert r.exit_code == 0 and r.stdout == attn(command, "--help").stdout
    one_line(["help", "shwo"], "did you mean `attn show`")


def _options():
    """(command, option) for every option of every command: its first flag, and a value it takes (None: a flag)."""
    import typer

    from attncli.cli.app import COMMANDS, app

    group = typer.main.get_command(app)
    ctx = group.make_context("attn", ["help"], resilient_parsing=True)
    for name in COMMANDS:
        command = group.get_command(ctx, name)
        for p in command.params:
            if p.param_type_name != "option" or p.is_eager:
                continue
            choices = getattr(p.type, "choices", None)
            value = None if p.is_flag else str(next(iter(choices))) if choices else "1"
            yield name, p.opts[-1], value, p.multiple


@pytest.mark.parametrize("command, flag, value, multiple", list(_options()), ids=lambda x: str(x))
def test_an_option_given_twice_is_refused_in_one_line_unless_it_accumulates(command, flag, value, multiple):
    once = [flag] if value is None else [flag, value]
    args = [command, *once, *once]
    if multiple:
        assert "more than once" not in attn(*args).stderr
    else:
        one_line(args, f"{flag} is given more than once", "the last would silently replace the others")
