"""A folder's weights opened: `open_weights` matches the names a family wants against a safetensors checkpoint's
(whatever prefix it puts in front), checks each shape and dtype, and hands model.py's `Weights` the handles
(tensorfile.py) it reads each tensor through on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attncli.models.files.folder import Header, check_budget, float32_bytes, why
from attncli.models.files.hparams import ModelError
from attncli.models.files.tensorfile import TensorFile, TensorFileError
from attncli.models.network.model import Weights


def open_weights(
    folder: Path,
    tensors: Header,
    wanted: dict[str, tuple[int | None, ...]],
    anchor: str,
    optional: dict | None = None,
    tables: tuple[str | None, ...] = (),
) -> Weights:
    """Open the checkpoint and check that every wanted tensor is there with the wanted shape; the `optional` ones
    (a decoder's untied output head) are opened, checked, when the file has them, by their names outside the prefix.

    Names are matched after removing the prefix found in front of `anchor` (`bert.`,
    `transformer.`, or none); everything else in the file (pooler, heads, int64 position_ids,
    GPT-2's attn.bias masks) is never read. `None` in a wanted shape accepts any size. `tables` (the word table, the
    head) are read by rows or chunks of rows (`Weights`), and priced so (`check_budget`).
    """
    files = {name: path for name, (path, _, _) in tensors.items()}
    prefixes = [name[: -len(anchor)] for name in files if name.endswith(anchor)]
    if not prefixes:
        raise ModelError(f"the weights in {folder} have no {anchor}: not a checkpoint of this model type")
    prefix = min(prefixes, key=len)  # "" before "bert."
    names = {name[len(prefix) :]: name for name in files if name.startswith(prefix)}
    names.update({k[:-6] + ".weight": v for k, v in names.items() if k.endswith("LayerNorm.gamma")})
    names.update({k[:-5] + ".bias": v for k, v in names.items() if k.endswith("LayerNorm.beta")})
    for name in (optional or {}).keys() & files.keys():
        names.setdefault(name, name)
    wanted = wanted | {name: shape for name, shape in (optional or {}).items() if name in names}
    handles: dict[Path, Any] = {}
    sources = {}
    for name, shape in wanted.items():
        if name not in names:
            raise ModelError(f"the weights in {folder} lack {prefix + name}")
        path = files[names[name]]
        if path not in handles:
            try:
                handles[path] = TensorFile(path)
            except (OSError, TensorFileError) as e:
                raise ModelError(f"cannot read {path}: {why(e)}") from None
        sliced = handles[path].get_slice(names[name])
        dtype, got = sliced.get_dtype(), tuple(sliced.get_shape())
        if dtype not in ("F32", "F16", "BF16", "F64"):
            raise ModelError(f"{prefix + name} is {dtype}; only F32, F16, BF16 and F64 weights are supported")
        if len(got) != len(shape) or any(w is not None and w != g for w, g in zip(shape, got)):
            want = "[" + ", ".join("*" if w is None else str(w) for w in shape) + "]"
            raise ModelError(f"{prefix + name} has shape {list(got)}, config.json implies {want}")
        sources[name] = (handles[path], names[name])
    weights = Weights(sources, float32_bytes(tensors, [names[n] for n in wanted]), tables)
    check_budget(weights.least(), str(folder))
    return weights
