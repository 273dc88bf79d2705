"""A loaded model: its `Weights`, read from the safetensors files on first use, and the `Model` that holds them
with its family, hyper-parameters and tokenizer. What load.py builds from a folder and what every block, the
forward pass and the runs read; its own module, so that the families' blocks can name it without importing the
loader (which imports the families).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .chat import Chat, ChatTemplate
from .families.registry import Family
from .folder import finite


class Weights:
    """The tensors a model needs, by their prefix-free names (`encoder.layer.0.attention.self.query.weight`).

    Each tensor is read from its safetensors file on first use, as float32, and kept; the word
    embedding table is read row by row (`rows`), so a short text never reads the whole table. A forward pass may
    have tensors read ahead on a second thread (`read_ahead`, see readahead.py): asking for one of those waits for
    its reading, and raises the error the reading met.
    """

    def __init__(self, sources: dict[str, tuple[Any, str]], nbytes: int = 0):
        self._sources = sources  # name -> (its TensorFile, name stored in the file)
        self.nbytes = nbytes  # all of them as float32, as priced against ATTN_MAX_MEMORY
        self._cache: dict[str, np.ndarray] = {}
        self._made: dict[tuple, Any] = {}  # what `made` built from the tensors, by its key
        self._lock = threading.Lock()  # over the three below, shared with the read-ahead's thread
        self._claimed: dict[str, None] = {}  # every name read from its file or being read, in the order claimed
        self._ahead: dict[str, threading.Event] = {}  # names `read_ahead` claimed and __getitem__ has not taken
        self._landed: dict[str, Any] = {}  # what those readings gave: the tensor or the exception

    def __getitem__(self, name: str) -> np.ndarray:  # -> the tensor, float32
        if name not in self._cache:
            with self._lock:
                read = self._ahead.pop(name, None)
                if read is None:
                    self._claimed[name] = None
            if read is None:
                self._cache[name] = self._read(name)
            else:
                read.wait()
                landed = self._landed.pop(name)
                if isinstance(landed, Exception):
                    raise landed
                self._cache[name] = landed
        return self._cache[name]

    def _read(self, name: str) -> np.ndarray:  # -> the tensor from its file, float32, checked finite
        handle, stored = self._sources[name]
        tensor, all_finite = handle.get_slice(stored).read_checked()  # float32, checked in the reading pass
        return tensor if all_finite else finite(tensor, stored, "the weights")

    def read_ahead(self, name: str) -> None:
        """Read `name` now, for __getitem__ to take later, unless it has been read or is being read (on another
        thread than the one that asks: see readahead.py). An error is kept, for __getitem__ to raise."""
        with self._lock:
            if name in self._claimed:
                return
            self._claimed[name] = None
            read = self._ahead[name] = threading.Event()
        try:
            self._landed[name] = self._read(name)
        except Exception as e:  # raised again where the pass asks for the tensor
            self._landed[name] = e
        finally:
            read.set()

    @property
    def overlaps(self) -> bool:
        """Whether reading a tensor leaves the GIL to other threads, so that reading ahead on one overlaps the pass
        on another: safetensors files (NumPy's copy, shift and reductions), not GGUF files (see GGUFHandle)."""
        return all(handle.overlaps for handle, _ in self._sources.values())

    def claimed(self) -> list[str]:
        """Every tensor read (or being read) from its file so far, in the order of the first asking."""
        with self._lock:
            return list(self._claimed)

    def joined(self, names: tuple[str, ...]) -> np.ndarray:  # [out_i, in] each -> [in, Σ out_i]; [d_i] -> [Σ d_i]
        """nn.Linear weights (or biases) side by side, transposed to [in, out], in one C-contiguous array made on
        first use and kept instead of its parts: projections that read one input become one product."""
        key = "joined " + " + ".join(names)  # never a tensor's name
        if key not in self._cache:
            parts = [self[name] for name in names]
            joined = np.empty((*parts[0].shape[1:][::-1], sum(len(p) for p in parts)), np.float32)
            at = 0
            for part in parts:  # each part transposed into its columns: one copy, no concatenated array between
                joined[..., at : at + len(part)] = part.T
                at += len(part)
            self._cache[key] = joined
            for name in names:
                del self._cache[name]  # kept once, in the joined array
        return self._cache[key]

    def made(self, key: tuple, make: Callable[[], Any]) -> Any:
        """make(), built on first use and kept under `key`: what a block derives from the tensors once per model
        (a layer's projections) rather than once per forward pass. Never to be changed by its readers."""
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    def __contains__(self, name: object) -> bool:
        return name in self._sources

    def shape(self, name: str) -> tuple[int, ...]:
        handle, stored = self._sources[name]
        return tuple(handle.get_slice(stored).get_shape())

    def rows(self, name: str, ids: np.ndarray) -> np.ndarray:  # [n] -> [n, d]
        """Rows `ids` of a 2-D tensor, reading only those rows unless the tensor is already loaded."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if name in self._cache:
            return self._cache[name][ids]
        handle, stored = self._sources[name]
        return finite(_float32(handle.get_slice(stored).rows(ids)), stored, "the weights")


def _float32(a: np.ndarray) -> np.ndarray:  # any float dtype -> float32 (no copy if already float32)
    return a.astype(np.float32, copy=False)


WEIGHTS_MARK = "attncli_weights"  # config.json: what a test model's weights are ("random weights, never trained")
MARK_CHARS = 120  # a longer or unprintable marker is not shown (a config.json is untrusted)


@dataclass(frozen=True)
class Model:
    """A loaded model folder. `weights` are read on first use; `tokenizer` is a `tokenizers.Tokenizer`."""

    path: Path
    name: str  # for messages and captions: the folder's name (see _display_name)
    model_type: str  # config.json's model_type ("bert", "gpt2", "llama", ...)
    family: Family = field(repr=False)  # the registry entry whose blocks run it (FAMILIES)
    config: dict = field(repr=False)
    n_layer: int
    n_head: int
    d_model: int
    d_k: int  # head width: head_dim if the config gives one, else d_model // n_head
    n_kv_head: int  # key/value heads (grouped-query attention: fewer than n_head)
    max_positions: int
    causal: bool  # decoders: True (keys after the query are masked); BERT: False
    eps: float  # LayerNorm / RMSNorm epsilon
    activation: str  # hidden_act / activation_function
    hp: dict = field(repr=False)  # every hyper-parameter the forward pass reads
    weights: Weights = field(repr=False)
    tokenizer: Any = field(repr=False)
    vocab_size: int  # rows of the word embedding table
    # a decoder's output matrix [vocab, d_model] in `weights`: the word table if tied, else its own head; None: an
    # encoder, or an untied decoder saved without its head (a base model's checkpoint)
    unembed: str | None = None
    chat_template: ChatTemplate | None = field(default=None, repr=False)  # its files' chat template, if any
    chat: Chat | None = None  # --chat: each text is read as the user's message in `chat_template` (chat.py)

    @property
    def weights_said(self) -> str:
        """What its weights are, as the folder says it: the marker a test model's config.json carries
        (WEIGHTS_MARK, written by tools/golden_*.py: "random weights, never trained: ..."), else only that they are
        its own: whether a checkpoint was trained is nothing attn can read from it, so it is never assumed."""
        said = self.config.get(WEIGHTS_MARK)
        if isinstance(said, str) and 0 < len(said) <= MARK_CHARS and said.isprintable():
            return said
        return "its own weights"

    @property
    def summary(self) -> str:
        """One line for captions: `MiniLM (bert, 6 layers x 12 heads, d_model 384, its own weights)`."""
        return (
            f"{self.name} ({self.model_type}, {self.n_layer} layers x {self.n_head} heads, "
            f"d_model {self.d_model}, {self.weights_said})"
        )
