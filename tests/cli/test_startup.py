"""Start-up follows from the layout: the commands that need no maths load no NumPy, a text run no model code,
and a command builds (and imports the registries for) its own options only."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT


def imported(*args: str) -> set[str]:
    """The modules `attn ARGS` imports, read from Python's own import log (-X importtime)."""
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "attncli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["variants"], ["variants", "-f", "json"], ["show", "-h"]])
def test_commands_without_maths_import_no_numpy(args):
    modules = imported(*args)
    assert "attncli.cli.app" in modules
    assert "numpy" not in modules


@pytest.mark.parametrize("args", [["--help"], ["show", "time flies like an arrow"], ["explore", "-h"]])
def test_only_attn_explore_imports_textual(args):
    """Textual (a full-screen app framework) loads for `attn explore` alone, and only once it runs."""
    assert not {m for m in imported(*args) if m == "textual" or m.startswith(("textual.", "attncli.render.explore"))}


# What `attn --help` and `--version` used to load (about 40 ms): every command's options built at start-up, and
# with them the registries behind their choices, the output machinery and the memory guard.
NOT_FOR_HELP = [
    "attncli.core.variants",
    "attncli.io.formats",
    "attncli.io.documents",
    "attncli.io.output",
    "attncli.io.console",
    "attncli.io.write",
    "attncli.pipeline.limits",
    "attncli.pipeline.config",
    "attncli.pipeline.tokenize",
    "attncli.cli.hints",
    "rich",
    "tempfile",
    "json",
]


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_load_no_registry_and_no_output_machinery(args):
    assert not imported(*args) & set(NOT_FOR_HELP)


# All of attncli that `attn --help` and `--version` load: the app, its command table and its error line (they
# used to load every command's options and the model options with them, about a third of their start-up).
FOR_HELP = {"attncli", "attncli.cli", "attncli.cli.app", "attncli.cli.lazy", "attncli.cli.signals", "attncli.errors"}
FOR_HELP |= {"attncli.io", "attncli.io.escape"}


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_load_the_app_alone(args):
    assert {m for m in imported(*args) if m.split(".")[0] == "attncli"} == FOR_HELP


def test_help_lists_every_command_without_building_one():
    from typer.main import get_command

    from attncli.cli.app import app

    group = get_command(app)
    listed = group.list_commands(None)  # type: ignore[arg-type]
    assert listed[:4] == ["show", "steps", "view", "explore"] and "variants" in listed
    assert not group.commands  # type: ignore[attr-defined]
    assert group.get_command(None, "variants").name == "variants"  # type: ignore[arg-type]
    assert list(group.commands) == ["variants"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["show", "-h"], ["variants"]])
def test_a_command_imports_its_own_module_only(args):
    """`attn --help` lists the commands from cli/app.py's table; a command imports its module alone."""
    mine = {f"attncli.cli.commands.{args[0]}"} if not args[0].startswith("-") else set()
    assert {m for m in imported(*args) if m.startswith("attncli.cli.commands.")} == mine


def test_each_summary_in_the_help_is_its_commands_own():
    """The table's summary is the first paragraph of the command's own help (its docstring)."""
    import inspect
    from importlib import import_module

    from attncli.cli.app import COMMANDS
    from attncli.cli.lazy import summary_of

    for name, summary in COMMANDS.items():
        own = inspect.getdoc(getattr(import_module(f"attncli.cli.commands.{name}"), name))
        assert summary == summary_of(own), name
    assert sorted(COMMANDS) == sorted(
        p.stem for p in (ROOT / "attncli" / "cli" / "commands").glob("*.py") if p.stem != "__init__"
    )


def test_a_text_run_imports_no_model_code():
    modules = imported("show", "time flies like an arrow")
    assert "numpy" in modules and "attncli.pipeline.run" in modules
    assert not {m for m in modules if m.startswith(("attncli.models", "safetensors", "gguf"))}


def test_a_safetensors_model_imports_no_gguf():
    """The gguf package (0.4 s, and pyyaml, requests, tqdm behind it) loads for GGUF files only."""
    modules = imported("show", "time flies", "--model", str(ROOT / "tests" / "models" / "golden" / "qwen2"))
    assert "attncli.models.opening.load" in modules
    assert not {m for m in modules if m.split(".")[0] in ("gguf", "yaml", "requests", "tqdm")}


# What a word-tokenized text run used to load besides: the sandbox of tokenizer files (faulthandler, json,
# select), the package-data lookup of -t bpe (importlib.resources, and tempfile through it), the BLAS-thread
# control of long inputs and of models, and the worker pool of long --lines inputs.
NOT_FOR_A_SENTENCE = [
    "attncli.pipeline.steps",  # the stages of `attn steps` and the page
    "attncli.core.corpus",  # the statistics of `attn heads --lines` (three dataclasses: ~1 ms to make)
    "attncli.pipeline.contain",
    "attncli.pipeline.lines",
    "attncli.core.kernels",
    "attncli.core.threads",
    "faulthandler",
    "importlib.resources",
    "tempfile",
    "json",
    "threadpoolctl",
    "multiprocessing",
]


