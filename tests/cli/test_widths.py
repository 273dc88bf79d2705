"""Every command fits every width from 40 columns up, and never cuts a number or a label.

Each command runs through the CLI with `--width W --color never` (what NO_COLOR and a pipe get); no line may
be wider than W, and no `…` may be glued to text: Rich's own truncation ends a cut cell in `word…`, while
attn's declared elision markers stand alone (`…` columns, `… 3 keys (7–9) hidden`, `… 980 more`). Nor may a
table fold a word or a number onto two lines (`0.3` over `1`, `vocabula` over `ry size`): every word of its
tables at W is a word of the same tables at 1000 columns.
"""

from __future__ import annotations

import html
import itertools
import re

import pytest
from rich.cells import cell_len

from tests.conftest import ROOT, attn
from tests.model_fixtures import make_bert, make_gpt2

WIDTHS = (40, 60, 80, 100, 120, 200)
SENTENCE = "time flies like an arrow and fruit flies like a banana"
LONG = " ".join(f"w{i}" for i in range(60))
CUT = re.compile(r"[^\s(]…")  # a cut: text, then the ellipsis (a formula may write "tanh(…)")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    return {
        "bert": make_bert(folder / "bert-tiny", n_layer=2, n_head=12, d_model=48),
        "gpt2": make_gpt2(folder / "gpt2-tiny"),
    }


