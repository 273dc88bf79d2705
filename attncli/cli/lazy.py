"""Commands built when they are used: `attn --help` lists every command from its docstring, and `attn show`
builds show's options only, never the others' (their option types, choices and the registries behind them).

`LazyTyper` is a `typer.Typer` whose `@app.command()` records the function as Typer would and leaves it
unbuilt; its group builds a command (Typer's own `get_command_from_info`) the first time it is looked up. A
new command stays one short function under `@app.command()`.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info
from typer.models import CommandInfo


class LazyGroup(TyperGroup):
    """A group whose commands are `CommandInfo`s until one is looked up (run, or its --help shown)."""

    app: ClassVar[LazyTyper]  # set on the subclass LazyTyper makes, one per app

    def list_commands(self, ctx) -> list[str]:  # in the order they were declared
        return [*self.app.lazy, *(name for name in self.commands if name not in self.app.lazy)]

    def get_command(self, ctx, cmd_name: str):
        info = self.app.lazy.get(cmd_name)
        if info is not None and cmd_name not in self.commands:
            self.commands[cmd_name] = get_command_from_info(
                info, pretty_exceptions_short=self.app.pretty_exceptions_short, rich_markup_mode=self.rich_markup_mode
            )
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx, formatter) -> None:
        """The command list of `attn --help`, each line the first sentence of its docstring (as Click words it),
        without building any command."""
        rows = [(name, _short_help(info)) for name, info in self.app.lazy.items() if not info.hidden]
        built = [(name, cmd) for name, cmd in self.commands.items() if name not in self.app.lazy and not cmd.hidden]
        if not rows and not built:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in [*rows, *built])
        lines = [(name, short(limit)) for name, short in rows] + [(n, c.get_short_help_str(limit)) for n, c in built]
        with formatter.section("Commands"):
            formatter.write_dl(lines)


def _short_help(info: CommandInfo):
    """limit -> the short help Click would show for the built command."""
    text = info.help if info.help is not None else inspect.getdoc(info.callback)
    stub = TyperCommand(name="-", help=text, short_help=info.short_help, deprecated=bool(info.deprecated))
    return stub.get_short_help_str


class LazyTyper(typer.Typer):
    """`typer.Typer` with commands built on first use (`cls` must be a LazyGroup)."""

    def __init__(self, *, cls: type[LazyGroup], **kwargs: Any):
        self.lazy: dict[str, CommandInfo] = {}
        super().__init__(cls=type(cls.__name__, (cls,), {"app": self, "__module__": cls.__module__}), **kwargs)

    def command(self, *args: Any, **kwargs: Any):
        """Typer's `@app.command()`, with the command kept unbuilt until `attn NAME` looks it up."""
        record = super().command(*args, **kwargs)

        def decorate(f):
            record(f)
            info = self.registered_commands.pop()
            self.lazy[info.name or f.__name__.lower().replace("_", "-")] = info
            return f

        return decorate