def test_a_sentence_loads_only_what_its_run_uses():
    assert not imported("show", "time flies like an arrow") & set(NOT_FOR_A_SENTENCE)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_variants_as_data_loads_no_rich(fmt):
    """Rich draws tables: `attn variants -f json` has none to draw."""
    assert not {m for m in imported("variants", "-f", fmt) if m.split(".")[0] == "rich"}


def test_no_command_loads_richs_emoji_table():
    """attn shows `:smile:` as written, so Rich's table of emoji names (2 ms to import) is never needed."""
    for args in (["variants"], ["show", ":smile: time flies :b:", "--stats"], ["steps", ":x:"]):
        assert "rich._emoji_codes" not in imported(*args)


def test_variants_loads_no_tokenizer():
    modules = imported("variants")
    assert not modules & {"attncli.pipeline.tokenize", "attncli.pipeline.contain", "tempfile", "json"}


def test_a_corpus_run_imports_neither_dask_nor_pyarrow(tmp_path):
    from tests.model_fixtures import make_bert

    folder = make_bert(tmp_path / "bert-tiny")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("time flies like an arrow\nfruit flies like a banana\n")
    modules = imported("heads", "--model", str(folder), "--lines", "--file", str(corpus), "--workers", "2")
    assert "attncli.models.runs.corpus" in modules
    assert not {m for m in modules if m.split(".")[0] in ("dask", "distributed", "pyarrow")}


def test_a_text_run_loads_no_html_entities():
    """`html` (which loads html.entities, 2,231 names: ~10 ms) loads for a notebook's frame of a page only."""
    assert "html.entities" not in imported("show", "time flies like an arrow")


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    """`python -c CODE ARGS` on this checkout, as the start-up tests above run attn."""
    r = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r


@pytest.mark.parametrize("collecting", [True, False])
def test_importing_the_app_leaves_the_collector_as_it_found_it(collecting):
    """cli/app.py pauses Python's collector while it imports Typer and freezes what that made, then restores it."""
    before = "" if collecting else "gc.disable()\n"
    r = _python(f"import gc\n{before}import attncli.cli.app\nprint(gc.isenabled(), gc.get_freeze_count() > 0)")
    assert r.stdout.split() == [str(collecting), "True"]


def test_the_collector_runs_while_the_command_does():
    """main pauses the collector while attn starts, and the command resumes it: a model's run needs it."""
    code = (
        "import gc, sys\n"
        "from attncli import api\n"
        "real = api.show\n"
        "def show(*args, **kwargs):\n"
        "    print('collecting' if gc.isenabled() else 'paused', file=sys.stderr)\n"
        "    return real(*args, **kwargs)\n"
        "api.show = show\n"
        "from attncli.cli.app import main\n"
        "sys.argv[0] = 'attn'\n"
        "main()\n"
    )
    assert _python(code, "show", "time flies", "-f", "json").stderr == "collecting\n"


# What `attn` runs, with an exit handler, and a word on stderr when the process ends by os._exit (no teardown).
_ENDING = (
    "import atexit, os, sys, threading\n"
    "from attncli.cli.app import main\n"
    "end = os._exit\n"
    "os._exit = lambda code: (os.write(2, b'no teardown\\n'), end(code))\n"
    "atexit.register(lambda: os.write(2, b'exit handler\\n'))\n"
    "{before}"
    "sys.argv[0] = 'attn'\n"
    "main()\n"
)


@pytest.mark.parametrize(
    ("args", "code"), [(["show", "time flies", "-f", "json"], 0), (["show", "--heads", "0", "a"], 2)]
)
def test_attn_ends_without_the_teardown_once_the_exit_handlers_ran(args, code):
    """`leave`: the exit handlers run, the output is whole, the exit code kept; then the process ends by
    os._exit, without Python clearing every module."""
    r = subprocess.run(
        [sys.executable, "-c", _ENDING.format(before=""), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == code, r.stderr[-2000:]
    assert r.stderr.endswith("exit handler\nno teardown\n")
    assert r.stdout.endswith("]]}\n") if code == 0 else r.stderr.startswith("Error: --heads")


def test_a_thread_still_running_ends_by_pythons_own_exit():
    """With a thread still running at the end, `leave` lets Python's exit do its work (it joins what it must)."""
    waiting = "threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
    r = _python(_ENDING.format(before=waiting), "show", "time flies", "-f", "json")
    assert r.stdout.endswith("]]}\n")
    assert r.stderr == "exit handler\n"
