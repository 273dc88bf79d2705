"""The `attn` command through typer's CliRunner (in-process) and, where a real process matters, a subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attncli import __version__
from tests.conftest import attn, refused
from tests.tolerance import U64, assert_rows_sum_to_one


def test_show_json_parses_and_matches_the_schema():
    r = attn("show", "time flies like an arrow", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["tokens"] == ["time", "flies", "like", "an", "arrow"]
    assert doc["config"] == {
        "tokenizer": "word",
        "variant": "scaled",
        "heads": 1,
        "dim": 16,
        "d_k": 16,
        "d_v": 16,
        "d_a": 16,
        "mask": [],
        "positional": "none",
        "projection": "random",
        "temperature": 1.0,
        "seed": 0,
    }
    w = np.array(doc["heads"][0]["weights"])
    assert w.shape == (5, 5)
    assert_rows_sum_to_one(w, U64)  # the float64 pipeline's weights, exact in JSON
    assert np.array(doc["output"]).shape == (5, 16)


def test_show_table_has_tokens_numbers_and_caption():
    r = attn("show", "time flies like an arrow", "--color", "never")
    assert r.exit_code == 0
    for word in ("time", "flies", "arrow", "scaled", "qᵀk / √d_k", "random", "untrained", "seed 0", "Output"):
        assert word in r.stdout
    assert "\x1b[" not in r.stdout


def test_heads_give_one_panel_each_then_the_merged_output():
    r = attn("show", "time flies like an arrow", "--heads", "2", "--color", "never")
    assert "head 0" in r.stdout and "head 1" in r.stdout and "Output" in r.stdout


def test_cross_attention_and_causal_mask():
    doc = json.loads(attn("show", "time flies", "--context", "like an arrow", "--mask", "causal", "-f", "json").stdout)
    assert doc["context_tokens"] == ["like", "an", "arrow"]
    assert np.array(doc["heads"][0]["weights"]).shape == (2, 3)
    assert doc["heads"][0]["masked"] == [[False, True, True], [False, False, True]]


def test_output_file_takes_its_format_from_the_extension(tmp_path):
    out = tmp_path / "r.json"
    r = attn("show", "time flies", "-o", str(out))
    assert r.exit_code == 0 and r.stdout == ""
    assert json.loads(out.read_text())["tokens"] == ["time", "flies"]


def test_stdin_and_file(tmp_path):
    assert json.loads(attn("show", "-", "-f", "json", input="fruit flies\n").stdout)["tokens"] == ["fruit", "flies"]
    (tmp_path / "t.txt").write_text("a banana")
    assert json.loads(attn("show", "--file", str(tmp_path / "t.txt"), "-f", "json").stdout)["tokens"] == ["a", "banana"]


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["show", ""], 1, "Error: empty text"),
        (["show", "   "], 1, "Error: the word tokenizer produced no tokens for '   '"),
        (["show", "a b", "--heads", "3"], 2, "Error: --dim 16 is not divisible by --heads 3"),
        (["show", "a b", "-t", "nope"], 2, "Error: unknown tokenizer 'nope'"),
        (["show", "a b", "-t", "missing/tokenizer.json"], 1, "Error: tokenizer file not found"),
        (
            ["show", "a b", "-o", "fig.png"],
            2,
            "Error: attn draws pictures as SVG, not PNG: write -o fig.svg and convert",
        ),
        (["show", "a b", "-o", "out.weird"], 2, "Error: cannot tell the format"),
        (
            ["show", "a b", "-o", "out.weird"],
            2,
            "Error: cannot tell the format of out.weird from its extension: give -f (table, json,",
        ),
        (["show", "a b", "-o", "/nonexistent-dir/x.json"], 1, "Error: cannot write"),
    ],
)
def test_errors_are_one_line(args, code, message):
    assert refused(attn(*args), code=code).startswith(message)


def test_unknown_variant_is_a_usage_error():
    r = attn("show", "a b", "-v", "quadratic")
    assert r.exit_code == 2 and "quadratic" in r.stderr


def test_version_and_help():
    assert attn("--version").stdout.strip() == f"attn {__version__}"
    help_text = attn("--help").stdout
    assert "show" in help_text
    assert "Usage" in attn().output


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "attncli", *args], capture_output=True, check=True).stdout


def test_same_inputs_same_bytes_in_two_processes():
    args = ("show", "time flies like an arrow", "--heads", "2", "-f", "json")
    assert _cli(*args) == _cli(*args)


def test_no_traceback_in_a_real_process():
    p = subprocess.run([sys.executable, "-m", "attncli", "show", ""], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr == "Error: empty text: nothing to tokenize\n"


# ---- --lines ----------------------------------------------------------------------------------------


def _jsonl(text):
    return [json.loads(line) for line in text.splitlines()]


def test_lines_stream_in_input_order_and_skip_blank_lines():
    source = [f"word{i} and more words {i}" if i % 7 else ("" if i % 2 else "   ") for i in range(1, 41)]
    r = attn("show", "-", "--lines", input="\n".join(source) + "\n")
    assert r.exit_code == 0, r.output
    docs = _jsonl(r.stdout)
    kept = [(i, t) for i, t in enumerate(source, 1) if t.strip()]
    assert [(d["line"], d["text"]) for d in docs] == kept  # blank lines: no object, their number skipped
    assert all(d["schema"] == "attncli.attention/1" and list(d)[:2] == ["schema", "line"] for d in docs)
    assert docs[0]["tokens"] == ["word1", "and", "more", "words", "1"]


def test_each_line_is_the_same_as_its_own_run():
    r = attn("show", "-", "--lines", "--heads", "2", input="time flies like an arrow\r\nfruit flies like a banana")
    one = json.loads(attn("show", "fruit flies like a banana", "--heads", "2", "-f", "json").stdout)
    line = _jsonl(r.stdout)[1]
    assert line.pop("line") == 2 and line == one  # CRLF and a missing last newline are fine


def test_lines_from_a_file_and_from_text(tmp_path):
    (tmp_path / "t.txt").write_text("a b\n\nc d e\n", encoding="utf-8")
    docs = _jsonl(attn("show", "--file", str(tmp_path / "t.txt"), "--lines").stdout)
    assert [(d["line"], d["tokens"]) for d in docs] == [(1, ["a", "b"]), (3, ["c", "d", "e"])]
    assert [d["line"] for d in _jsonl(attn("show", "x y\nz w", "--lines").stdout)] == [1, 2]


def test_lines_as_csv_have_a_line_column_and_one_header():
    import csv
    import io

    r = attn("show", "-", "--lines", "-f", "csv", input="a b\n\nc\n")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [(row["line"], row["query"], row["key"]) for row in rows] == [
        ("1", "a", "a"),
        ("1", "a", "b"),
        ("1", "b", "a"),
        ("1", "b", "b"),
        ("3", "c", "c"),
    ]


def test_lines_as_tables_have_a_heading_each():
    r = attn("show", "-", "--lines", "-f", "table", "--color", "never", input="time flies\n\nan arrow [red]x\n")
    assert r.exit_code == 0
    assert "line 1: time flies" in r.stdout and "line 3: an arrow [red]x" in r.stdout and "line 2" not in r.stdout
    assert r.stdout.count("Attention weights") == 2


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["-f", "json"], 2, "Error: --lines streams one result per line: use -f jsonl (the default), csv or table"),
        (["-o", "x.npz"], 2, "Error: --lines streams one result per line"),
        (["--heads", "3"], 2, "Error: --dim 16 is not divisible by --heads 3"),
        (["--save-svg", "x.svg"], 2, "Error: --save-svg and --save-html picture the tables: add -f table"),
    ],
)
def test_lines_refuse_what_cannot_stream(args, code, message):
    r = attn("show", "-", "--lines", *args, input="a b\n")
    assert r.exit_code == code and r.stderr.startswith(message), r.stderr


def test_lines_that_are_all_blank_are_an_error_and_a_bad_line_is_named():
    r = attn("show", "-", "--lines", input="\n  \n\n")
    assert r.exit_code == 1 and r.stderr == "Error: no text: every line of stdin is blank\n"
    r = attn("show", "-", "--lines", "-t", "missing.json", input="a\n")
    assert r.exit_code == 1 and "tokenizer file not found" in r.stderr
    r = attn("show", "-", "--lines", "--context", " ", input="a\nb\n")
    assert r.exit_code == 1 and r.stderr.startswith("Error: stdin line 1: the word tokenizer produced no")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_lines_from_a_file_show_progress_on_a_terminal_stderr(tmp_path):
    import os
    import pty

    (tmp_path / "t.txt").write_text("time flies like an arrow\n" * 300, encoding="utf-8")
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "COLUMNS": "100"}
    p = subprocess.Popen(
        [sys.executable, "-m", "attncli", "show", "--file", str(tmp_path / "t.txt"), "--lines"],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    out = p.stdout.read()
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    p.wait()
    os.close(master)
    assert p.returncode == 0 and out.count(b"\n") == 300 and b"\x1b" not in out
    assert b"attn --lines t.txt" in got and b"%" in got


# ---- attn steps, attn tokens, attn compare, show --stats ------------------------------------------


def _strict(text):
    def no_constants(c):
        raise ValueError(f"non-strict JSON constant {c}")

    return json.loads(text, parse_constant=no_constants)


def test_steps_json_matches_show_exactly():
    doc = _strict(attn("steps", "time flies like an arrow", "-f", "json").stdout)
    shown = _strict(attn("show", "time flies like an arrow", "-f", "json").stdout)
    by_name = {s["name"]: s for s in doc["steps"]}
    assert [s["name"] for s in doc["steps"]] == [
        "x",
        "q",
        "k",
        "v",
        "trace:qk",
        "scores",
        "weights",
        "head_outputs",
        "output",
    ]
    assert by_name["weights"]["array"][0] == shown["heads"][0]["weights"]
    assert by_name["output"]["array"] == shown["output"]
    assert [t["token"] for t in doc["tokens"]] == shown["tokens"] and doc["config"] == shown["config"]


def test_steps_table_titles_hold_formula_and_shape():
    r = attn("steps", "time flies like an arrow", "--color", "never")
    assert r.exit_code == 0, r.output
    for title in (
        "X = E",
        "[5, 16]",
        "Q = X W_Q",
        "QKᵀ",
        "S = qᵀk / √d_k",
        "A = softmax(S)",
        "O_h = A_h V_h",
        "O = O_0 W_O",
        "check: A['time', 'time']",
        "Σ",
    ):
        assert title in r.stdout, title


def test_steps_with_context_heads_mask_and_a_variant():
    doc = _strict(
        attn(
            "steps",
            "time flies",
            "--context",
            "like an arrow",
            "--heads",
            "2",
            "--mask",
            "causal",
            "-v",
            "additive",
            "-f",
            "json",
        ).stdout
    )
    shapes = {s["name"]: s["shape"] for s in doc["steps"]}
    assert shapes["q"] == [2, 2, 8] and shapes["k"] == [2, 3, 8] and shapes["weights"] == [2, 2, 3]
    assert shapes["trace:tanh(W1q + W2k + b)"] == [2, 2, 3, 8] and shapes["concat"] == [2, 16]
    assert [t["token"] for t in doc["context_tokens"]] == ["like", "an", "arrow"]
    table = attn(
        "steps", "time flies", "--context", "like an arrow", "-v", "additive", "--query", "1", "--color", "never"
    ).stdout
    assert "query 1 'flies' (rows: keys)" in table and "tokens of --context" in table


@pytest.mark.parametrize(
    "args, message",
    [
        (["steps", "a b", "--query", "2"], "Error: --query 2 is out of range"),
        (["steps", "a b", "-f", "csv"], "Error: invalid value for '-f' / '--format': 'csv' is not one of"),
        (["tokens", "a b", "-f", "npy"], "Error: invalid value for '-f' / '--format': 'npy' is not one of"),
        (["compare", "a b", "--tokenizers", ","], "Error: --tokenizers needs at least one name"),
        (["compare", "a b", "--variants", "scaled,quadratic"], "Error: unknown variant 'quadratic'"),
        (["compare", "a b", "--tokenizers", "word,nope"], "Error: unknown tokenizer 'nope'"),
    ],
)
def test_new_commands_reject_bad_options_in_one_line(args, message):
    assert refused(attn(*args), code=2).startswith(message)


def test_tokens_json_jsonl_csv():
    doc = _strict(attn("tokens", "time flies, like", "-f", "json").stdout)
    assert doc["schema"] == "attncli.tokens/1" and doc["reconstructs"] is True and doc["n_tokens"] == 4
    assert doc["rows"][2] == {"index": 2, "token": ",", "id": 2, "start": 10, "end": 11, "span": ",", "kind": ""}
    lines = attn("tokens", "time flies", "-t", "bpe", "-f", "jsonl").stdout.splitlines()
    assert [_strict(line)["token"] for line in lines] == ["time", "Ġflies"]
    csv_text = attn("tokens", "a b", "-f", "csv").stdout
    assert csv_text.splitlines()[0] == "index,token,id,start,end,span,kind"


def test_tokens_table_escapes_control_characters_and_markup():
    r = attn("tokens", "a\x1b[2Jb [red]x", "-t", "char", "--color", "never")
    assert r.exit_code == 0 and "\x1b" not in r.stdout
    assert "\\x1b" in r.stdout and "[red]" not in r.stdout  # char tokens: "[", "r", "e", "d", "]"
    assert "offsets reconstruct the input: yes" in r.stdout


def test_compare_json_rows():
    doc = _strict(attn("compare", "time flies like an arrow", "-f", "json").stdout)
    assert doc["schema"] == "attncli.compare/1"
    assert [(r["tokenizer"], r["n_tokens"], r["cells"]) for r in doc["rows"]] == [
        ("char", 24, 576),
        ("word", 5, 25),
        ("bpe", 5, 25),
    ]
    assert doc["rows"][2]["tokens"] == ["time", "Ġflies", "Ġlike", "Ġan", "Ġarrow"]
    two = _strict(
        attn("compare", "a b", "--tokenizers", "word", "--variants", "scaled,cosine,additive", "-f", "json").stdout
    )
    assert [r["variant"] for r in two["rows"]] == ["scaled", "cosine", "additive"]
    assert two["rows"][2]["weight_bytes"] > two["rows"][0]["weight_bytes"]  # additive has its own weights


def test_compare_with_a_tokenizer_file_counts_unknowns(wordpiece_json):
    doc = _strict(
        attn("compare", "time flies like a zebra", "--tokenizers", f"word,{wordpiece_json}", "-f", "json").stdout
    )
    assert [r["unknown"] for r in doc["rows"]] == [0, 2] and doc["rows"][1]["vocab_size"] == 9
    assert doc["rows"][1]["tokens"][0] == "[CLS]"


def test_compare_table_side_by_side_when_wide_stacked_when_narrow():
    def lines(width):
        r = attn(
            "compare",
            "time flies like an arrow",
            "--tokenizers",
            "word,bpe",
            "--color",
            "never",
            env={"COLUMNS": str(width)},
        )
        assert r.exit_code == 0, r.output
        return r.stdout.splitlines()

    wide, narrow = lines(140), lines(40)
    for out in (wide, narrow):
        assert any("vocabulary" in line and "2,000" in line for line in out)
        assert any(line.startswith("bpe") and "Ġflies" in line for line in out)
    assert any("word  A [5, 5]" in line and "bpe  A [5, 5]" in line for line in wide)
    assert not any("word  A [5, 5]" in line and "bpe  A [5, 5]" in line for line in narrow)
    assert max(len(line) for line in narrow) <= 40


def test_show_stats_table_for_short_texts_and_on_request():
    short = attn("show", "time flies like an arrow", "--color", "never").stdout
    assert "head 0: entropy" in short and "Head statistics" not in short  # one line per head, unasked
    assert short.index("head 0: entropy") < short.index("Output")  # under the matrix, above the outputs
    asked = attn("show", "time flies like an arrow", "--stats", "--color", "never").stdout
    assert "Head statistics" in asked and "Top 3 keys of each query" in asked
    long_text = " ".join(f"w{i}" for i in range(13))
    assert "head 0: entropy" not in attn("show", long_text, "--color", "never").stdout
    assert "Head statistics" in attn("show", long_text, "--stats", "--color", "never").stdout


def test_show_stats_json_adds_one_key_and_changes_no_other():
    plain = _strict(attn("show", "time flies like an arrow", "--heads", "2", "-f", "json").stdout)
    with_stats = _strict(attn("show", "time flies like an arrow", "--heads", "2", "--stats", "-f", "json").stdout)
    assert "stats" not in plain
    assert {k: v for k, v in with_stats.items() if k != "stats"} == plain
    assert [s["head"] for s in with_stats["stats"]] == [0, 1]
    w = np.array(plain["heads"][1]["weights"])
    assert with_stats["stats"][1]["largest_weight"] == w.max()
    assert with_stats["stats"][1]["top_keys"][0] == list(np.argsort(-w[0], kind="stable")[:3])
    line = attn("show", "a b", "--stats", "-f", "jsonl").stdout
    assert line.count("\n") == 1 and "stats" in _strict(line)


def test_markup_in_a_tokenizer_path_is_shown_literally(wordpiece_json, tmp_path):
    import shutil

    hostile = tmp_path / "[bold]x.json"
    shutil.copy(wordpiece_json, hostile)
    r = attn("compare", "time flies", "--tokenizers", f"word,{hostile}", "--color", "never", env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    assert r.stdout.count("[bold]x.json") >= 3  # column, tokens line, heatmap title


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_show_lines_on_two_processes_writes_the_same_bytes_as_on_one(tmp_path, fmt):
    from attncli.pipeline.lines import CHUNK, INLINE

    words = ["time", "flies", "like", "an", "arrow", "fruit", "a", "banana", "the", "cat", "sat"]
    text = "\n".join(" ".join(words[(i + j) % len(words)] for j in range(2 + i % 5)) for i in range(INLINE + 3 * CHUNK))
    path = tmp_path / "many.txt"
    path.write_text(text + "\n\n  \nlast line\n")
    one = attn("show", "--lines", "--file", path, "-f", fmt, "--workers", "1")
    two = attn("show", "--lines", "--file", path, "-f", fmt, "--workers", "2")
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    assert one.stdout_bytes == two.stdout_bytes
    if fmt == "jsonl":
        numbers = [json.loads(line)["line"] for line in one.stdout.splitlines()]
        assert numbers == [*range(1, INLINE + 3 * CHUNK + 1), INLINE + 3 * CHUNK + 3]


def test_show_lines_names_the_line_a_worker_refused(tmp_path):
    from attncli.pipeline.lines import INLINE

    path = tmp_path / "long.txt"
    bad = INLINE + 40
    path.write_text("".join("a b c\n" if i != bad else ("w " * 50) + "\n" for i in range(1, INLINE + 100)))
    r = attn("show", "--lines", "--file", path, "--max-tokens", "20", "--workers", "2")
    assert r.exit_code != 0
    assert f"line {bad}:" in r.stderr


def test_workers_go_with_lines():
    r = attn("show", "time flies", "--workers", "2")
    assert r.exit_code == 2 and "--workers goes with --lines" in r.stderr
