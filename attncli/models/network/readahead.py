"""Reading a model's tensors ahead of its forward pass, on a second thread, while the first computes.

A model's tensors are read from their files on first use (`Weights`), each in one pass that widens BF16 to float32
and checks it finite. A cold forward pass alternates that reading with its products on one core; `ReadAhead` lets a
second core read the next layer's tensors while the current layer computes (NumPy releases the GIL in the copy, the
shift and the reductions of a read). Which tensors a layer reads is learnt from layer 0, which reads its own as
before: layer l's are the same names with l in place of the first `0` (`model.layers.0.mlp.up_proj.weight` ->
`model.layers.7.mlp.up_proj.weight`), kept where the model has them (a pass whose layer 0 is kept while later layers
are streamed, model.py's `Weights.fit`, reuses what layer 0 read when it was read). The reader stays at most one
layer ahead of the pass (so the peak memory grows by a layer at most) and leaves the layer the pass is in to the
pass: what it has not read of it yet the pass reads itself, while the reader goes on to the next one, so that with a
short text both cores read. It reads only the layers the pass will run (not the MLP of a last layer whose attention
is all it needs), and stops when the pass leaves, whether it finished or raised; a tensor it is still reading is
waited for, and an error it met is raised by the pass that asks for the tensor.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from attncli.models.network.model import Weights


def renamed(name: str, layer: int) -> str | None:
    """Layer 0's tensor `name` as layer `layer`'s: its first `0` component replaced; None if it has none.

    >>> renamed("model.layers.0.self_attn.q_proj.weight", 7), renamed("encoder.block.0.layer.0.SelfAttention.q", 2)
    ('model.layers.7.self_attn.q_proj.weight', 'encoder.block.2.layer.0.SelfAttention.q')
    >>> renamed("encoder.rel_embeddings.weight", 3) is None
    True
    """
    parts = name.split(".")
    if "0" not in parts:
        return None
    parts[parts.index("0")] = str(layer)
    return ".".join(parts)


class ReadAhead:
    """Around a forward pass through layer `last`: `with ahead.block(l, part)` around each of its blocks (part
    "attention" or "mlp"); `last_mlp` False when the pass stops after the last layer's attention."""

    def __init__(self, weights: Weights, last: int, last_mlp: bool):
        self.weights, self.last, self.last_mlp = weights, last, last_mlp
        self._first: dict[str, list[str]] = {"attention": [], "mlp": []}  # what layer 0's blocks read from file
        self._at = 0  # the layer the pass is in
        self._stop = False
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join()  # it stops after the tensor it is reading
            self._thread = None

    @contextmanager
    def block(self, layer: int, part: str) -> Iterator[None]:
        """Around the pass's `part` of `layer`: the reader may go one layer beyond it; layer 0's reads are noted."""
        with self._wake:
            self._at = layer
            self._wake.notify_all()
        before = len(self.weights.claimed()) if layer == 0 else 0
        yield
        if layer == 0:
            read = self.weights.claimed()[before:]
            if read:  # kept for the passes whose layer 0 is kept while later layers are streamed (model.py)
                self.weights.first_reads[part] = read
            self._first[part] = self.weights.first_reads.get(part, [])
            plan = self._plan() if part == "mlp" and self._thread is None else []
            if plan:  # nothing when layer 0 read nothing (a warm model) or the pass stops at layer 0
                self._thread = threading.Thread(target=self._read, args=(plan,), daemon=True)
                self._thread.start()

    def _plan(self) -> list[tuple[int, str]]:  # -> (layer, tensor name), in the order the pass will ask for them
        plan = []
        for layer in range(1, self.last + 1):
            names = self._first["attention"] + (self._first["mlp"] if layer < self.last or self.last_mlp else [])
            named = (renamed(name, layer) for name in names)
            plan += [(layer, n) for n in named if n is not None and n in self.weights]
        return [(layer, name) for layer, name in plan if not self.weights.is_claimed(name)]  # a kept one: not again

    def _read(self, plan: list[tuple[int, str]]) -> None:  # on the reader's thread
        for layer, name in plan:
            with self._wake:
                while not self._stop and layer > self._at + 1:
                    self._wake.wait()
                if self._stop:
                    return
                if layer <= self._at:
                    continue  # the pass has reached it: it reads what is left itself, while this reads the next
            self.weights.read_ahead(name)
