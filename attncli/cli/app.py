"""The `attn` command: the table of its commands (each in its own module, cli/commands/NAME.py, imported only
when it runs or its help is shown), --version, and the entry point.

Errors from the core (AttnError) become one line `Error: ...` on stderr and the error's exit code, here in
one place (`AttnGroup`).
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
import threading
import warnings
from typing import Annotated, NoReturn

if not {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"} & set(os.environ):
    # Before NumPy loads: attn's matrices are small, and a --model pass on a sentence takes 60 ms on one BLAS
    # thread but 0.3-0.9 s with several on a busy machine. Set any of these variables to override.
    os.environ["OPENBLAS_NUM_THREADS"] = "1"

if collecting := gc.isenabled():
    # Start-up: what these imports make (Typer's and Click's modules, classes and functions) lives as long as the
    # process, and Python's collector would scan it again and again as it loads, finding nothing to collect: it
    # is paused while they load, then all is frozen, never scanned again (about 5 ms of `attn show`'s 190).
    gc.disable()

import typer
from typer.core import TyperCommand

from attncli import __version__
from attncli.cli.lazy import LazyGroup, LazyTyper
from attncli.cli.signals import Stopped, stop_on_signals
from attncli.errors import AttnError, ConfigError, DataError
from attncli.io.escape import escape_text

gc.freeze()
if collecting:
    gc.enable()


def fail(error: AttnError):
    """Print the one line `Error: ...` and exit with the error's code (ATTN_DEBUG=1 shows the traceback)."""
    if os.environ.get("ATTN_DEBUG") == "1":
        raise error
    typer.echo(f"Error: {escape_text(str(error))}", err=True)  # one line, and a path or token in it stays inert
    raise typer.Exit(error.exit_code)


# Click's exception base, whichever Click Typer runs on (recent Typer vendors its own copy as typer._click).
ClickException: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class AttnCommand(TyperCommand):
    """A command whose surplus words are attn's usage error (quote the text), not Click's."""

    paused = False  # main() paused Python's collector while attn starts: the command resumes it as it runs

    def invoke(self, ctx):
        if AttnCommand.paused:  # what start-up made (the command's module, its options) lives as long as the process
            AttnCommand.paused = False
            gc.freeze()  # never scanned again
            gc.enable()
        return super().invoke(ctx)

    def parse_args(self, ctx, args):
        ctx.allow_extra_args = True  # Click keeps the surplus in ctx.args instead of failing in its own words
        if not ctx.resilient_parsing:
            self._once(ctx, args)
        rest = super().parse_args(ctx, args)
        if ctx.args and not ctx.resilient_parsing:
            from attncli.cli.usage import extra_arguments  # late: start-up (only for a wrong command line)

            raise extra_arguments(ctx, ctx.args)
        return rest

    def _once(self, ctx, args) -> None:
        """An option that takes one value, given twice, is a ConfigError: Click would keep the last one silently
        (`--color never ... --color always`); an option that accumulates (`compare --model A --model B`) may
        repeat. Read with Click's own parser, whose order lists an option each time it is given."""
        try:
            order = self.make_parser(ctx).parse_args(args=list(args))[2]
        except ClickException:  # Click's usage error, said in attn's words when the command line is parsed
            return
        seen: set[str | None] = set()
        for param in order:
            if param.param_type_name != "option" or param.multiple or getattr(param, "count", False):
                continue  # TEXT, and options that accumulate
            if param.name in seen:
                raise ConfigError(
                    f"{'/'.join(param.opts)} is given more than once: it is not repeated, and the last would "
                    "silently replace the others"
                )
            seen.add(param.name)


