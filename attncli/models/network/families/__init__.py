"""The architecture families, one module per family group, each `@register`ing its entries in `registry.py`.

A family carries everything attn knows about it: the `model_type`s it serves, its config reader
(hyper-parameters and the tensors, with their shapes, that the forward pass needs), the names of
its word (and learned position) embedding tables, and its embed / attention / mlp / final blocks,
which `attncli.models.network.forward.forward` runs in one shared loop. Adding a family is one new module
here and its import below: importing this package fills the registry.
"""

from . import (  # each member registers its families in registry.py's FAMILIES
    albert,
    bart,
    bert,
    deberta,
    distilbert,
    electra,
    gemma,
    gpt2,
    llama,
    modernbert,
    mpnet,
    neox,
    olmo,
    phi,
    qwen,
    roberta,
    t5,
)
from .registry import FAMILIES, Family, architecture_type, family_of, model_types, out_of_scope, register

__all__ = [
    "FAMILIES",
    "Family",
    "albert",
    "architecture_type",
    "bart",
    "bert",
    "deberta",
    "distilbert",
    "electra",
    "family_of",
    "gemma",
    "gpt2",
    "llama",
    "model_types",
    "modernbert",
    "mpnet",
    "neox",
    "olmo",
    "out_of_scope",
    "phi",
    "qwen",
    "register",
    "roberta",
    "t5",
]
