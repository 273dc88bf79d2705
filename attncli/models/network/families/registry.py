"""The registry of architecture families: the `Family` entry, `FAMILIES`, `@register` and the look-ups.

The members (one module per family group, beside this one) import `register` from here and fill
`FAMILIES` when they are imported; this module imports none of them, so that no import closes a
circle. Whoever needs the full registry imports the package, `attncli.models.network.families`, which
imports every member (as timm's `_registry.py` beside its model modules).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Family:
    """One architecture family. Blocks take the loaded `Model` (`m`) and the residual stream x [n, d_model]."""

    name: str  # the registry key, shown in captions and JSON ("llama")
    model_types: tuple[str, ...]  # config.json model_type values it serves ("llama", "mistral")
    read_config: Callable  # config dict -> (hp, wanted): hyper-parameters, {tensor name: shape (None = any)}
    word: str  # the word embedding table (its rows are the vocabulary; its name finds the file's prefix)
    embed: Callable  # (m, ids [n]) -> x [n, d_model]
    attention: Callable  # (m, layer, x) -> (x [n, d_model], LayerSteps)
    mlp: Callable  # (m, layer, x) -> x [n, d_model]
    final: Callable  # (m, x) -> x [n, d_model] (the final norm, if any)
    input_note: Callable[[int], str]  # layer -> what X, the attention's input, is (for `attn steps`)
    positions: str | None = None  # a learned position table, whose rows bound the text's length
    vocab_files: str | None = None  # the tokenizer files read when there is no tokenizer.json
    # config.json `architectures` class-name prefixes -> the model_type they belong to ("XLMRoberta": "xlm-roberta"),
    # so that a folder whose architectures name another model_type is refused (architecture_type)
    architectures: dict[str, str] = field(default_factory=dict)
    # an encoder–decoder's decoder blocks (attncli.models.runs.encdec.Decoder); the blocks above are its encoder's
    decoder: Any = None
    # a decoder's next-token head (models/network/unembed.py): the name of its own output matrix [vocab, d_model] in
    # the checkpoint (outside the base model's prefix: "lm_head.weight"), and whether config.json's tie_word_embeddings
    # defaults to true (then the word embedding table is the head); None: no next-token head (an encoder)
    head: tuple[str, bool] | None = None
    # the terms a family's scores add up from, for `attn steps` (DeBERTa's content and position terms):
    # (m, layer, q [h, n, d_k], k, the heads they are) -> [(name, what it is, [h, n, n])], summing to the scores
    score_terms: Callable | None = None
    # (m, layer, o [..., n, d_model]) -> [..., n, d_model]: how the attention's output o (concat_h(A_h V_h) W_O + b_O)
    # enters the residual stream when not as it is (Gemma 2, OLMo 2: RMSNormed), for attncli.models.interpret.dla
    attention_out: Callable | None = None
    # a post-norm block's LayerNorm after the attention and its residual, LN(x + Attn(x)): (m, layer) -> the name
    # its weight is stored under, without ".weight" (ALTI's linear part of it, attncli.models.interpret.contrib); None:
    # the attention's block adds its output to the stream with no norm after (pre-norm), or a form ALTI does not cover
    attention_norm: Callable[[Any, int], str] | None = None
    # (m, layer, o [n, d_model]) -> (γ [d_model], s [n]) float64, or None: the norm on the attention's output alone
    # inside the residual, x + N(o) (Gemma 2 and 3, OLMo 2: RMSNorm), as the per-row linear map it is once each row's
    # scale is fixed, N(o_i) = γ ⊙ o_i · s_i, s_i = 1 / √(mean(o_i²) + eps) (ALTI, attncli.models.interpret.contrib)
    attention_out_linear: Callable | None = None
    # (m) -> whether the MLP reads the block's input beside the attention, x + Attn(N_1(x)) + MLP(N_2(x)) (GPT-NeoX's
    # parallel residual); ALTI then decomposes x + Attn(N_1(x)) and leaves the MLP out, as in a sequential block
    parallel_mlp: Callable[[Any], bool] | None = None


FAMILIES: dict[str, Family] = {}


def register(name: str, **fields) -> Callable[[Callable], Callable]:
    """`@register("llama", model_types=(...), word=..., embed=..., ...)` above a family's config reader.

    Its model_types must not be served by another family.
    """

    def add(read_config: Callable) -> Callable:
        family = Family(name=name, read_config=read_config, **fields)
        taken = {t for f in FAMILIES.values() for t in f.model_types}
        clash = taken.intersection(family.model_types)
        assert name not in FAMILIES and not clash, f"family {name} clashes on {clash or name}"
        FAMILIES[name] = family
        return read_config

    return add


def family_of(model_type: str) -> Family | None:
    """The family serving a config.json model_type, or None."""
    return next((f for f in FAMILIES.values() if model_type in f.model_types), None)


def architecture_type(architecture: str) -> str | None:
    """The model_type of a config.json `architectures` class name, by its longest known prefix, or None.

    >>> architecture_type("RobertaForMaskedLM"), architecture_type("XLMRobertaModel"), architecture_type("Mine")
    ('roberta', 'xlm-roberta', None)
    """
    known = {p: t for f in FAMILIES.values() for p, t in f.architectures.items() if architecture.startswith(p)}
    return known[max(known, key=len)] if known else None


#: config.json keys that give a mixture-of-experts model's experts per layer (Mixtral, Phi-3.5-MoE; Qwen-MoE, OLMoE;
#: DeepSeek), whose MLP routes each token to some of them
EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")


def out_of_scope(c: dict) -> str | None:
    """Why attn does not run the model of config.json `c` whatever its model_type (one line), or None: a vision tower
    beside the text model, or a mixture-of-experts MLP.

    >>> out_of_scope({"model_type": "mixtral", "num_local_experts": 8})[:50]
    'a mixture-of-experts model (num_local_experts 8: e'
    >>> out_of_scope({"model_type": "llama"}) is None
    True
    """
    if isinstance(c.get("vision_config"), dict) or c.get("mm_vision_tower") or c.get("vision_tower"):
        return (
            "a vision–language model (a vision tower beside its text model), which attn does not run: vision "
            "towers are out of its scope; a text-only checkpoint of its language model may be"
        )
    for key in EXPERTS:
        n = c.get(key)
        if isinstance(n, int) and not isinstance(n, bool) and n > 1:
            return (
                f"a mixture-of-experts model ({key} {n}: each token is routed to some experts' MLPs), which attn "
                "does not run: mixture-of-experts routing is out of its scope"
            )
    return None


def model_types() -> list[str]:
    """Every model_type served, sorted (for the error naming what is supported)."""
    return sorted(t for f in FAMILIES.values() for t in f.model_types)
