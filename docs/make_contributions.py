"""The numbers of docs/contributions.md, measured with attncli's API on the models the page names.

    MINILM=all-MiniLM-L6-v2/ ATTN_SMOLLM2=SmolLM2-135M-Instruct.Q4_1.gguf python docs/make_contributions.py

Prints the page's three tables: MiniLM's share of [CLS], [SEP] and punctuation by weights and by norm (Kobayashi et
al. 2020's finding) over the sentences of sample_texts/paragraph.txt; SmolLM2's sink rate (Gu et al. 2025) on three
texts; ALTI's rollout against attention rollout on one sentence.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

import numpy as np

import attncli
from attncli.core.stats import sink_stats
from attncli.models import load_model
from attncli.models.runs import route

ROOT = Path(__file__).resolve().parents[1]
SENTENCE = "the quick brown fox jumps over the lazy dog, and the dog sleeps."


def punctuation(token: str) -> bool:
    return all(unicodedata.category(c).startswith("P") for c in token)


def kinds(tokens: list[str]) -> dict[str, np.ndarray]:  # -> {kind: [n] bool}
    t = np.array(tokens)
    return {"[CLS]": t == "[CLS]", "[SEP]": t == "[SEP]", "punctuation": np.array([punctuation(x) for x in tokens])}


def minilm_shares(model) -> None:
    text = (ROOT / "sample_texts" / "paragraph.txt").read_text()
    sentences = [s.strip() for s in re.split(r"(?<=[.:])\s+", text) if s.strip()]
    print(f"| layer | {' | '.join(f'{k} weights | {k} norm' for k in ('[CLS]', '[SEP]', 'punctuation'))} |")
    for layer in range(model.n_layer):
        got: dict[str, list[float]] = {}
        for s in sentences:
            shown = attncli.show(s, model=model, layer=layer, contrib="norm")
            w, c = shown.weights, shown.contributions.heads  # [h, n, n] each
            norm = c / c.sum(-1, keepdims=True)  # each head's row of ‖αf(x)‖ as shares
            for kind, cols in kinds(shown.tokens).items():
                got.setdefault(kind + " weights", []).append(float(w[..., cols].sum(-1).mean()))
                got.setdefault(kind + " norm", []).append(float(norm[..., cols].sum(-1).mean()))
        cells = " | ".join(f"{np.mean(v):.2f}" for v in got.values())
        print(f"| {layer} | {cells} |")
    print(f"({len(sentences)} sentences)")


def smollm2_sinks(model) -> None:
    texts = ["time flies like an arrow", SENTENCE, (ROOT / "sample_texts" / "paragraph.txt").read_text().split(". ")[0]]
    for text in texts:
        doc = route.heads(model, text)
        s = doc["sinks"]
        weights = np.stack(route.run.run_pass(model, text)[1].weights)
        assert s["sink_rate"] == sink_stats(weights)["sink_rate"]
        per_layer = np.array(s["sink"]).sum(-1).tolist()
        massive = np.array(s["massive_activation"])
        print(
            f"| {len(doc['tokens'])} | {s['sink_rate']:.2f} | {len(s['sink_heads'])} of {len(per_layer) * 9} | "
            f"{per_layer} | {massive[1:, 0].max():.0f}× |"
        )


def alti_against_rollout(model) -> None:
    shown = attncli.show(SENTENCE, model=model, contrib="alti")
    alti = shown.contributions.rollout
    rolled = route.rollout(model, SENTENCE).matrix
    tokens = shown.tokens
    for name, m in (("attention rollout", rolled), ("ALTI rollout", alti)):
        k = kinds(tokens)
        print(
            f"| {name} | {np.diag(m).mean():.2f} | {m[:, k['[CLS]']].sum(-1).mean():.2f} | "
            f"{m[:, k['[SEP]']].sum(-1).mean():.2f} | {m.max(axis=-1).mean():.2f} |"
        )


def main() -> None:
    minilm = load_model(os.environ["MINILM"])
    minilm_shares(minilm)
    alti_against_rollout(minilm)
    smollm2_sinks(load_model(os.environ["ATTN_SMOLLM2"]))


if __name__ == "__main__":
    main()
