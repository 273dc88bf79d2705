"""Fuzz the whole CLI in-process: random Unicode text (controls, bidi, zero-width, markup, wide and
combining characters) and random, often absurd, combinations of options on every command.

Whatever comes in: never a traceback and never an "internal error", the exit code is 0, 1 or 2, an
error is one `Error:` line, nothing unsafe reaches the terminal (raw bytes checked as in
test_hostile.py), a failed `-o` leaves no file; and with exit 0 and `-f json` the output is strict
JSON whose weight rows sum to 1 (0 for a fully masked row).

Examples per test: EXAMPLES below under the derandomized `ci` profile (about 40 s in all on a
laptop), twenty times as many with `HYPOTHESIS_PROFILE=thorough pytest tests/test_fuzz.py`.
"""

import json
import math
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from attncli.cli.app import app
from attncli.core.variants import VARIANTS
from tests.conftest import inert

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
EXAMPLES = {"show": 150, "lines": 40, "steps": 24, "tokens": 60, "compare": 40, "compute": 150}


def examples(test: str) -> int:
    return EXAMPLES[test] * (20 if THOROUGH else 1)


def fuzz_settings(test: str):
    return settings(
        max_examples=examples(test),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    )


runner = CliRunner()


SPECIAL = [
    "\x1b",
    "\x1b[2J",
    "\x1b]0;title\x07",
    "\x1b[31m",
    "\x07",
    "\x00",
    "\x08",
    "\x7f",
    "\x9b",
    "\x85",
    "\u202e",
    "\u202d",
    "\u2066",
    "\u2069",
    "\u200b",
    "\u200c",
    "\u200d",
    "\ufeff",
    "\u2028",
    "\u0301",
    "\u20dd",
    "漢字",
    "😀",
    "👨\u200d👩",
    "❤\ufe0f",
    "🇫🇷",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u3000",
    "[red]",
    "[/red]",
    "[link=https://example.org]",
    "[/link]",
    "[bold]x[/]",
    "[",
    "]",
    "\\",
    "'",
    '"',
    ",",
    "NaN",
    "-",
    "--x",
    "time",
    "flies",
    "like",
    "an",
    "arrow",
    "##ow",
    "[CLS]",
    "\U000e0041",
    "\ue000",
]
# How argv carries bytes that are not UTF-8 (surrogateescape): TEXT and --context may hold them.
ARGV_BYTES = ["\udcff", "\udc80", "\udce2\udc82"]
TEXT = st.lists(
    st.one_of(st.sampled_from(SPECIAL), st.text(st.characters(exclude_categories=("Cs",)), max_size=5)),
    min_size=1,
    max_size=10,
).map("".join)
ARGV_TEXT = st.integers(0, 19).flatmap(
    lambda k: TEXT if k else st.tuples(TEXT, st.sampled_from(ARGV_BYTES), TEXT).map("".join)
)
MASKS = st.lists(
    st.sampled_from(["causal", "window:0", "window:1", "window:3", "topk:1", "topk:2", "topk:50"]),
    min_size=1,
    max_size=3,
).map(",".join)
BAD_MASKS = st.one_of(
    st.sampled_from(
        [
            "window:-1",
            "topk:0",
            "topk:x",
            "window:99999999999",
            "none",
            "",
            "topk:²",
            "window:٣",
            "causal:1",
            "window",
            "topk:" + "9" * 5000,
        ]
    ),
    st.text("causlwindotpk:0123456789²٣-, \x1b", max_size=16),
)
TEMPERATURES = st.sampled_from(["1", "0.5", "3", "1e-3", "1e300"])
BAD_TEMPERATURES = st.sampled_from(["0", "-1", "nan", "inf", "-inf", "warm", "1e-300", "5e-324"])  # (tiny: overflow)


def opt(name, valid, invalid=None):
    """Absent (18 in 30), a valid value (11 in 30, or 12 without `invalid`), an invalid one (1 in 30)."""

    def pick(k):
        if k < 18:
            return st.just([])
        values = invalid if k == 29 and invalid is not None else valid
        return values.map(lambda v: [name, str(v)])

    return st.integers(0, 29).flatmap(pick)


def flag(name):
    return st.sampled_from([[], [name]])


def flat(parts) -> list[str]:
    return [a for part in parts for a in part]


