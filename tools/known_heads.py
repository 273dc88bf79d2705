"""Build a tiny GPT-2 whose heads are set by hand, so that what each head does is known, and check it with transformers.

    ref/bin/python tools/known_heads.py [OUT_DIR]     (default tests/models/known/gpt2-known-heads)

`build(folder)` needs NumPy, safetensors and tokenizers only; the check after it (`verify`) runs the
folder in transformers (eager attention; pinned: torch==2.13.0, transformers==5.23.0, the environment
tools/reference.py makes, checked when run) and fails unless every head does what it was built to do.
2 layers × 3 heads, d_model 75, no MLP (n_inner 1, its weights zero), a byte-level BPE of 512 tokens
trained on sample_texts/bpe_corpus.txt that starts every text with <|endoftext|>; float32 weights, 0.4 MB.

The residual stream has four parts: a token's code (24 dims), its position (x = i/128, x², and two
fillers that make every position vector sum to 0 and have the same norm), the previous token's code
(24 dims, written by layer 0 head 0), and zeros. Every vector sums to 0 and each layer's input has the
same norm at every position, so LayerNorm (weight 1, bias 0) only scales by a known constant s, which the
weights undo. Scores are then exact bilinear forms, and a head's q·k/√d_k is:

- L0 H0 previous-token: -β (j - (i-1))² up to a constant per row (2β(i-1)j - βj²: keys j and j², query
  i - 1 and a constant); its value is the token code, which it writes into the previous-token part.
- L0 H1 first-token sink: -β j.
- L0 H2 duplicate-token: β_tok ⟨code_i, code_j⟩ - γ j: the earliest earlier copy of the query's token
  (the query itself, with the same code, is later, so it loses by γ per position).
- L1 H0 induction (K-composition with L0 H0): β_ind ⟨code_i, previous-code_j⟩: the key whose previous token
  is the query's token, i.e. the token after the earlier copy.
- L1 H1 the query itself: -β (j - i)².
- L1 H2 uniform: every score 0, weight 1/(i+1) on each key.

Token codes are 512 unit vectors in the 23-dim space of zero-sum vectors of R^24, spread apart (largest
|cosine| about 0.5), so a wrong token scores at most about half of a right one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "known" / "gpt2-known-heads"
VOCAB, N_POS, N_HEAD, D_HEAD, D_CODE = 512, 128, 3, 25, 24
D_MODEL = N_HEAD * D_HEAD
CODE, POS, PREV = slice(0, D_CODE), slice(D_CODE, D_CODE + 4), slice(D_CODE + 4, 2 * D_CODE + 4)
X, X2 = D_CODE, D_CODE + 1  # the position's x = i / N_POS and x²
POS_NORM2, EPS = 5.0, 1e-5
BETA, GAMMA, BETA_TOK, BETA_IND = 32.0, 32.0, 16384.0, 128.0
HEADS = {  # (layer, head) -> what it does; the test and docs/corpus.md read this
    (0, 0): "previous-token",
    (0, 1): "first-token",
    (0, 2): "duplicate-token",
    (1, 0): "induction",
    (1, 1): "itself",
    (1, 2): "uniform",
}


def tokenizer():
    """A GPT-2-style byte-level BPE of VOCAB tokens trained on the project's own prose, which puts
    <|endoftext|> before every text as a BOS (so that position 0, where the previous-token head can only
    look at itself, is never a token of the text)."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors, trainers
    from tokenizers.models import BPE

    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)])
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    text = (ROOT / "sample_texts" / "bpe_corpus.txt").read_text(encoding="utf-8")
    tok.train_from_iterator(text.splitlines(), trainer=trainer)
    return tok


def codes(seed: int = 0, steps: int = 300) -> np.ndarray:  # -> [VOCAB, D_CODE]
    """Unit, zero-sum token codes pushed apart: gradient steps on Σ exp(8 cos²) from random ones."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((VOCAB, D_CODE))
    for _ in range(steps):
        c -= c.mean(axis=1, keepdims=True)
        c /= np.linalg.norm(c, axis=1, keepdims=True)
        cos = c @ c.T
        np.fill_diagonal(cos, 0.0)
        c -= 0.05 * (np.exp(8 * cos * cos) * cos) @ c / VOCAB
    c -= c.mean(axis=1, keepdims=True)
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def positions() -> np.ndarray:  # -> [N_POS, 4]
    """x, x² and two fillers a, b with x + x² + a + b = 0 and x² + x⁴ + a² + b² = POS_NORM2."""
    x = np.arange(N_POS) / N_POS
    total, rest = -(x + x * x), POS_NORM2 - x * x - x**4
    half = np.sqrt(rest / 2 - total * total / 4)
    return np.stack([x, x * x, total / 2 + half, total / 2 - half], axis=1)


def scale(norm2: float) -> float:
    """What LayerNorm multiplies a zero-mean vector of squared norm `norm2` by."""
    return 1.0 / np.sqrt(norm2 / D_MODEL + EPS)


def attention_weights(layer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # -> c_attn [d, 3d], c_attn bias [3d], c_proj [d, d]
    """One layer's q, k, v (side by side, Conv1D [in, out]) and output projection, head by head."""
    s = scale(1.0 + POS_NORM2 + layer)  # layer 1 also holds the previous token's code (norm 1)
    w, b, proj = np.zeros((D_MODEL, 3 * D_MODEL)), np.zeros(3 * D_MODEL), np.zeros((D_MODEL, D_MODEL))
    root = np.sqrt(D_HEAD)
    for head in range(N_HEAD):
        q, k, v = (part * D_MODEL + head * D_HEAD for part in range(3))
        what = HEADS[(layer, head)]
        if what in ("previous-token", "itself"):  # K s² (2 x_{i-shift} x_j - x_j²), K = β N² √d_k / s²
            big = BETA * N_POS**2 * root / s**2
            shift = 1 / N_POS if what == "previous-token" else 0.0
            w[X, q], b[q], b[q + 1] = 2 * big, -2 * big * s * shift, -big * s
            w[X, k], w[X2, k + 1] = 1.0, 1.0
        if what == "first-token":  # -β N x_j = -β j
            b[q], w[X, k] = -BETA * N_POS * root / s, 1.0
        if what == "duplicate-token":  # β_tok ⟨code_i, code_j⟩ - γ j
            for t in range(D_CODE):
                w[t, q + t], w[t, k + t] = BETA_TOK * root / s, 1.0
            b[q + D_CODE], w[X, k + D_CODE] = GAMMA * N_POS * root / s, -1.0
        if what == "induction":  # β_ind ⟨code_i, previous-code_j⟩
            for t in range(D_CODE):
                w[t, q + t], w[PREV.start + t, k + t] = BETA_IND * root / s, 1.0
        if what == "previous-token":  # its value is the key's code, written into the previous-token part
            for t in range(D_CODE):
                w[t, v + t] = 1.0 / s
                proj[head * D_HEAD + t, PREV.start + t] = 1.0
    return w, b, proj