class AttnGroup(LazyGroup):
    """Translates the core's errors, Click's usage errors and unexpected ones into one line and an exit code:
    2 for the command line (a ConfigError), 1 for data that cannot be used, the error's own otherwise."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except ClickException as e:
            if type(e).__name__ == "NoArgsIsHelpError":  # bare `attn`: the help, as `attn --help` prints it
                typer.echo(e.ctx.get_help())  # type: ignore[attr-defined]
                raise typer.Exit(0) from None
            from attncli.cli.usage import from_click  # late: start-up (only for a wrong command line)

            fail(from_click(e, self))

    def resolve_command(self, ctx, args):
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            from attncli.cli.usage import unknown_command  # late: start-up (only for a wrong command line)

            raise unknown_command(args[0], self.list_commands(ctx))
        return super().resolve_command(ctx, args)

    def invoke(self, ctx):
        try:
            with warnings.catch_warnings():
                # NumPy's floating-point warnings print source lines; every value that goes non-finite is
                # caught by a check that names it (an overflow, a NaN weight) and said in one line instead
                warnings.simplefilter("ignore", RuntimeWarning)
                return super().invoke(ctx)
        except AttnError as e:
            fail(e)
        except ClickException as e:
            from attncli.cli.usage import from_click  # late: start-up (only for a wrong command line)

            fail(from_click(e, self))
        except (typer.Exit, typer.Abort, BrokenPipeError):
            raise
        except OSError as e:
            from attncli.io.write import WRITE_ERRORS  # late: start-up (--help and --version load no output machinery)

            if e.errno not in WRITE_ERRORS:
                raise
            fail(DataError(f"cannot write the output: {e.strerror}"))  # stdout on a full disk, say
        except MemoryError:  # the budget's estimates (pipeline/budget.py) missed what the machine could give
            fail(
                DataError(
                    "out of memory: the machine could not give this run what it asked for (a shorter text, or a "
                    "lower ATTN_MAX_MEMORY, under which a model's layers are streamed)"
                )
            )
        except Exception as e:
            if type(e).__module__.startswith(("typer", "click")):  # Click's own control flow
                raise
            fail(AttnError(f"internal error: {type(e).__name__}: {e} (run with ATTN_DEBUG=1 for the traceback)"))


# Every command, in the order `attn --help` lists them: its name, and the first line of its help (what the list
# shows without importing the command). The command is the function NAME of attncli/cli/commands/NAME.py.
COMMANDS = {
    "show": "Show the attention matrix and the output vectors of TEXT.",
    "steps": "Walk through every stage, tokens to outputs.",
    "view": "Write an interactive page of TEXT: head, model, matrix and steps views, in one self-contained HTML file.",
    "explore": "Move through the attention of TEXT with the keyboard: a full-screen app (? lists the keys, q quits).",
    "tokens": "List the tokens, ids and character offsets.",
    "compare": "Compare tokenizers and variants side by side.",
    "compute": "Attention on your own Q, K, V (one head, no projection): JSON on stdin or --input, or .npy files.",
    "variants": "List the attention variants: formula, parameters and their shapes, paper, notes.",
    "heads": "Every head of a real model at a glance, layers × heads.",
    "ablate": "Switch a decoder's heads off one at a time: how each moves the logit of the next token.",
    "patch": "Activation patching: which layer, position or head of a clean run restores its answer in a corrupt one.",
    "dla": "Direct logit attribution: each head's and MLP's share of a decoder's next-token logit, summing to it.",
    "knockout": "Attention knockout: block the edges from a position to a span, a window of layers at a time.",
    "lens": "The logit lens: what a decoder would predict next after each layer, layers × positions.",
    "models": "List every model attn can open on this machine, offline.",
    "help": "Show the help of attn, or of one COMMAND (as attn COMMAND --help does).",
}

app = LazyTyper(
    cls=AttnGroup,
    command_cls=AttnCommand,
    package="attncli.cli.commands",
    commands=COMMANDS,
    help="Inspect attention in the terminal: tokens, scores, weights and outputs, exact and reproducible.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"attn {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Inspect attention in the terminal: tokens, scores, weights and outputs, exact and reproducible."""
    from attncli.io.console import columns  # late: start-up (--help and --version load no output machinery)

    problem = columns(os.environ)[1]
    if problem:
        from attncli.cli.text import say  # late: start-up (only when COLUMNS is unusable)

        say(problem)


def main() -> NoReturn:
    """Console-script entry point: run the app; a closed pipe (`| head`) ends quietly; a signal ends it cleanly;
    then the process ends at once (`leave`)."""
    try:
        _run()
    except SystemExit as done:
        leave(done.code)
    leave(0)


def leave(code: object) -> NoReturn:
    """End the process with SystemExit's `code` once the exit handlers (worker pools, temporary files) have run
    and stdout and stderr are flushed, without Python's teardown: clearing every module (NumPy's, Rich's,
    Typer's, attn's) frees their objects one by one, about 9 ms of `attn show`'s 190 that nothing waits on
    (attn closes every file it writes). Python's own exit instead when it has more to do: a thread still
    running, which it joins, or a code that is not a number, which it prints."""
    if threading.active_count() > 1 or not (code is None or isinstance(code, int)):
        raise SystemExit(code)
    atexit._run_exitfuncs()  # what Python's exit runs first (and then forgets them)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # started with stderr closed (2>&-)
                stream.flush()
    except (OSError, ValueError):  # a stream that cannot be flushed: Python's exit says so, as without `leave`
        raise SystemExit(code) from None
    os._exit(code or 0)


def _run() -> None:
    # If the process does not end by `leave` (a thread still running), Python's finalization would still run its
    # collector twice over every object (every module's, NumPy's, Typer's: 47 M of `attn show`'s 958 M
    # instructions). Frozen at exit, they are left to the process's end.
    atexit.register(gc.freeze)
    if gc.isenabled():  # until the command runs (AttnCommand.invoke): importing it, building it, parsing its options
        gc.disable()
        AttnCommand.paused = True
    if sys.stdin is None or sys.stdout is None:  # started with one closed (<&-, >&-): using it is one line
        from attncli.io.closed import stand_in  # late: start-up (only when started with one closed)

        stand_in()
    stop_on_signals()
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a token (PYTHONIOENCODING=ascii)
        if hasattr(stream, "reconfigure"):  # shows it as \u0120 rather than failing on it
            stream.reconfigure(errors="backslashreplace")
    try:
        try:
            app()
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except AttnError as e:  # before any command runs: --help into a closed stdout
        typer.echo(f"Error: {escape_text(str(e))}", err=True)
        sys.exit(e.exit_code)
    except Stopped as stop:
        signal.signal(stop.signum, signal.SIG_IGN)  # a second one while we leave changes nothing
        sys.exit(128 + stop.signum)
    except OSError as e:  # the last flush of stdout failed: a full disk behind a redirect
        from attncli.io.write import WRITE_ERRORS  # late: start-up (--help and --version load no output machinery)

        if e.errno not in WRITE_ERRORS:
            raise
        typer.echo(f"Error: cannot write the output: {e.strerror}", err=True)
        sys.exit(DataError.exit_code)
