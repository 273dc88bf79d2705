"""Mistakes on the command line in attn's own words: a ConfigError (one line, exit 2) for each of Click's usage
errors, with a hint that helps or none: quote a text of several words, the command or option meant (only a close
one), the commands that do take an option.

    >>> str(unknown_command("shwo", ["show", "steps"]))
    "no command 'shwo': did you mean `attn show`? the commands are show, steps (attn --help)"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from attncli.errors import ConfigError, meant


def unknown_command(name: str, commands: Iterable[str]) -> ConfigError:
    commands = list(commands)
    close = meant(name, commands)
    hint = f"did you mean `attn {close}`? " if close else ""
    return ConfigError(f"no command {name!r}: {hint}the commands are {', '.join(commands)} (attn --help)")


def _path(ctx: Any) -> str:
    """`attn COMMAND` as the user typed it (whatever name the program was run by)."""
    return "attn" if ctx.parent is None else f"attn {ctx.info_name}"


def extra_arguments(ctx: Any, extra: list[str]) -> ConfigError:
    """More words than the command takes: a text of several words is one argument, in quotes."""
    command = _path(ctx)
    text = ctx.params.get("text")
    if "text" not in ctx.params:  # a command without TEXT
        return ConfigError(f"{command} takes no text, got {' '.join(extra)!r} (options start with -)")
    words = " ".join([text, *extra]) if text is not None else " ".join(extra)
    return ConfigError(
        f"{command} takes one TEXT, got {len(extra) + (text is not None)} words: quote a text of several words, "
        f'as in {command} "{words}"'
    )


def from_click(error: Any, group: Any) -> ConfigError:
    """Click's usage error (an unknown option, a bad value, a missing argument) as one line in attn's words;
    `group` is the `attn` group, asked which commands take an unknown option."""
    ctx = getattr(error, "ctx", None)
    name = getattr(error, "option_name", None)
    if type(error).__name__ == "NoSuchOption" and ctx is not None and name:
        return unknown_option(name, ctx, group)
    message = " ".join(error.format_message().split()).rstrip(".")  # one line
    if type(error).__name__ == "BadOptionUsage" and "requires" in message:  # the last word, left without its value
        message += ": is the variable you meant empty?"  # `attn lens TEXT --model $SMOLLM2` with SMOLLM2 unset
    where = f" ({_path(ctx)} --help)" if ctx is not None else " (attn --help)"
    return ConfigError(message[:1].lower() + message[1:] + where)


def unknown_option(name: str, ctx: Any, group: Any) -> ConfigError:
    """An option the command does not have: a close one of its own, or the commands that take it, or neither."""
    command = _path(ctx)
    own = [opt for p in ctx.command.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")]
    long = {opt.lstrip("-"): opt for opt in own if opt.startswith("--")}
    close = meant(name.lstrip("-"), long) if name.startswith("--") else None
    if close is not None:
        return ConfigError(f"{command} has no option {name}: did you mean {long[close]}? ({command} --help)")
    root = ctx.find_root()
    takers = [
        other
        for other in group.list_commands(root)
        if other != ctx.info_name
        and (cmd := group.get_command(root, other)) is not None
        and any(name in (*p.opts, *p.secondary_opts) for p in cmd.params)
    ]
    where = f": it is an option of attn {', '.join(takers)}" if takers else ""
    return ConfigError(f"{command} has no option {name}{where} ({command} --help lists its options)")
