"""SmolLM2's induction heads by attn and by transformers, on the same random sequences (the check in docs/models.md).

    ATTN_SMOLLM2=FILE.gguf ref/bin/python tools/smollm2_induction.py

Pinned: torch==2.13.0, transformers==5.23.0 (never attncli's dependencies;
the environment tools/reference.py makes, checked when run); attncli is imported from this
checkout. attn's induction detector (`attncli.models.runs.corpus.induction_stats`: 10 random sequences r of 25
vocabulary ids, seed 0, each run as r r; per head the mean weight a query of the second copy puts on the token
after its earlier copy) is computed on the same sequences from transformers' eager attention (the GGUF loaded
by transformers, float32), and the top heads of both printed with their largest difference.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/smollm2_induction.py")
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    from attncli.core.corpus import Moments, induction_rows
    from attncli.models import load_model
    from attncli.models.runs import corpus

    path = Path(os.environ["ATTN_SMOLLM2"])
    model = load_model(path)
    texts: list[np.ndarray] = []
    run = corpus.forward_weights
    corpus.forward_weights = lambda m, t: texts.extend(t) or run(m, t)  # keep the sequences attn ran
    ours = corpus.induction_stats(model).mean()
    theirs_model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    moments = Moments()
    for ids in texts:
        with torch.no_grad():
            att = theirs_model(torch.tensor([ids.tolist()]), output_attentions=True).attentions
        moments.add(induction_rows(np.stack([a[0].numpy() for a in att]), 0, len(ids) // 2))
    theirs = moments.mean()
    assert ours is not None and theirs is not None
    for name, scores in (("attn", ours), ("transformers", theirs)):
        top = np.argsort(scores, axis=None)[::-1][:5]
        print(name, ", ".join(f"L{i // scores.shape[1]} H{i % scores.shape[1]} {scores.flat[i]:.2f}" for i in top))
    print(f"max |Δ| over every head: {np.abs(ours - theirs).max():.1e}")


if __name__ == "__main__":
    main()
