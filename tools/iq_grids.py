"""Writes attncli/models/files/iq_grids.py: the lattice grids of llama.cpp's i-quants as data.

    python tools/iq_grids.py        # with gguf==0.19.0 (the test extra), from this checkout

The grids are llama.cpp's ggml-common.h tables (iq2xxs_grid, iq2xs_grid, iq2s_grid, iq3xxs_grid, iq3s_grid,
iq1s_grid: uint64/uint32 words whose bytes are a grid row's values). gguf-py (llama.cpp's Python package) carries
the same tables; this script reads them from it, turns each value into its index among the grid's levels
(attncli/models/files/quants.py maps indices back to values) and writes them zlib-compressed, base64-encoded, one
string per grid. tests/models/test_quants.py checks the written grids against gguf's, row for row.
"""

from __future__ import annotations

import base64
import sys
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GRIDS = {"iq2xxs": "IQ2_XXS", "iq2xs": "IQ2_XS", "iq2s": "IQ2_S", "iq3xxs": "IQ3_XXS", "iq3s": "IQ3_S", "iq1s": "IQ1_S"}

HEAD = '''"""The lattice grids of llama.cpp's i-quants, as data: ggml-common.h's {names}.

Written by tools/iq_grids.py (from gguf-py 0.19.0, which carries llama.cpp's tables); do not edit. Each grid is
rows of 8 (iq2*, iq1s) or 4 (iq3*) values, stored as each value's index among the grid's levels (quants.py holds
the levels: 8, 25, 43 for iq2*, ...), one index a byte, zlib-compressed and base64-encoded.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

'''

TAIL = '''

def grid_indices(name: str) -> np.ndarray:  # -> [rows, 8 or 4] uint8: each value's index among its grid's levels
    """The grid `name` (a key of GRIDS) as level indices, decoded on each call (quants.py caches the values)."""
    shape, packed = GRIDS[name]
    raw = zlib.decompress(base64.b64decode("".join(packed)))
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape).copy()
'''


def main() -> None:
    import gguf.quants as q

    lines = ["GRIDS: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {  # name -> (shape, packed indices)"]
    for name, kind in GRIDS.items():
        cls = getattr(q, kind)
        cls.init_grid()
        values = cls.grid.reshape(cls.grid_shape)
        levels = np.array(cls.grid_map, dtype=np.float32)
        indices = np.searchsorted(levels, values).astype(np.uint8)
        assert np.array_equal(levels[indices], values)
        text = base64.b64encode(zlib.compress(indices.tobytes(), 9)).decode()
        chunks = [text[i : i + 100] for i in range(0, len(text), 100)]
        lines.append(f'    "{name}": (')
        lines.append(f"        {cls.grid_shape},")
        lines.append("        (")
        lines += [f'            "{c}",' for c in chunks]
        lines.append("        ),")
        lines.append("    ),")
    lines.append("}")
    out = ROOT / "attncli" / "models" / "iq_grids.py"
    names = ", ".join(f"{n}_grid" for n in list(GRIDS)[:3]) + ",\n" + ", ".join(f"{n}_grid" for n in list(GRIDS)[3:])
    out.write_text(HEAD.format(names=names) + "\n".join(lines) + "\n" + TAIL, encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