def build(folder: Path = OUT) -> Path:
    """config.json, model.safetensors and tokenizer.json of the model, in `folder`."""
    from safetensors.numpy import save_file

    from attncli.models.network.model import WEIGHTS_MARK  # what captions say the weights are

    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": VOCAB,
        "n_positions": N_POS,
        "n_embd": D_MODEL,
        "n_layer": 2,
        "n_head": N_HEAD,
        "n_inner": 1,
        "activation_function": "gelu_new",
        "layer_norm_epsilon": EPS,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "tie_word_embeddings": True,
        WEIGHTS_MARK: "weights set by hand, never trained (the known heads of tools/known_heads.py)",
    }
    wte, wpe = np.zeros((VOCAB, D_MODEL)), np.zeros((N_POS, D_MODEL))
    wte[:, CODE], wpe[:, POS] = codes(), positions()
    t = {"wte.weight": wte, "wpe.weight": wpe, "ln_f.weight": np.ones(D_MODEL), "ln_f.bias": np.zeros(D_MODEL)}
    for layer in range(2):
        p = f"h.{layer}."
        c_attn, c_attn_bias, c_proj = attention_weights(layer)
        t |= {
            p + "ln_1.weight": np.ones(D_MODEL),
            p + "ln_1.bias": np.zeros(D_MODEL),
            p + "ln_2.weight": np.ones(D_MODEL),
            p + "ln_2.bias": np.zeros(D_MODEL),
            p + "attn.c_attn.weight": c_attn,
            p + "attn.c_attn.bias": c_attn_bias,
            p + "attn.c_proj.weight": c_proj,
            p + "attn.c_proj.bias": np.zeros(D_MODEL),
            p + "mlp.c_fc.weight": np.zeros((D_MODEL, 1)),
            p + "mlp.c_fc.bias": np.zeros(1),
            p + "mlp.c_proj.weight": np.zeros((1, D_MODEL)),
            p + "mlp.c_proj.bias": np.zeros(D_MODEL),
        }
    tensors = {"transformer." + k: v.astype(np.float32) for k, v in t.items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    tokenizer().save(str(folder / "tokenizer.json"))
    return folder


def verify(folder: Path) -> dict[str, float]:
    """transformers' own attention of the folder, on a repeated text and a random sequence repeated twice:
    the mean weight each head puts where it was built to look. Fails below 0.99."""
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/known_heads.py")
    import torch
    import transformers

    model = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    text = "the cat sat on the mat and the cat slept, and the dog sat on the cat"
    ids = tok(text)["input_ids"]
    r = list(np.random.default_rng(1).choice(np.arange(1, VOCAB), size=25, replace=False))
    repeated = [0, *r, *r]
    with torch.no_grad():
        a = [x[0].numpy() for x in model(torch.tensor([ids]), output_attentions=True).attentions]
        b = [x[0].numpy() for x in model(torch.tensor([repeated]), output_attentions=True).attentions]
    n, rows = len(ids), np.arange(1, len(ids))
    first = {i: ids.index(ids[i]) for i in range(n) if ids.index(ids[i]) < i}  # the earliest earlier copy
    second = np.arange(26, 50)
    got = {
        "previous-token": a[0][0][rows, rows - 1].mean(),
        "first-token": a[0][1][rows, 0].mean(),
        "duplicate-token": np.mean([a[0][2][i, j] for i, j in first.items()]),
        "induction": b[1][0][second, second - 24].mean(),
        "itself": np.diagonal(a[1][1]).mean(),
        "uniform": np.mean([np.abs(a[1][2][i, : i + 1] - 1 / (i + 1)).max() < 1e-6 for i in range(n)]),
    }
    for what, value in got.items():
        if value < 0.99:
            raise SystemExit(f"{what}: {value:.4f}, expected at least 0.99")
    return {k: float(v) for k, v in got.items()}


if __name__ == "__main__":
    out = build(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
    print(json.dumps(verify(out), indent=2))
    print(f"{out}: {sum(f.stat().st_size for f in out.iterdir()):,} bytes")
