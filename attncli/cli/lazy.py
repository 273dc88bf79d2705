"""Commands imported and built when they are used: `attn --help` lists every command from a table of one-line
summaries, and `attn show` imports and builds show alone, never the others (their modules, option types,
choices and the registries behind them).

`LazyTyper` is a `typer.Typer` given that table, `{name: summary}`, and the package that holds one module per
command, `package.name`, which defines the function `name`. Its group imports that module and builds the
command (Typer's own `@app.command()` and `get_command_from_info`) the first time the name is looked up.
A new command is one module and one line of the table.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info


class LazyGroup(TyperGroup):
    """A group whose commands are names and summaries until one is looked up (run, or its --help shown)."""

    app: ClassVar[LazyTyper]  # set on the subclass LazyTyper makes, one per app

    def list_commands(self, ctx) -> list[str]:  # in the order of the table
        return [*self.app.summaries, *(name for name in self.commands if name not in self.app.summaries)]

    def get_command(self, ctx, cmd_name: str):
        if cmd_name in self.app.summaries and cmd_name not in self.commands:
            self.commands[cmd_name] = get_command_from_info(
                self.app.command_info(cmd_name),
                pretty_exceptions_short=self.app.pretty_exceptions_short,
                rich_markup_mode=self.rich_markup_mode,
            )
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx, formatter) -> None:
        """The command list of `attn --help`: each command's summary whole, wrapped to the width (never cut with
        `...`), without importing any command."""
        rows = [(name, summary) for name, summary in self.app.summaries.items()]
        rows += [
            (n, summary_of(c.help)) for n, c in self.commands.items() if n not in self.app.summaries and not c.hidden
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def summary_of(help: str | None) -> str:
    r"""A command's summary: the first paragraph of its help, on one line.

    >>> summary_of("List the tokens,\n    ids and offsets.\n\n    More.")
    'List the tokens, ids and offsets.'
    """
    return " ".join(inspect.cleandoc(help or "").split("\n\n")[0].split())


class LazyTyper(typer.Typer):
    """`typer.Typer` whose commands are the modules of `package`, imported on first use (`cls`: a LazyGroup;
    `command_cls`: the class of every command)."""

    def __init__(
        self,
        *,
        cls: type[LazyGroup],
        command_cls: type[TyperCommand],
        package: str,
        commands: dict[str, str],
        **kwargs: Any,
    ):
        self.package = package
        self.command_cls = command_cls
        self.summaries = commands
        super().__init__(cls=type(cls.__name__, (cls,), {"app": self, "__module__": cls.__module__}), **kwargs)

    def command_info(self, name: str):
        """The CommandInfo `@app.command()` records for the function `name` of the module `package.name`."""
        # __import__, not importlib.import_module: -X importtime logs only the imports that go through it
        callback = getattr(__import__(f"{self.package}.{name}", fromlist=[name]), name)
        self.command(name, cls=self.command_cls)(callback)
        return self.registered_commands.pop()