GOLDEN_GPT2 = ROOT / "tests" / "models" / "golden" / "gpt2"
COMMANDS = {
    "show": ["show", SENTENCE],
    "show --heads 4": ["show", SENTENCE, "--heads", "4"],
    "show --stats --mask causal": ["show", SENTENCE, "--stats", "--mask", "causal"],
    "show --context": ["show", SENTENCE, "--context", "the cat sat on the mat with a very long hippopotamus"],
    "show --query": ["show", SENTENCE, "--query", "banana", "--heads", "2"],
    "show --mean-heads": ["show", SENTENCE, "--heads", "4", "--mean-heads"],
    "show long": ["show", LONG],
    "show --precision 6": ["show", SENTENCE, "--precision", "6"],
    "show --head --theme light": ["show", SENTENCE, "--heads", "4", "--head", "2", "--theme", "light"],
    "show --mask causal": ["show", SENTENCE, "--mask", "causal"],
    "show stdin --keep-newline": ["show", "-", "-t", "char", "--keep-newline"],
    "steps": ["steps", "time flies like", "--heads", "2", "-v", "additive", "--mask", "causal"],
    "tokens": ["tokens", SENTENCE, "-t", "bpe"],
    "compare": ["compare", SENTENCE, "--variants", "scaled,cosine,performer"],
    "compare tokenizers": ["compare", SENTENCE],
    "compare scaled,cosine": ["compare", SENTENCE, "--variants", "scaled,cosine"],
    "compute": ["compute", "--input", ROOT / "docs" / "two_by_two.json"],
    "variants": ["variants"],
    "show --model": ["show", SENTENCE, "--model", "{bert}"],
    "show --model gpt2 --rollout": ["show", SENTENCE, "--model", "{gpt2}", "--rollout"],
    "heads --model": ["heads", SENTENCE, "--model", "{bert}"],
    "heads --model --lines": [
        "heads",
        "--model",
        "{bert}",
        "--lines",
        "--file",
        ROOT / "sample_texts" / "ambiguity.txt",
        "--workers",
        "1",  # in-process: a pool forked from a test process with threads may hang
    ],
    "show --model --query": ["show", SENTENCE, "--model", "{bert}", "--query", "flies", "--head", "3"],
    "steps --model": ["steps", "time flies", "--model", "{gpt2}"],
    "lens --model": ["lens", SENTENCE, "--model", "{gpt2}"],
    "ablate --model": ["ablate", SENTENCE, "--model", "{gpt2}"],
    "patch --model": [
        "patch",
        "time flies like an arrow",
        "--corrupt",
        "time fries like an arrow",
        "--model",
        GOLDEN_GPT2,
        "--target",
        "Ġa",
        "--contrast",
        "Ġl",
    ],
    "dla --model": ["dla", "time flies like an arrow", "--model", GOLDEN_GPT2, "--target", "Ġa"],
    "knockout --model": ["knockout", "time flies like an arrow", "--model", GOLDEN_GPT2, "--from", "flies"],
    "show --model --generate": ["show", SENTENCE, "--model", "{gpt2}", "--generate", "4"],
    "steps --model --contrib alti": ["steps", "time flies", "--model", GOLDEN_GPT2, "--contrib", "alti"],
    "heads --model --contrib norm": ["heads", SENTENCE, "--model", "{bert}", "--contrib", "norm"],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_fits_every_width_without_a_cut(name, models):
    args = [str(a).format(**models) for a in COMMANDS[name]]
    for width in WIDTHS:
        r = attn(*args, "--width", width, "--color", "never", input="ab\n")
        assert r.exit_code == 0, (name, width, r.output)
        for line in r.stdout.splitlines():
            assert cell_len(line) <= width, (name, width, line)
            assert not CUT.search(line), (name, width, line)


def test_the_width_is_checked():
    r = attn("show", "a b", "--width", "5")
    assert r.exit_code == 2 and "--width must be between 20 and 10000 columns, got 5" in r.stderr


TABLES = {  # the tables of words and numbers (matrices have their own forms): from a title to the next part
    "show --stats": (["show", SENTENCE, "--stats", "--heads", "2"], "Head statistics", "entropy −Σ"),
    "tokens": (["tokens", SENTENCE, "-t", "bpe"], "", "11 tokens (bpe)"),
    "compare": (["compare", SENTENCE], "Tokenizers compared", "d_model"),
    "variants": (["variants"], "", "widths: equal"),
}
RULE = re.compile(r"^[─━]+$")


def _words(args, width, start, end) -> list[str]:
    r = attn(*args, "--width", width, "--color", "never")
    assert r.exit_code == 0, r.output
    text = r.stdout[r.stdout.index(start) : r.stdout.index(end)]
    return [w for w in text.split() if not RULE.match(w)]


@pytest.mark.parametrize("name", TABLES)
def test_tables_never_fold_a_word_or_a_number(name):
    args, start, end = TABLES[name]
    whole = set(_words(args, 1000, start, end))
    for width in WIDTHS:
        folded = sorted(set(_words(args, width, start, end)) - whole - {"—", "·"})
        assert not folded, (name, width, folded)


def _svg_lines(svg: str) -> list[str]:
    """The SVG's text as lines, each piece at its column (Rich places it at x = column × 12.2)."""
    rows: dict[float, dict[int, str]] = {}
    for x, y, text in re.findall(r'<text[^>]*? x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(y), {})[round(float(x) / 12.2)] = html.unescape(text).replace("\xa0", " ")
    lines = []
    for pieces in (rows[y] for y in sorted(rows)):
        line = ""
        for column, text in sorted(pieces.items()):
            line = line.ljust(column) + text
        lines.append(line.rstrip())
    return lines


def test_pictures_are_drawn_at_the_width_asked(tmp_path):
    svg, page = tmp_path / "a.svg", tmp_path / "a.html"
    r = attn("show", SENTENCE, "--width", 60, "--color", "never", "--save-svg", svg, "--save-html", page)
    assert r.exit_code == 0, r.output
    shown = [line.rstrip() for line in r.stdout.splitlines()]
    assert shown[1].split() == [str(i) for i in range(11)]  # the 60-column form: index headers, "0 time" rows
    lines = [line for line in _svg_lines(svg.read_text()) if line.strip() != "attn show"]  # its window title
    assert lines == shown  # what was printed, as it was laid out
    assert max(cell_len(line) for line in lines) <= 60
    assert "attncli.view/4" in page.read_text()  # --save-html writes the interactive page, which lays itself out


ATOMIC = {  # the 8 commands whose labels and numbers must stay together at every width (issue 24, item 6)
    "show": ["show", SENTENCE],
    "show --stats": ["show", SENTENCE, "--stats", "--mask", "causal"],
    "steps": ["steps", "time flies like", "--heads", "2", "-v", "additive", "--mask", "causal"],
    "tokens": ["tokens", SENTENCE, "-t", "bpe"],
    "compare": ["compare", SENTENCE],
    "heads": ["heads", SENTENCE, "--model", "{bert}"],
    "variants": ["variants"],
    "show --model": ["show", SENTENCE, "--model", "{bert}"],
}
ATOMIC_WIDTHS = (40, 60, 80, 120, 200)
BOX = re.compile(r"[│┃║─━╭╮╰╯┌┐└┘├┤┬┴┼▏]")
FRAGMENT = re.compile(r"\S+(?: \S+)*")  # a run of words one space apart: a cell's line, or a paragraph's
SEPARATOR = {"·", "—", "–", "•", "…", "|", "+", "−", "-", "=", "≈", "×"}  # a list or a sum may wrap after these
NUMBER = re.compile(r"[−+-]?[▸\d.,%]+")  # a matrix's index or cell: two side by side are no label and number


def _fragments(line: str) -> list[tuple[int, int, list[str]]]:
    return [(m.start(), m.end(), m.group().split()) for m in FRAGMENT.finditer(BOX.sub(" ", line))]


def _in_a_term(words: list[str]) -> bool:
    """Whether the words end inside a bracket opened mid-word (`tanh(W₁q + W₂k +`): inside a formula's term."""
    depth = []
    for word in words:
        for k, c in enumerate(word):
            if c in "([":
                depth.append(k > 0 and word[k - 1] not in "([")
            elif c in ")]" and depth:
                depth.pop()
    return any(depth)


def _label_and_number(before: list[str], after: str) -> bool:
    """Whether the last word of `before` and `after` are one unit: a label and its number, or a formula term."""
    a = before[-1]
    if _in_a_term(before):
        return True
    if a in SEPARATOR or after in SEPARATOR or a[-1] in ",;:":
        return False
    numbers = NUMBER.fullmatch(a) and NUMBER.fullmatch(after)
    return bool(re.search("[0-9]", a + after)) and not numbers


def split_units(narrow: str, wide: str) -> list[str]:
    """Each place where a line (or a cell's line) ends in a word whose unit goes on at the start of the next,
    where at 1000 columns the two words sit side by side: `L0` over `H7 0.85`, `3.02 of` over `3.46`."""
    together = set()
    for line in wide.splitlines():
        for _, _, words in _fragments(line):
            together.update(itertools.pairwise(words))
    lines = narrow.splitlines()
    found = []
    for above, below in itertools.pairwise(lines):
        for start, end, words in _fragments(above):
            for s, e, nexts in _fragments(below):
                side_by_side = s < end and start < e and (words[-1], nexts[0]) in together
                if side_by_side and _label_and_number(words, nexts[0]):
                    found.append(f"{' '.join(words[-3:])} / {' '.join(nexts[:3])}")
    return found


def test_a_split_unit_is_found():
    wide = "L3 H3 0.82, L0 H7 0.85 · max 0.31 a→flies\ns = vᵀ tanh(W₁q + W₂k + b)"
    assert split_units("L3 H3 0.82, L0\nH7 0.85", wide) == ["H3 0.82, L0 / H7 0.85"]
    assert split_units("s = vᵀ tanh(W₁q + W₂k +\nb)", wide) == ["+ W₂k + / b)"]
    assert split_units("L3 H3 0.82,\nL0 H7 0.85 · max 0.31\na→flies", wide) == ["· max 0.31 / a→flies"]
    assert split_units("L3 H3 0.82, L0 H7 0.85 ·\nmax 0.31 a→flies\ns = vᵀ\ntanh(W₁q + W₂k + b)", wide) == []


@pytest.mark.parametrize("width", ATOMIC_WIDTHS)
@pytest.mark.parametrize("name", ATOMIC)
def test_labels_stay_with_their_numbers(name, width, models):
    args = [str(a).format(**models) for a in ATOMIC[name]]
    wide, narrow = (attn(*args, "--width", w, "--color", "never") for w in (1000, width))
    assert wide.exit_code == 0 and narrow.exit_code == 0, narrow.output
    assert split_units(narrow.stdout, wide.stdout) == [], (name, width)


@pytest.mark.parametrize("width", ATOMIC_WIDTHS)
def test_a_model_keeps_its_tokens_next_to_every_head(width, models):
    r = attn("show", SENTENCE, "--model", models["bert"], "--width", width, "--color", "never")
    assert r.exit_code == 0, r.output
    text = r.stdout[: r.stdout.index("bert-tiny")]  # the matrices, before the caption
    blocks = re.split(r"^head \d+ ", text, flags=re.M)[1:] or [text]  # one per row of matrices
    assert len(blocks) >= 1
    for block in blocks:
        assert "banana" in block, (width, block)  # its tokens: as headers, row labels or a key under it
