"""Real Hugging Face models in NumPy: their tokens, their attention heads, no PyTorch.

    model = load_model("path/to/all-MiniLM-L6-v2")         # config.json, model.safetensors, tokenizer
    load_model("SmolLM2-135M-Instruct.Q4_1.gguf")           # a GGUF file; or "smollm2:135m" (Ollama), "org/name"
    tokens = encode(model, "time flies like an arrow")      # [CLS] time flies like an arrow [SEP]
    run = forward(model, tokens.ids, upto_layer=5, steps_layer=5)
    run.weights[5][3]                                       # [n, n]: layer 5, head 3
    head_stats(np.stack(run.weights), causal=model.causal)  # {stat: [L, n_head]}
    rollout(run.weights, upto_layer=5)                      # [n, n]

load.py reads the folder (and raises ModelError for every bad input), gguf*.py a GGUF file (stores.py finds
Ollama's and LM Studio's); families/ is the registry
of architecture families (their config readers and blocks), built from the shared blocks.py and
attention.py; forward.py runs a family's blocks in one loop. Needs `safetensors` and `tokenizers`,
imported only when a model is loaded.
"""

from attncli.core.statistics import HEAD_STATS, LABELS
from attncli.core.stats import BROAD, PATTERN_MASS, head_stats, label_head, label_heads, rollout

from .attention import LayerSteps
from .blocks import ACTIVATION_FNS, erf, erfc, gelu, gelu_tanh, layer_norm, rms_norm
from .families import FAMILIES, Family
from .forward import Forward, forward
from .load import SUPPORTED, Model, ModelError, ModelTokens, Weights, check_head, check_layer, encode, load_model

__all__ = [
    "ACTIVATION_FNS",
    "BROAD",
    "FAMILIES",
    "HEAD_STATS",
    "LABELS",
    "PATTERN_MASS",
    "SUPPORTED",
    "Family",
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
    "rms_norm",
    "rollout",
]
