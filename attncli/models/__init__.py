"""Real Hugging Face models in NumPy: their tokens, their attention heads, no PyTorch.

    model = load_model("path/to/all-MiniLM-L6-v2")         # config.json, model.safetensors, tokenizer
    load_model("SmolLM2-135M-Instruct.Q4_1.gguf")           # a GGUF file; or "smollm2:135m" (Ollama), "org/name"
    tokens = encode(model, "time flies like an arrow")      # [CLS] time flies like an arrow [SEP]
    run = forward(model, tokens.ids, upto_layer=5, steps_layer=5)
    run.weights[5][3]                                       # [n, n]: layer 5, head 3
    head_stats(np.stack(run.weights), causal=model.causal)  # {stat: [L, n_head]}
    rollout(run.weights, upto_layer=5)                      # [n, n]

The subpackages are layers, by job (each imports only those below it; import-linter checks): interpret (the
lens, contribution maps, the causal tools, a page's data: page.py) -> runs (route.py sends a run to its kind's
module: run.py, an encoder or a decoder; seq2seq.py, an encoder–decoder; page.py, the attention a page draws;
tokens.py cuts a text; generate.py writes) -> opening (load.py opens a folder or a GGUF file, and raises
ModelError for every bad input; hub.py, stores.py and llamacpp.py find what a name means) -> network (Model and
Weights, families/, the registry of architecture families built from blocks.py and attention.py, forward.py's
one loop, unembed.py: the next-token head) -> text (the model's tokenizer and chat template) -> files (folder.py,
tensorfile.py, gguf.py, quants.py: files read as untrusted). Needs `safetensors` and `tokenizers`, imported only
when a model is loaded.
"""

from attncli.core.statistics import HEAD_STATS, LABELS
from attncli.core.stats import BROAD, PATTERN_MASS, head_stats, label_head, label_heads, rollout
from attncli.models.files.hparams import ModelError
from attncli.models.network.attention import LayerSteps
from attncli.models.network.blocks import ACTIVATION_FNS, erf, erfc, gelu, gelu_tanh, layer_norm, rms_norm
from attncli.models.network.families import FAMILIES, Family
from attncli.models.network.forward import Forward, forward
from attncli.models.network.model import Model, Weights, check_head, check_layer
from attncli.models.opening.load import SUPPORTED, load_model
from attncli.models.runs.tokens import ModelTokens, encode

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