@pytest.fixture(scope="module")
def no_unk(tmp_path_factory) -> str:
    """A WordLevel tokenizer.json with no [UNK]: the `tokenizers` library raises on any unknown word."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"time": 0, "flies": 1, "[red]": 2}))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    path = tmp_path_factory.mktemp("tok") / "no-unk.json"
    tok.save(str(path))
    return str(path)


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("out")


def model_options(tokenizers):
    """The options of a text run (show, steps; compare takes most of them)."""
    return st.tuples(
        opt("-t", st.sampled_from(tokenizers), st.just("nope")),
        opt("-v", st.sampled_from(list(VARIANTS)), st.just("nope")),
        opt("--heads", st.sampled_from([1, 2, 4]), st.sampled_from([0, -1, 3, 257])),
        opt("--dim", st.sampled_from([4, 8, 16, 24]), st.sampled_from([0, -3, 5000, 1])),
        opt("--dk", st.sampled_from([1, 3, 8]), st.sampled_from([0, -2])),
        opt("--dv", st.sampled_from([1, 2, 5]), st.sampled_from([0, -1])),
        opt("--d-a", st.sampled_from([1, 4]), st.sampled_from([0, 99999])),
        opt("--mask", MASKS, BAD_MASKS),
        opt("--positional", st.sampled_from(["none", "sinusoidal"]), st.just("rope")),
        opt("--projection", st.sampled_from(["random", "identity"])),
        opt("--seed", st.sampled_from([0, 1, 7, 2**63 - 1]), st.sampled_from([-1, 2**63, 10**30])),
        opt("--temperature", TEMPERATURES, BAD_TEMPERATURES),
        opt("--max-tokens", st.sampled_from([3, 60, 4096]), st.sampled_from([0, -5])),
    ).map(flat)


LONG_INPUT = st.tuples(  # attn show and attn compute: the outputs-only and float32 paths
    st.sampled_from([[]] * 3 + [["--no-weights"]]),
    opt("--dtype", st.sampled_from(["float64", "float32"])),
    opt("--rank", st.sampled_from([1, 2, 8]), st.just(0)),
    opt("--features", st.sampled_from([1, 16]), st.just(-1)),
).map(flat)


VIEW = st.tuples(  # what the table draws: the layout options of `attn show`
    opt("--width", st.sampled_from([20, 40, 57, 80, 200]), st.sampled_from([0, 19, 10**5])),
    opt("--head", st.sampled_from([0, 1, 3]), st.sampled_from([-1, 99])),
    flag("--mean-heads"),
    opt("--query", st.sampled_from(["0", "-1", "time", "[red]"]), st.sampled_from(["99", "", "nope"])),
    flag("--matrix-only"),
    opt("--theme", st.sampled_from(["light", "dark"]), st.just("sepia")),
    flag("--keep-newline"),
).map(flat)
ENVIRONMENT = st.fixed_dictionaries(  # odd COLUMNS and ATTN_MAX_MEMORY values fall back or are one clean line
    {
        "COLUMNS": st.sampled_from(["120", "120", "80", "0", "3", "abc", "99999999", ""]),
        "ATTN_MAX_MEMORY": st.sampled_from(["2G", "2G", "none", "1k", "9" * 300, "12x", ""]),
    }
)


def output_options(formats=("table", "json", "jsonl", "csv", "npy", "npz")):
    """-f json 4 times in 10 when it is one of `formats` (its output is checked most)."""
    return st.tuples(
        st.integers(0, 9).flatmap(
            lambda k: (
                st.just(["-f", "json"])
                if k < 4 and "json" in formats
                else opt("-f", st.sampled_from(formats), st.just("xml"))
            )
        ),
        opt("--precision", st.sampled_from([0, 1, 3, 17]), st.sampled_from([-1, 18])),
        opt("--color", st.sampled_from(["always", "always", "never", "auto"])),
    ).map(flat)


def invoke(args, out_dir, input=None, output_ext=None, env=None):
    """Run attn; check what holds for every run whatever it was given; return the result and the -o path."""
    target = None
    if output_ext is not None:
        target = out_dir / f"out{output_ext}"
        if target.exists():
            target.unlink()
        split = args.index("--") if "--" in args else len(args)
        args = [*args[:split], "-o", str(target), *args[split:]]
    r = runner.invoke(app, args, input=input, env=env or {"COLUMNS": "120"})
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    assert "Traceback" not in r.output and "internal error" not in r.stderr, (args, r.stderr)
    assert r.exit_code in (0, 1, 2), (args, r.exit_code)
    event(f"exit {r.exit_code}")  # pytest --hypothesis-show-statistics shows how many runs got how far
    errors = [line for line in r.stderr.splitlines() if line.startswith("Error:")]
    if r.exit_code:
        assert len(errors) == 1, (args, r.stderr)
    else:
        assert not errors, (args, r.stderr)
    inert(r.stderr_bytes, args)
    assert not [p for p in out_dir.iterdir() if p.name.startswith(".attn-")], "a temp file was left behind"
    if target is not None and r.exit_code:
        assert not target.exists(), "a failed run wrote -o"
    return r, target


def strict_json(text: str):
    def no_constants(c):
        raise ValueError(f"non-strict JSON constant {c}")

    return json.loads(text, parse_constant=no_constants)


def fmt_of(args) -> str | None:
    return args[args.index("-f") + 1] if "-f" in args else None


def precision_of(args) -> int | None:
    return int(args[args.index("--precision") + 1]) if "--precision" in args else None


def check_rows(weights, masked_rows, precision, eps: float = 1e-9) -> None:
    """Each row of [h, m, n] weights sums to 1, or is all 0 when every key of it is masked."""
    w = np.asarray(weights, dtype=float)
    assert np.isfinite(w).all() and (w >= 0).all()
    n = w.shape[-1]
    tol = n * eps if precision is None else n * 0.5 * 10.0**-precision + eps
    sums = w.sum(axis=-1)
    full = np.zeros(sums.shape, bool) if masked_rows is None else np.asarray(masked_rows)
    assert np.all(np.where(full, sums == 0, np.abs(sums - 1) <= tol)), sums


def check_attention_json(doc, precision) -> None:
    assert np.isfinite(np.asarray(doc["output"], dtype=float)).all()
    for head in doc["heads"]:
        if head["weights"] is None:  # --no-weights: the outputs only
            assert head["scores"] is None and doc["config"]["weights"] is False
            continue
        masked = head.get("masked")
        full = None if masked is None else np.asarray(masked, dtype=bool).all(axis=-1)
        float32 = doc["config"].get("dtype") == "float32" or "model" in doc["config"]  # a model runs in float32
        eps = 1e-6 if float32 else 1e-9  # float32 rounds at ~6e-8
        check_rows(head["weights"], full, precision, eps)
        assert np.asarray(head["scores"], dtype=float).shape == np.asarray(head["weights"]).shape


def check_safe_output(r, args) -> None:
    fmt = fmt_of(args) or "table"
    if fmt in ("table", "json", "jsonl"):  # csv carries the text exactly; npy/npz are binary
        inert(r.stdout_bytes, args)


# ---- the commands -----------------------------------------------------------------------------------


@fuzz_settings("show")
@given(data=st.data(), text=ARGV_TEXT, context=st.one_of(st.none(), ARGV_TEXT))
def test_fuzz_show(wordpiece_json, no_unk, out_dir, data, text, context):
    args = [
        "show",
        *data.draw(model_options(["char", "word", "bpe", wordpiece_json, no_unk])),
        *data.draw(LONG_INPUT),
        *data.draw(output_options()),
        *data.draw(flag("--stats")),
        *data.draw(opt("--errors", st.sampled_from(["strict", "replace"]), st.just("ignore"))),
        *data.draw(VIEW),
    ]
    if context is not None:
        args += ["--context", context]
    svg = out_dir / "picture.svg"
    if svg.exists():
        svg.unlink()
    if data.draw(st.integers(0, 9)) == 0:
        args += ["--save-svg", str(svg)]
    ext = data.draw(st.sampled_from([None] * 12 + [".json", ".csv", ".npz", ".weird"]))
    r, target = invoke([*args, "--", text], out_dir, output_ext=ext, env=data.draw(ENVIRONMENT))
    check_safe_output(r, args)
    if r.exit_code == 0 and svg.exists():
        inert(svg.read_bytes(), args)
        ET.fromstring(svg.read_text(encoding="utf-8"))
    if r.exit_code == 0 and (fmt_of(args) == "json" or (ext == ".json" and fmt_of(args) is None)):
        doc = strict_json(target.read_text(encoding="utf-8") if target else r.stdout)
        if "replace" not in args:
            assert doc["text"] == text and doc["context"] == context
        check_attention_json(doc, precision_of(args))


@fuzz_settings("lines")
@given(data=st.data(), lines=st.lists(TEXT, max_size=5), raw=st.one_of(st.none(), st.binary(max_size=30)))
def test_fuzz_show_lines(wordpiece_json, out_dir, data, lines, raw):
    args = [
        "show",
        "-",
        "--lines",
        *data.draw(model_options(["char", "word", "bpe", wordpiece_json])),
        *data.draw(output_options(("table", "jsonl", "csv"))),
        *data.draw(opt("--errors", st.sampled_from(["strict", "replace"]), st.just("ignore"))),
    ]
    stdin = raw if raw is not None else "\n".join(lines).encode("utf-8", "surrogatepass")
    r, _ = invoke(args, out_dir, input=stdin)
    check_safe_output(r, args)
    if r.exit_code == 0 and fmt_of(args) in (None, "jsonl"):
        for line in r.stdout.splitlines():
            check_attention_json(strict_json(line), precision_of(args))


WORDPIECE = "<wordpiece_json>"  # the fixture's tokenizer.json, put in its place by the test
STEPS_ARGS = st.tuples(
    model_options(["char", "word", "bpe", WORDPIECE]),
    output_options(("table", "json", "jsonl", "npz", "csv")),
    opt("--query", st.sampled_from([0, 1, 3]), st.just(-1)),
).map(flat)
HOSTILE = "time\x1b[2J flies \u202elike [bold]an[/] arrow"  # an escape, a bidi override, markup
STEPS_FORMATS = ["json", "table", "json", "jsonl", "json", "npz", "json", "json"]  # csv: steps refuses it
STEPS_MASKS = ["causal", "window:1", "window:0,topk:2", "window:3", "topk:1", "topk:50", "causal,window:3", None]


def every_entry(test):
    """Explicit examples that run each variant once, each tokenizer, output format and valid mask (the drawn
    examples need not reach them all), all on hostile text; most as JSON, whose rows are checked."""
    for i, variant in enumerate(VARIANTS):
        args = ["-v", variant, "-t", ["char", "word", "bpe", WORDPIECE][i % 4], "-f", STEPS_FORMATS[i % 8]]
        args += ["--mask", STEPS_MASKS[i % 8]] if STEPS_MASKS[i % 8] else []
        args += ["--positional", ("none", "sinusoidal")[i % 2], "--projection", ("random", "identity")[i // 4]]
        test = example(args=[*args, "--query", str(i % 3)], text=HOSTILE)(test)
    return test


@fuzz_settings("steps")
@every_entry
@given(args=STEPS_ARGS, text=ARGV_TEXT)
def test_fuzz_steps(wordpiece_json, out_dir, args, text):
    args = ["steps", *(wordpiece_json if a == WORDPIECE else a for a in args)]
    r, _ = invoke([*args, "--", text], out_dir)
    check_safe_output(r, args)
    if r.exit_code == 0 and fmt_of(args) == "json":
        doc = strict_json(r.stdout)
        steps = {s["name"]: s for s in doc["steps"]}
        masked = steps.get("masked_scores")
        full = (
            None
            if masked is None
            else np.array([[[x is None for x in row] for row in head] for head in masked["array"]]).all(axis=-1)
        )
        check_rows(steps["weights"]["array"], full, precision_of(args))


@fuzz_settings("tokens")
@given(data=st.data(), text=ARGV_TEXT)
def test_fuzz_tokens(wordpiece_json, no_unk, out_dir, data, text):
    args = [
        "tokens",
        *data.draw(opt("-t", st.sampled_from(["char", "word", "bpe", wordpiece_json]), st.just(no_unk))),
        *data.draw(output_options(("table", "json", "jsonl", "csv", "npy"))),
        *data.draw(opt("--max-tokens", st.sampled_from([1, 5, 100]), st.just(0))),
    ]
    r, _ = invoke([*args, "--", text], out_dir)
    check_safe_output(r, args)
    if r.exit_code == 0 and fmt_of(args) == "json":
        doc = strict_json(r.stdout)
        assert doc["text"] == text and doc["n_tokens"] == len(doc["rows"]) >= 1
        assert all(text[row["start"] : row["end"]] == row["span"] for row in doc["rows"])
    if r.exit_code == 0:
        assert not any(c in text for c in "\udcff\udc80\udce2"), "TEXT that is not UTF-8 was accepted"


@fuzz_settings("compare")
@given(data=st.data(), text=ARGV_TEXT)
def test_fuzz_compare(wordpiece_json, out_dir, data, text):
    names = data.draw(
        st.lists(st.sampled_from(["char", "word", "bpe", wordpiece_json, "nope", " "]), min_size=1, max_size=3)
    )
    variants = data.draw(st.lists(st.sampled_from([*VARIANTS, "nope"]), min_size=1, max_size=2))
    options = [a for a in data.draw(model_options(["word"])) if a]
    args = [
        "compare",
        "--tokenizers",
        ",".join(names),
        "--variants",
        ",".join(variants),
        *[
            a
            for i, a in enumerate(options)
            if not (a == "-t" or (i and options[i - 1] == "-t") or a == "-v" or (i and options[i - 1] == "-v"))
        ],
        *data.draw(output_options(("table", "json", "jsonl", "csv"))),
    ]
    r, _ = invoke([*args, "--", text], out_dir)
    check_safe_output(r, args)
    if r.exit_code == 0 and fmt_of(args) == "json":
        doc = strict_json(r.stdout)
        assert len(doc["rows"]) >= 1 and doc["text"] == text


NUMBERS = st.one_of(st.floats(-1e3, 1e3, allow_nan=False), st.integers(-5, 5), st.sampled_from([0.0, 1e-300]))
ODD_NUMBERS = st.sampled_from([1e200, -1e200, 1e-300, float("nan"), float("inf"), 10**400, "x", True, None])


def matrix(rows, cols):
    cells = st.integers(0, 9).flatmap(lambda k: st.one_of(NUMBERS, ODD_NUMBERS) if k == 0 else NUMBERS)
    return st.lists(st.lists(cells, min_size=cols, max_size=cols), min_size=rows, max_size=rows)


@st.composite
def qkv_documents(draw):
    m, n, d = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 4))
    doc = {"q": draw(matrix(m, d))}
    if draw(st.booleans()):
        doc["k"] = draw(matrix(n, draw(st.sampled_from([d] * 5 + [d + 1]))))
    if draw(st.booleans()):
        doc["v"] = draw(matrix(draw(st.sampled_from([n] * 5 + [n + 1])) if "k" in doc else m, draw(st.integers(1, 3))))
    if draw(st.integers(0, 5)) == 0:
        doc["params"] = draw(st.sampled_from([{}, {"W": [[1.0]]}, {"W_g": [1, 2]}, [], "x"]))
    if draw(st.integers(0, 8)) == 0:
        doc[draw(st.sampled_from(["q", "k", "x"]))] = draw(st.sampled_from([[], [[]], [[1], [1, 2]], "x", 3]))
    text = json.dumps(doc, allow_nan=True)
    return text if draw(st.integers(0, 10)) else text[: draw(st.integers(0, len(text)))]


@fuzz_settings("compute")
@given(data=st.data(), doc=qkv_documents())
def test_fuzz_compute(out_dir, data, doc):
    args = [
        "compute",
        *data.draw(opt("-v", st.sampled_from(list(VARIANTS)), st.just("nope"))),
        *data.draw(LONG_INPUT),
        *data.draw(opt("--mask", MASKS, BAD_MASKS)),
        *data.draw(opt("--temperature", TEMPERATURES, BAD_TEMPERATURES)),
        *data.draw(opt("--d-a", st.sampled_from([1, 3]), st.just(0))),
        *data.draw(opt("--seed", st.sampled_from([0, 5]), st.just(-1))),
        *data.draw(output_options(("table", "json", "csv", "npy"))),
    ]
    r, _ = invoke(args, out_dir, input=doc)
    check_safe_output(r, args)
    if r.exit_code == 0 and fmt_of(args) == "json":
        result = strict_json(r.stdout)
        check_attention_json(result, precision_of(args))
        assert all(math.isfinite(x) for row in result["output"] for x in row)
