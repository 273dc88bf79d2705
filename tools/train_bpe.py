"""Train the shipped byte-level BPE tokenizer (``attncli/data/tokenizer.json``).

The ``bpe`` tokenizer of attncli is a GPT-2 style byte-level BPE trained with
the Hugging Face ``tokenizers`` library on ``sample_texts/bpe_corpus.txt``
(about 50 KB of original English prose). Training starts from the 256 byte
symbols (so no text ever needs an unknown token), then repeatedly merges the
most frequent neighbouring pair until the vocabulary has ``--vocab-size``
entries. A space is glued to the word after it and shown as ``Ġ``.

Worked example, with the shipped file::

    >>> from tokenizers import Tokenizer
    >>> tok = Tokenizer.from_file("attncli/data/tokenizer.json")
    >>> enc = tok.encode("time flies like an arrow")
    >>> enc.tokens
    ['time', 'Ġflies', 'Ġlike', 'Ġan', 'Ġarrow']
    >>> enc.ids
    [858, 478, 431, 336, 461]
    >>> enc.offsets          # character spans; the space is not included
    [(0, 4), (5, 10), (11, 15), (16, 18), (19, 24)]
    >>> tok.encode("fruit flies like a banana").tokens
    ['fruit', 'Ġflies', 'Ġlike', 'Ġa', 'Ġbanana']
    >>> tok.encode("Zürich 🏹").tokens   # rare characters fall back to bytes
    ['ZÃ¼', 'rich', 'Ġ', 'ð', 'Ł', 'ı', '¹']
    >>> tok.decode(tok.encode("Zürich 🏹").ids)
    'Zürich 🏹'

A byte token shows its byte through GPT-2's byte-to-character table (``ü`` is
the two bytes ``Ã¼``; the four bytes of ``🏹`` are four tokens that share the
span of that one character). A token that is only a space has an empty span.

Regenerate or verify the shipped file from the repository root::

    python tools/train_bpe.py            # writes attncli/data/tokenizer.json
    python tools/train_bpe.py --check    # exit 1 if it would differ

The output is byte-identical across runs and processes (checked with
different PYTHONHASHSEED and RAYON_NUM_THREADS): the library writes the
vocabulary in id order and the merges in rank order, and training breaks ties
deterministically. We still parse and re-dump the JSON with ``json.dumps``
(two-space indent, UTF-8 unescaped, ``\\n`` newlines, a trailing newline) so
the bytes do not hang on the library's pretty-printer; with tokenizers 0.23
the two agree except for that trailing newline. Another tokenizers version
may serialise new fields: re-run this script after upgrading it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = REPO_ROOT / "attncli"
DEFAULT_CORPUS = REPO_ROOT / "sample_texts" / "bpe_corpus.txt"
DEFAULT_OUTPUT = PACKAGE_DIR / "data" / "tokenizer.json"
DEFAULT_VOCAB_SIZE = 2000
MIN_FREQUENCY = 2  # a pair seen once in the corpus is noise, not a merge
SPECIAL_TOKENS = ["<|endoftext|>"]


def read_corpus(path: Path) -> list[str]:
    """The corpus as training lines: strict UTF-8, CRLF-proof, blank lines dropped."""
    text = Path(path).read_bytes().decode("utf-8")
    return [line for line in text.splitlines() if line.strip()]


def train(lines: list[str], vocab_size: int = DEFAULT_VOCAB_SIZE):
    """Train a byte-level BPE ``tokenizers.Tokenizer`` on ``lines``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # trim_offsets: the offsets of "Ġflies" cover "flies", not " flies".
    # add_prefix_space=False to match the pre-tokenizer; with True, a text
    # that starts with one space would keep that space in its first offset.
    tokenizer.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=MIN_FREQUENCY,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(lines, trainer=trainer)
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def serialize(tokenizer) -> bytes:
    """Canonical bytes of ``tokenizer``: the library's JSON, re-dumped with fixed formatting.

    Key order is kept as the library writes it (vocab in id order, which is
    what a reader expects); ``json.dumps`` fixes the indentation and escaping.
    """
    data = json.loads(tokenizer.to_str())
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    return text.encode("utf-8")


def build(corpus: Path = DEFAULT_CORPUS, vocab_size: int = DEFAULT_VOCAB_SIZE) -> bytes:
    """Train on ``corpus`` and return the bytes of tokenizer.json."""
    return serialize(train(read_corpus(corpus), vocab_size))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/train_bpe.py",
        description="Train the shipped byte-level BPE tokenizer.",
    )
    parser.add_argument(
        "--corpus", type=Path, default=DEFAULT_CORPUS, help="training text, UTF-8 (default: %(default)s)"
    )
    parser.add_argument(
        "--output", type=Path, default=DEFAULT_OUTPUT, help="tokenizer.json to write or check (default: %(default)s)"
    )
    parser.add_argument(
        "--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE, help="target vocabulary size (default: %(default)s)"
    )
    parser.add_argument("--check", action="store_true", help="train in memory; exit 1 if OUTPUT differs byte for byte")
    args = parser.parse_args(argv)
    if args.vocab_size < 257:
        parser.error("--vocab-size must be at least 257 (256 bytes + <|endoftext|>)")

    started = time.perf_counter()
    try:
        data = build(args.corpus, args.vocab_size)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"Error: cannot read corpus {args.corpus}: {exc}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - started
    vocab_size = len(json.loads(data)["model"]["vocab"])

    if args.check:
        try:
            current = args.output.read_bytes()
        except OSError as exc:
            print(f"Error: cannot read {args.output}: {exc}", file=sys.stderr)
            return 1
        if current != data:
            print(f"{args.output} is out of date; run: python tools/train_bpe.py", file=sys.stderr)
            return 1
        print(f"{args.output} is up to date ({vocab_size} tokens, {elapsed:.2f}s)")
        return 0

    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_name(args.output.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(args.output)
    print(f"wrote {args.output}: {vocab_size} tokens, {len(data)} bytes, trained in {elapsed:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
