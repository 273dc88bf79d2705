"""Real Hugging Face models (BERT, GPT-2) in NumPy: their tokens, their attention heads, no PyTorch.

    model = load_model("path/to/all-MiniLM-L6-v2")         # config.json, model.safetensors, tokenizer
    tokens = encode(model, "time flies like an arrow")      # [CLS] time flies like an arrow [SEP]
    run = forward(model, tokens.ids, upto_layer=5, steps_layer=5)
    run.weights[5][3]                                       # [n, n]: layer 5, head 3
    head_stats(np.stack(run.weights), causal=model.causal)  # {stat: [L, n_head]}
    rollout(run.weights, upto_layer=5)                      # [n, n]

load.py reads the folder (and raises ModelError for every bad input), forward.py computes,
heads.py summarises. Needs `safetensors` and `tokenizers`, imported only when a model is loaded.
"""

from attncli.core.stats import BROAD, HEAD_STATS, LABELS, PATTERN_MASS, head_stats, label_head, label_heads, rollout

from .forward import (
    ACTIVATION_FNS,
    ARCHITECTURES,
    Forward,
    LayerSteps,
    erf,
    erfc,
    forward,
    gelu,
    gelu_tanh,
    layer_norm,
)
from .load import SUPPORTED, Model, ModelError, ModelTokens, Weights, check_head, check_layer, encode, load_model

__all__ = [
    "ACTIVATION_FNS",
    "ARCHITECTURES",
    "BROAD",
    "HEAD_STATS",
    "LABELS",
    "PATTERN_MASS",
    "SUPPORTED",
    "Forward",
    "LayerSteps",
    "Model",
    "ModelError",
    "ModelTokens",
    "Weights",
    "check_head",
    "check_layer",
    "encode",
    "erf",
    "erfc",
    "forward",
    "gelu",
    "gelu_tanh",
    "head_stats",
    "label_head",
    "label_heads",
    "layer_norm",
    "load_model",
    "rollout",
]
