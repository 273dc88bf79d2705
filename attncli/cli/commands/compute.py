"""`attn compute`: attention on Q, K, V the user gives (JSON or .npy), one head, no projection."""

from __future__ import annotations

import sys
from dataclasses import replace

from attncli.cli.options import (
    Da,
    Dtype,
    Errors,
    Features,
    InputPath,
    KPath,
    MaskOpt,
    NoWeights,
    Out,
    ParamSeed,
    QPath,
    Rank,
    Temperature,
    Variant,
    VPath,
    options,
)
from attncli.cli.output import emit
from attncli.cli.text import say, stdin_prompt


@options(out=Out, writes=("Result",))
def compute(
    out: Out,
    input_path: InputPath = None,
    q: QPath = None,
    k: KPath = None,
    v: VPath = None,
    variant: Variant = "scaled",
    d_a: Da = None,
    mask: MaskOpt = None,
    rank: Rank = None,
    features: Features = None,
    no_weights: NoWeights = False,
    dtype: Dtype = "float64",
    seed: ParamSeed = 0,
    temperature: Temperature = 1.0,
    errors: Errors = "strict",
) -> None:
    """Attention on your own Q, K, V (one head, no projection): JSON on stdin or --input, or .npy files.

    --no-weights: the outputs only, in blocks, never an n × n matrix (JSON scores and weights null);
    --dtype float32: everything in float32 (a float32 .npy is taken exactly)."""
    from attncli import api
    from attncli.api.config import check_variant_options
    from attncli.cli.hints import HEAD_STATISTICS, limits_for
    from attncli.core.masks import parse_masks
    from attncli.io.formats import FORMATS
    from attncli.io.output import resolve_format
    from attncli.pipeline import matrices
    from attncli.pipeline.config import check_options as check_long

    check_variant_options([variant], rank, features)
    options = {"rank": rank, "features": features}
    check_long(variant, dtype, not no_weights, parse_masks(mask), temperature, options)  # before reading input
    picture = FORMATS[resolve_format(out.fmt, out.output)].picture
    limits = replace(
        limits_for(None, "compute", HEAD_STATISTICS if picture else None), weights=not no_weights, dtype=dtype
    )
    stdin_prompt(input_path, "the JSON")
    qkv = matrices.read_given(input_path, q, k, v, sys.stdin.buffer, errors, say, limits)
    computed = api.compute(
        qkv, variant=variant, d_a=d_a, mask=mask, rank=rank, features=features, no_weights=no_weights, dtype=dtype,
        seed=seed, temperature=temperature, precision=out.precision, limits=limits,
    )  # fmt: skip
    emit(computed.document, out)
