"""One exit-code rule for every command (docs/limits.md): 2 for anything wrong with the command line,
1 for input that cannot be used; always one line `Error: ...`. 130 for Ctrl-C is tests/cli/test_signals.py's.

The same mistake used to exit 2 on a text run and 1 with --model (--head out of range), and a layer, a part or
--context the model does not take exited 1."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, attn
from tests.model_fixtures import make_bert, make_gpt2

BART = str(ROOT / "tests" / "models" / "golden" / "bart")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    return {"bert": str(make_bert(folder / "bert")), "gpt2": str(make_gpt2(folder / "gpt2")), "bart": BART}


# (command line, exit code, what the line says); BERT, GPT2, BART are filled in with the tiny models' folders,
# README with a file that is not a model folder
CASES = [
    # 2: the command line
    (["shwo", "x"], 2, "did you mean `attn show`"),
    (["show", "hello", "world"], 2, "quote"),
    (["show", "x", "--heads", "0"], 2, "--heads must be between 1"),
    (["show", "x", "--head", "5"], 2, "--head 5 is out of range"),
    (["show", "x", "--model", "BERT", "--head", "5"], 2, "head 5 is out of range"),
    (["show", "x", "--model", "BERT", "--layer", "2"], 2, "layer 2 is out of range"),
    (["show", "x", "--model", "BERT", "--part", "cross"], 2, "its only part is encoder"),
    (["show", "x", "--model", "GPT2", "--context", "y"], 2, "only an encoder"),
    (["show", "x", "--model", "BART", "--part", "encoder", "--layer", "7"], 2, "layer 7 is out of range"),
    (["show", "le chat", "--model", "BART"], 2, "give it with --context SOURCE"),
    (["show", "x", "-f", "parquet"], 2, "'parquet' is not one of"),
    (["show", "x", "--query", "0", "-f", "json"], 2, "--query only changes what the table draws"),
    (["steps", "x", "--rollout"], 2, "it is an option of attn show"),
    (["steps", "x", "--model", "BERT", "--layer", "2"], 2, "layer 2 is out of range"),
    (["view", "x", "--model", "BERT", "--head", "9"], 2, "head 9 is out of range"),
    (["view", "x", "-o", "OUT/x.svg"], 2, "attn view writes an HTML page"),
    (["view", "x", "--model", "BERT", "--lens"], 2, "is an encoder"),
    (["view", "x", "--model", "BART", "--context", "y", "--ablate"], 2, "is an encoder–decoder"),
    (["view", "x", "--ablate"], 2, "--ablate needs --model"),
    (["view", "x", "--model", "GPT2", "--mode", "mean"], 2, "add --ablate"),
    (["explore", "x", "--model", "BERT", "--layer", "2"], 2, "layer 2 is out of range"),
    (["tokens", "x", "--heads", "2"], 2, "no option --heads"),
    (["compare", "x", "--variants", "nope"], 2, "unknown variant 'nope'"),
    (["compute", "x"], 2, "takes no text"),
    (["variants", "-f", "npy"], 2, "'npy' is not one of"),
    (["models", "-f", "npy"], 2, "'npy' is not one of"),
    (["heads", "x"], 2, "missing option '--model'"),
    (["heads", "x", "--model", "BERT", "--part", "cross"], 2, "its only part is encoder"),
    (["heads", "x", "--model", "BART", "--context", "y", "--stat", "previous"], 2, "--stat previous"),
    (["heads", "x", "--model", "GPT2", "--context", "y"], 2, "only an encoder"),
    (["help", "shwo"], 2, "did you mean `attn show`"),
    # one refusal, one exit code: a command that needs a decoder's head, given an encoder (and what to use instead)
    (["lens", "x", "--model", "BERT"], 2, "it has no next-token head, which the logit lens"),
    (["ablate", "x", "--model", "BERT"], 2, "its attention: attn show, attn heads or attn view"),
    (["view", "x", "--model", "BERT", "--lens", "-o", "OUT/p.html"], 2, "it has no next-token head"),
    (["view", "x", "--model", "BERT", "--ablate", "-o", "OUT/p.html"], 2, "it has no next-token head"),
    (["show", "x", "--model", "BERT", "--generate", "2"], 2, "it has no next-token head"),
    (
        ["patch", "a b", "--corrupt", "a b c", "--model", "GPT2", "--target", "a"],
        2,
        "patching needs the same number",
    ),
    (["knockout", "a b", "--model", "GPT2", "--from", "9"], 2, "the text has positions 0..1"),
    (["dla", "a b", "--model", "GPT2", "--target", "a b c"], 2, "give one token"),
    # an empty shell variable before another option, a mistyped file, a mistyped choice
    (["show", "x", "--model", "--layer", "1"], 2, "--model got '--layer': is the variable you meant empty?"),
    (["heads", "--model", "", "x"], 2, "--model got '': is the variable you meant empty?"),
    (["lens", "--model", "-x", "x"], 2, "--model got '-x'"),
    (["ablate", "--model", "", "x"], 2, "--model got ''"),
    (["show", "x", "--mask", "casual"], 2, "did you mean causal?"),
    (["show", "x", "-v", "scaeld"], 2, "did you mean 'scaled'?"),
    (["lens", "x", "--model", "GPT2", "--top-k", "0"], 2, "--top-k must be between 1 and 100"),
    (["ablate", "x", "--model", "GPT2", "--heads", "9.0"], 2, "layer 9 is out of range"),
    (["show", "x", "--model", "GPT2", "--top-k", "2"], 2, "--top-k and --top-p sample the tokens --generate"),
    (["show", "x", "--model", "README", "--gguf-file", "a.gguf"], 2, "--gguf-file chooses a file in a model folder"),
    # 1: the input
    (["show", ""], 1, "empty text"),
    (["show", "--file", "OUT/nope.txt"], 1, "no such file"),
    (["show", "x", "--model", "OUT/nope"], 1, "model folder not found"),
    (["tokens", "--file", "OUT/nope.txt"], 1, "no such file"),
    (["compute", "--input", "OUT/nope.json"], 1, "no such file"),
    (["heads", "--model", "OUT/nope", "x"], 1, "model folder not found"),
    (["show", "x", "--model", "SmolLM2.gguf"], 1, "no such file: 'SmolLM2.gguf'"),
    (["view", "x", "-o", "OUT/nope/page.html"], 1, "no such directory"),
    (["models", "--path", "OUT/nope"], 1, "no such folder or file"),
]


@pytest.mark.parametrize("args, code, says", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_the_exit_code_says_whose_mistake_it_is(args, code, says, models, tmp_path):
    fill = {"BERT": models["bert"], "GPT2": models["gpt2"], "BART": models["bart"], "README": str(ROOT / "README.md")}
    args = [fill.get(a, a.replace("OUT", str(tmp_path))) for a in args]
    r = attn(*args)
    lines = r.stderr.splitlines()
    assert (r.exit_code, len(lines)) == (code, 1) and lines[0].startswith("Error: "), (args, r.exit_code, r.stderr)
    assert says in lines[0], (args, lines[0])


def test_every_command_has_its_cases():
    from attncli.cli.app import COMMANDS

    assert {args[0] for args, _, _ in CASES} >= set(COMMANDS)
