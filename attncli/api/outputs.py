"""What the Python API returns: the document a command writes, with the ways to look at it.

An `Output` holds the same document (`attncli.io.documents`) that `attn` hands to its output for the same
options, so `to_json()` is byte for byte what `-f json` prints, `save(path)` writes what `-o path` writes,
a terminal REPL shows the table (`__rich_console__`, `__repr__`), and a notebook the interactive page
(`_repr_html_`, in a sandboxed iframe: see `attncli.api.page.inline`).
"""

from __future__ import annotations

import functools
import io
from typing import TYPE_CHECKING, Any

from attncli.api.page import inline
from attncli.errors import ConfigError

if TYPE_CHECKING:  # annotations only: numpy and the documents load with a run
    import numpy as np

    from attncli.io.documents import Document, View
    from attncli.pipeline.result import AttentionResult


class Output:
    """A command's document, written or shown as the command's options would (`precision`: --precision);
    `warnings` are what the tokenizer had to say about the text (a truncation), which `attn` prints on stderr."""

    def __init__(self, document: Document, precision: int | None = None, warnings: tuple[str, ...] = ()):
        from attncli.io.output import check_precision  # late: start-up (output machinery)

        check_precision(precision)
        self.document = document
        self.precision = precision
        self.warnings = warnings

    def to_json(self) -> str:
        """What `-f json` prints for the same options, one string."""
        return self.written("json").decode("utf-8")

    def written(self, fmt: str) -> bytes:
        """The document in a data format of `attn`'s `-f` (json, jsonl, csv, npy, npz, parquet), as bytes."""
        from attncli.io.formats import FORMATS, formats_for  # late: start-up (output machinery)

        entry = FORMATS.get(fmt)
        writer = None if entry is None else entry.writers.get(type(self.document))
        if writer is None:
            data = [name for name in formats_for(type(self.document)) if not FORMATS[name].picture]
            raise ConfigError(self.document.not_available(self.document.command, fmt, data))
        stream = io.BytesIO()
        writer(self.document, stream, self.precision)
        return stream.getvalue()

    def save(self, path: str, fmt: str | None = None) -> None:
        """Write to `path` what `attn ... -o path` writes (the format from its extension unless `fmt`; .html is
        the interactive page where there is one), atomically: a failed write leaves no half file."""
        from attncli.io.output import emit  # late: start-up (output machinery)

        emit(self.document, fmt, path, self.precision, "never")

    @functools.cached_property
    def view(self) -> View | None:
        """The interactive page's document (schema attncli.view/4 in `.doc`), made once; None: this output has
        no page (a corpus's statistics, a list of tokens)."""
        return None if self.document.view is None else self.document.view()

    def page(self) -> str | None:
        """The interactive page, one self-contained HTML string (what `-f html` writes), or None."""
        view = self.view
        return None if view is None else view.page(view.doc)

    def _repr_html_(self) -> str | None:
        """Jupyter and VS Code notebooks: the interactive page inline (None: the table, from `__repr__`)."""
        page = self.page()
        return None if page is None else inline(page)

    def __rich_console__(self, console, options):  # Rich's protocol: what a console prints, at its width
        yield from self.document.renderables(2 if self.precision is None else self.precision, options.max_width)

    def __repr__(self) -> str:
        """The table, as `attn` prints it without colour at the terminal's width."""
        from attncli.io.console import console  # late: start-up (Rich only where a table is drawn)

        buffer = io.StringIO()
        console("never", file=buffer).print(self)
        return buffer.getvalue().rstrip("\n")


class Attention(Output):
    """The output of `show` and `steps`: one run's tokens, scores, weights and outputs (NumPy arrays, with
    m queries, n keys, h heads), and the whole `result` (attncli.pipeline.result.AttentionResult)."""

    def __init__(
        self, document: Document, result: AttentionResult, precision: int | None = None, contributions: Any = None
    ):
        super().__init__(document, precision, result.tokens.warnings)
        self.result = result
        #: `contrib=`'s maps (models/interpret/contrib.py's Contributions: measure, heads, layer_matrix, rollout),
        #: or None
        self.contributions = contributions

    @property
    def tokens(self) -> list[str]:
        """The queries' tokens (the rows), as the tokenizer writes them."""
        return list(self.result.tokens.strings)

    @property
    def key_tokens(self) -> list[str]:
        """The keys' tokens (the columns): the context's in cross-attention, else the tokens."""
        return list(self.result.key_tokens.strings)

    @property
    def weights(self) -> np.ndarray | None:  # [h, m, n]
        """A = softmax(S) per head, rows summing to 1; None with no_weights=True."""
        return self.result.weights

    @property
    def scores(self) -> np.ndarray | None:  # [h, m, n]
        """The scores before any mask; None with no_weights=True."""
        return self.result.scores

    @property
    def outputs(self) -> np.ndarray:  # [m, d_model]
        """O = concat(O_h) W_O, the merged output of the heads."""
        return self.result.output

    @property
    def head_outputs(self) -> np.ndarray:  # [h, m, d_v]
        """O_h = A_h V_h, each head's output."""
        return self.result.head_outputs


class Records(Output):
    """The output of `heads`, `corpus`, `tokens`, `compare` and `variants`: a small document of flat rows
    (`doc["rows"]`). `stopped`: what ended a corpus run early (its rows are of the lines before), else None."""

    stopped: BaseException | None = None

    @property
    def doc(self) -> dict[str, Any]:
        """The whole document, as `-f json` writes it."""
        return self.document.doc  # type: ignore[attr-defined]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.doc["rows"]


class Page(Attention):
    """The output of `view`: the interactive page (`html`) and its data (`doc`, schema attncli.view/4), and the
    run it shows (the layer it opens at, for a model)."""

    @functools.cached_property
    def view(self) -> View | None:
        """The page's document is its view."""
        return self.document  # type: ignore[return-value]

    @property
    def doc(self) -> dict[str, Any]:
        return self.document.doc  # type: ignore[attr-defined]

    @property
    def html(self) -> str:
        return self.document.page(self.doc)  # type: ignore[attr-defined]
