"""attn against transformers' own GGUF loading, a tiny random llama GGUF per quantization type (docs/models.md's table).

    ref/bin/python tools/gguf_quant_deltas.py [TMP_DIR]

Pinned: torch==2.13.0, transformers==5.23.0, gguf==0.19.0 (never attncli's dependencies;
the environment tools/reference.py makes, checked when run); attncli is imported
from this checkout. Each file is a 2-layer llama (d_model 256, 4 heads of 64 sharing 2 key/value heads,
d_ff 512; 256 so that the K-quants' blocks of 256 fit a row) with the golden mistral folder's byte-level BPE
tokenizer, written as llama.cpp writes one (Q and K rows permuted, tests/models/gguf_files.py). Its matrices are
random N(0, 0.05) quantized by gguf for the types gguf can quantize, random blocks for the K-quants it cannot (fp16
scales that keep |w| under 0.1); norms stay F32. Printed: per type the largest |Δ| over every layer, head and cell
of the golden texts, attn and transformers' float32 each against transformers in float64 on the same weights.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
K_BLOCKS = {  # bytes per block, where its fp16 scales are, the largest |scale × quant| of the type's formula
    "Q2_K": (84, (80, 82), 45),
    "Q3_K": (110, (108,), 128),
    "Q4_K": (144, (0, 2), 945),
    "Q5_K": (176, (0, 2), 1953),
    "Q6_K": (210, (208,), 4096),
}
D, FF, LAYERS, HEADS, KV = 256, 512, 2, 4, 2


def tiny(path: Path, kind: str, rng) -> Path:
    from tests.models.gguf_files import GOLDEN, permute, tokenizer_meta, write

    meta = {
        "llama.block_count": LAYERS,
        "llama.context_length": 64,
        "llama.embedding_length": D,
        "llama.feed_forward_length": FF,
        "llama.attention.head_count": HEADS,
        "llama.attention.head_count_kv": KV,
        "llama.attention.layer_norm_rms_epsilon": 1e-6,
        "llama.rope.freq_base": 10000.0,
        "llama.rope.dimension_count": D // HEADS,
        "llama.vocab_size": 320,
    }
    shapes = {"token_embd.weight": (320, D), "output_norm.weight": (D,)}
    for l in range(LAYERS):
        b = f"blk.{l}."
        shapes |= {b + "attn_norm.weight": (D,), b + "ffn_norm.weight": (D,), b + "attn_q.weight": (D, D)}
        shapes |= {b + "attn_k.weight": (KV * D // HEADS, D), b + "attn_v.weight": (KV * D // HEADS, D)}
        shapes |= {b + "attn_output.weight": (D, D), b + "ffn_gate.weight": (FF, D), b + "ffn_up.weight": (FF, D)}
        shapes |= {b + "ffn_down.weight": (D, FF)}
    tensors = {}
    for name, shape in shapes.items():
        if len(shape) == 1:
            tensors[name] = (1 + 0.1 * rng.standard_normal(shape).astype(np.float32), "F32")
        elif kind in K_BLOCKS:
            size, scales, span = K_BLOCKS[kind]
            raw = rng.integers(0, 256, (shape[0], shape[1] // 256 * size), dtype=np.uint8)
            for block in raw.reshape(-1, size):
                for at in scales:
                    block[at : at + 2] = np.array([rng.uniform(0.05, 0.1) / span], np.float16).view(np.uint8)
            tensors[name] = (raw, kind)  # random blocks: a Q/K permutation of random rows is still random rows
        else:
            w = 0.05 * rng.standard_normal(shape).astype(np.float32)
            if name.endswith(("attn_q.weight", "attn_k.weight")):
                w = permute(w, HEADS if "attn_q" in name else KV)
            tensors[name] = (w, kind)
    return write(path, "llama", meta, tensors, tokenizer_meta(GOLDEN / "mistral", True))


def attentions(model, ids) -> np.ndarray:  # -> [L, h, n, n]
    import torch

    with torch.no_grad():
        return np.stack([a[0].numpy() for a in model(torch.tensor([ids]), output_attentions=True).attentions])


def main() -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/gguf_quant_deltas.py", gguf="0.19.0")
    import torch
    from transformers import AutoModelForCausalLM

    from attncli.models import encode, forward, load_model

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    texts = json.loads((ROOT / "tests" / "models" / "golden" / "mistral" / "texts.json").read_text()).values()
    rng = np.random.default_rng(0)
    print("| type | attn vs transformers | attn vs float64 | transformers vs float64 |")
    for kind in TYPES:
        path = tiny(out / f"tiny-{kind}.gguf", kind, rng)
        theirs = AutoModelForCausalLM.from_pretrained(
            out, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
        ).eval()
        ours = load_model(path)
        worst = [0.0, 0.0, 0.0]
        for text in texts:
            ids = encode(ours, text).ids
            a32 = attentions(theirs, ids)
            a64 = attentions(theirs.to(torch.float64), ids)
            theirs = theirs.to(torch.float32)
            a = np.stack(forward(ours, ids).weights)
            for i, delta in enumerate((a - a32, a - a64, a32 - a64)):
                worst[i] = max(worst[i], float(np.abs(delta).max()))
        print(f"| {kind} | " + " | ".join(f"{v:.1e}" for v in worst) + " |", flush=True)


if __name__ == "__main__":
    main()
