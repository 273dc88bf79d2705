"""A loaded model: its `Weights`, read from the safetensors files on first use, and the `Model` that holds them
with its family, hyper-parameters and tokenizer. What load.py builds from a folder and what every block, the
forward pass and the runs read; its own module, so that the families' blocks can name it without importing the
loader (which imports the families).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attncli.errors import ConfigError
from attncli.models.files.folder import finite
from attncli.models.network.families.registry import Family
from attncli.models.text.chat import Chat, ChatTemplate


class Weights:
    """The tensors a model needs, by their prefix-free names (`encoder.layer.0.attention.self.query.weight`).

    Each tensor is read from its file on first use, as float32. What is kept is bounded by the memory budget: a
    run tells the weights how many bytes they may hold (`fit`, from folder.py's `check_run`), and the layers
    0..k-1 that fit in it (with the tensors of no layer) are kept; the tensors of a later layer are held only while
    that layer runs and dropped when the pass reaches another layer (streamed: read again by the next pass). Keeping
    the first layers, not the last used, is the policy that keeps the most of a pass that goes through the layers
    in order, again and again (a generation): a pass never finds what it needs next evicted by itself. A model that
    fits is kept whole, as before, so that a 135M model is dequantized once and an 8B one streams.

    The `tables` (the word embedding table, read by rows, and the output head, used a chunk of rows at a time when
    it does not fit: models/network/unembed.py) are not priced whole. A forward pass may have tensors read ahead on a
    second thread (`read_ahead`, see readahead.py): asking for one of those waits for its reading, and raises the error
    the reading met.
    """

    def __init__(self, sources: dict[str, tuple[Any, str]], nbytes: int = 0, tables: tuple[str | None, ...] = ()):
        self._sources = sources  # name -> (its TensorFile, name stored in the file)
        self.nbytes = nbytes  # all of them as float32
        self.tables = {t for t in tables if t is not None and t in sources}
        self._sizes = {name: 4 * math.prod(self.shape(name)) for name in sources}  # float32 bytes
        self._layer = {name: layer_of(name) for name in sources}
        self._cache: dict[str, np.ndarray] = {}  # what is kept: the first `_kept` layers and the tensors of none
        self._made: dict[tuple, Any] = {}  # what `made` built from the tensors, by its key (kept alike)
        self._passing: dict[str, np.ndarray] = {}  # the tensors of the streamed layer the pass is in
        self._passing_made: dict[tuple, Any] = {}
        self._passing_layer: int | None = None
        self._kept = ALL  # layers below this are kept (all, until a run is priced: `fit`)
        self.reads_ahead = True  # whether the room holds a layer read ahead beside the streamed one (`fit`)
        self._lock = threading.Lock()  # over the four below, shared with the read-ahead's thread
        self._claimed: dict[str, None] = {}  # every name read from its file or being read, and not dropped since
        self._log: list[str] = []  # every claim, in order (readahead.py learns a layer's reads from it)
        self._ahead: dict[str, threading.Event] = {}  # names `read_ahead` claimed and __getitem__ has not taken
        self._landed: dict[str, Any] = {}  # what those readings gave: the tensor or the exception
        self.first_reads: dict[str, list[str]] = {}  # layer 0's reads per block, learnt by readahead.py

    # ---- what a pass holds, priced ----

    def layer_bytes(self) -> dict[int, int]:
        """Each layer's tensors as float32, by layer."""
        out: dict[int, int] = {}
        for name, layer in self._layer.items():
            if layer is not None:
                out[layer] = out.get(layer, 0) + self._sizes[name]
        return out

    def _fixed(self) -> int:  # the tensors of no layer, but the tables: always kept
        return sum(size for n, size in self._sizes.items() if self._layer[n] is None and n not in self.tables)

    def least(self, upto: int | None = None) -> int:
        """The bytes of weights a pass through layer `upto` (default: all) holds at least: the tensors of no layer,
        then its layers (the largest, streamed, if that is less), and a chunk of each table (`TABLE_CHUNK`)."""
        read = [size for layer, size in self.layer_bytes().items() if upto is None or layer <= upto]
        chunks = sum(min(self._sizes[t], TABLE_CHUNK) for t in self.tables)
        return self._fixed() + min(sum(read), max(read, default=0)) + chunks

    def fit(self, room: int | None) -> None:
        """Keep no more than `room` bytes (None: no limit): as many first layers as fit beside a streamed one (or
        every layer and the tables whole when all fit); what no longer fits is dropped, to be read again."""
        layers = self.layer_bytes()
        whole = self._fixed() + sum(layers.values()) + sum(self._sizes[t] for t in self.tables)
        kept, self.reads_ahead = ALL, True
        if room is not None and whole > room:
            left, kept = room - self.least(), 0  # beside the tensors of no layer, the streamed layer, the chunks
            # a layer read ahead (readahead.py) while the streamed one runs, when there is room for it: first, as
            # it hides the reading of every streamed layer, where a kept one spares one
            biggest = max(layers.values(), default=0)
            self.reads_ahead = self.overlaps and left >= biggest
            left -= biggest if self.reads_ahead else 0
            while kept in layers and layers[kept] <= left:
                left -= layers[kept]
                kept += 1
        if kept < self._kept:

            def later(key: Any) -> bool:  # a table, or a tensor (or what was made) of a layer no longer kept
                layer = _key_layer(key)
                return key in self.tables or (layer is not None and layer >= kept)

            self._drop(later, self._cache, self._made)
        self._kept = kept

    def whole(self, name: str) -> bool:
        """Whether table `name` is used whole (it is held, or every layer is kept: all fits), else a chunk of rows
        at a time (models/network/unembed.py)."""
        return name in self._cache or self._kept == ALL

    def _drop(self, which: Callable[[Any], bool], tensors: dict, made: dict) -> None:
        """Forget the tensors (and what was made of them) whose keys `which` picks, so that they are read again."""
        gone = [name for name in tensors if which(name)]
        for name in gone:
            del tensors[name]
        for key in [key for key in made if which(key)]:
            del made[key]
        with self._lock:
            for name in gone:  # a joined array's parts were read from the file under their own names
                for part in name.removeprefix("joined ").split(" + ") if name.startswith("joined ") else [name]:
                    self._claimed.pop(part, None)

    def _holder(self, layer: int | None) -> tuple[dict, dict]:  # -> where a tensor (and what is made) of it goes
        if layer is None or layer < self._kept:
            return self._cache, self._made
        if layer != self._passing_layer:  # the pass moved on: the streamed layer before is dropped
            self._drop(lambda _: True, self._passing, self._passing_made)
            self._passing_layer = layer
        return self._passing, self._passing_made

    # ---- the tensors ----

    def __getitem__(self, name: str) -> np.ndarray:  # -> the tensor, float32
        held = self._cache.get(name)
        if held is None:
            held = self._passing.get(name)
        if held is not None:
            return held
        with self._lock:
            read = self._ahead.pop(name, None)
            if read is None:
                self._claim(name)
        if read is None:
            tensor = self._read(name)
        else:
            read.wait()
            landed = self._landed.pop(name)
            if isinstance(landed, Exception):
                raise landed
            tensor = landed
        self._holder(self._layer.get(name))[0][name] = tensor
        return tensor

    def _claim(self, name: str) -> None:  # under the lock
        self._claimed[name] = None
        self._log.append(name)

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
            self._claim(name)
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

    def is_claimed(self, name: str) -> bool:
        """Whether `name` is held (or being read): read from its file and not dropped since."""
        with self._lock:
            return name in self._claimed

    def claimed(self) -> list[str]:
        """Every tensor read (or being read) from its file so far, in the order of the asking (a streamed tensor
        again each time it is read again)."""
        with self._lock:
            return list(self._log)

    def joined(self, names: tuple[str, ...]) -> np.ndarray:  # [out_i, in] each -> [in, Σ out_i]; [d_i] -> [Σ d_i]
        """nn.Linear weights (or biases) side by side, transposed to [in, out], in one C-contiguous array made on
        first use and kept instead of its parts: projections that read one input become one product."""
        key = "joined " + " + ".join(names)  # never a tensor's name
        parts_layer = self._layer.get(names[0])
        held = self._cache.get(key)
        if held is None:
            held = self._passing.get(key)
        if held is None:
            parts = [self[name] for name in names]
            held = np.empty((*parts[0].shape[1:][::-1], sum(len(p) for p in parts)), np.float32)
            at = 0
            for part in parts:  # each part transposed into its columns: one copy, no concatenated array between
                held[..., at : at + len(part)] = part.T
                at += len(part)
            del parts
            tensors = self._holder(parts_layer)[0]
            tensors[key] = held
            for name in names:
                tensors.pop(name, None)  # kept once, in the joined array
        return held

    def made(self, key: tuple, make: Callable[[], Any]) -> Any:
        """make(), built on first use and kept under `key` (with the tensors of its layer, the first number in the
        key: dropped with them when streamed): what a block derives from the tensors once per model (a layer's
        projections) rather than once per forward pass. Never to be changed by its readers."""
        if key in self._made:
            return self._made[key]
        if key in self._passing_made:
            return self._passing_made[key]
        value = make()
        self._holder(_key_layer(key))[1][key] = value
        return value

    def __contains__(self, name: object) -> bool:
        return name in self._sources

    def shape(self, name: str) -> tuple[int, ...]:
        handle, stored = self._sources[name]
        return tuple(handle.get_slice(stored).get_shape())

    def rows(self, name: str, ids: np.ndarray) -> np.ndarray:  # [n] -> [n, d]
        """Rows `ids` of a 2-D tensor, reading only those rows unless the tensor is already loaded."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        held = self._cache.get(name)
        if held is None:
            held = self._passing.get(name)
        if held is not None:
            return held[ids]
        handle, stored = self._sources[name]
        return finite(_float32(handle.get_slice(stored).rows(ids)), stored, "the weights")


ALL = 1 << 30  # `Weights._kept` when every layer is kept
#: The rows of a table used at once when it is not kept whole (models/network/unembed.py): about 64 MiB of float32.
TABLE_CHUNK = 64 * 2**20


def layer_of(name: str) -> int | None:
    """The layer a tensor belongs to: the first component of its name that is a number; None for none.

    >>> layer_of("model.layers.12.mlp.up_proj.weight"), layer_of("encoder.block.3.layer.0.SelfAttention.q")
    (12, 3)
    >>> layer_of("model.norm.weight") is None
    True
    """
    for part in name.split("."):
        if part.isdigit():
            return int(part)
    return None


def _key_layer(key: Any) -> int | None:
    """The layer of a cache key: a tensor's name, "joined A + B" (A's), or a `made` key (its first layer number or
    tensor name with one, in order).

    >>> _key_layer(("projections", ("q", "layers.3.self_attn.q_proj"))), _key_layer(("deberta positions", 2))
    (3, 2)
    >>> _key_layer("joined layers.5.a.weight + layers.5.b.weight"), _key_layer(("rope", "cos")) is None
    (5, True)
    """
    if isinstance(key, str):
        return layer_of(key.removeprefix("joined ").split(" + ")[0])
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, tuple):
        for item in key:
            found = _key_layer(item)
            if found is not None:
                return found
    return None


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


def check_layer(model: Model, layer: int) -> int:
    """`layer` as an index 0..n_layer-1 (negative counts from the end), or ConfigError naming the range."""
    if not -model.n_layer <= layer < model.n_layer:
        raise ConfigError(
            f"layer {layer} is out of range: {model.name} has {model.n_layer} layers, 0..{model.n_layer - 1}"
        )
    return layer % model.n_layer


def check_head(model: Model, head: int) -> int:
    """`head` as an index 0..n_head-1 (negative counts from the end), or ConfigError naming the range."""
    if not -model.n_head <= head < model.n_head:
        raise ConfigError(
            f"head {head} is out of range: {model.name} has {model.n_head} heads per layer, 0..{model.n_head - 1}"
        )
    return head % model.n_head
