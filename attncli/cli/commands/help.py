"""`attn help [COMMAND]`: the help of attn, or of one command, as `--help` prints it."""

from __future__ import annotations

from typing import Annotated

import typer

Command = Annotated[
    str | None, typer.Argument(help="The command to explain; none: attn and its commands.", show_default=False)
]


def help(ctx: typer.Context, command: Command = None) -> None:
    """Show the help of attn, or of one COMMAND (as attn COMMAND --help does)."""
    root = ctx.find_root()
    if command is None:
        typer.echo(root.get_help())
        return
    group = root.command
    found = group.get_command(root, command)  # type: ignore[attr-defined]
    if found is None:
        from attncli.cli.usage import unknown_command

        raise unknown_command(command, group.list_commands(root))  # type: ignore[attr-defined]
    typer.echo(found.get_help(found.context_class(found, info_name=command, parent=root)))
