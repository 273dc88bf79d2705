"""The SmolLM2-135M-Instruct (Q4_1 GGUF) references of tests/models/smollm2/, from transformers' own GGUF loading.

    ref/bin/python tools/golden_smollm2.py GGUF_FILE [OUT_DIR]     (default tests/models/smollm2)

Pinned: torch==2.13.0, transformers==5.23.0, gguf==0.19.0 (never attncli's dependencies;
the environment tools/reference.py makes, checked when run). transformers
dequantizes the file (gguf's NumPy dequantizers), undoes llama.cpp's Q/K row permutation and builds the
tokenizer from `tokenizer.ggml.*`; the model runs with eager attention in float32 (what attn is compared
with) and, on the same dequantized weights, in float64 (the reference both are measured against).
Writes reference.npz: per text its token ids, and layers 0, 15 and 29's `output_attentions`
[heads, n, n] in float32 (transformers) and float64; texts.json: the texts, their token strings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [
    "time flies like an arrow",
    "The cat sat on the mat because it was tired, and then it slept.",
    "Attention is all you need, said the paper; the heads agreed.",
]
LAYERS = (0, 15, 29)


def main() -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/golden_smollm2.py", gguf="0.19.0")
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(sys.argv[1]).resolve()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "tests" / "models" / "smollm2"
    out.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    arrays: dict[str, np.ndarray] = {}
    tokens = []
    for dtype in (torch.float32, torch.float64):
        model = model.to(dtype)
        for i, text in enumerate(TEXTS):
            ids = tok(text)["input_ids"]
            with torch.no_grad():
                att = model(torch.tensor([ids]), output_attentions=True).attentions
            tag = "f32" if dtype == torch.float32 else "f64"
            arrays[f"ids{i}"] = np.array(ids, dtype=np.int64)
            for l in LAYERS:
                arrays[f"{tag}_{i}_{l}"] = att[l][0].numpy().astype(np.float32 if tag == "f32" else np.float64)
            if dtype == torch.float32:
                tokens.append(tok.convert_ids_to_tokens(ids))
    np.savez_compressed(out / "reference.npz", **arrays)
    (out / "texts.json").write_text(
        json.dumps({"texts": TEXTS, "layers": LAYERS, "tokens": tokens}, ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
