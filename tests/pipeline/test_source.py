"""`AttentionResult.source`: a text run and given matrices say what was run, with no sentinel values."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attncli.errors import ConfigError
from attncli.pipeline.config import RunConfig
from attncli.pipeline.given import GivenMatrices, compute
from attncli.pipeline.matrices import parse_json
from attncli.pipeline.run import TextRun, run
from attncli.pipeline.steps import steps

QKV = '{"q": [[1, 0], [0, 1], [1, 1]], "k": [[1, 0], [1, 1]], "v": [[10, 0], [0, 10]]}'


def test_a_text_run_is_its_config():
    r = run("time flies like an arrow", RunConfig(heads=2, positional="sinusoidal"))
    assert r.source == TextRun(r.config)
    assert [r.head_index(h) for h in range(2)] == [0, 1]
    assert r.source.heads_shown(r) == " · head 0 of 2" and r.source.compare_note("word") is None
    assert r.source.output_formula == "concat(A_h V_h) W_O"
    assert r.source.caption(r)[1:3] == [
        "5 tokens (word) · d_model 16 · 2 heads · d_k 8 · d_v 8",
        "W_Q, W_K, W_V, W_O: random, seed 0, untrained · positions sinusoidal",
    ]


def test_a_text_runs_config_record_keeps_the_json_keys():
    r = run("time flies", RunConfig(variant="linformer", rank=2, dtype="float32"))
    assert _record(r) == {
        "tokenizer": "word",
        "variant": "linformer",
        "heads": 1,
        "dim": 16,
        "d_k": 16,
        "d_v": 16,
        "d_a": 16,
        "mask": [],
        "positional": "none",
        "projection": "random",
        "temperature": 1.0,
        "seed": 0,
        "rank": 2,
        "dtype": "float32",
    }


def test_given_matrices_say_what_was_given():
    r = compute(parse_json(QKV, "qkv.json"), "additive", mask="causal", seed=3)
    s = r.source
    assert isinstance(s, GivenMatrices) and (s.q, s.k, s.v, s.file) == ((3, 2), (2, 2), (2, 2), "qkv.json")
    assert s.caption(r)[1] == (
        "given Q [3, 2], K [2, 2], V [2, 2] (qkv.json); one head, no embedding, no projection; "
        "W1, W2, b, v seeded (--seed 3), not trained"
    )
    assert (
        s.caption(r)[-1] == "rows are queries, columns are keys (numbered from 0); each row sums to 1; ▸ = row maximum"
    )
    record = _record(r)
    assert (record["tokenizer"], record["positional"], record["projection"], record["seed"]) == ("none",) * 3 + (3,)
    assert "model" not in record and s.output_formula == "A V" and s.head_index(0) == 0


def test_given_matrices_steps_end_in_a_v():
    r = compute(parse_json(QKV, "stdin"), "dot", mask="causal")
    assert [s.name for s in steps(r)] == ["q", "k", "v", "scores", "masked_scores", "weights", "head_outputs"]
    assert steps(r)[3].formula.startswith("S = qᵀk")


def test_steps_need_the_weights():
    r = run("time flies", RunConfig(weights=False))
    with pytest.raises(ConfigError, match="without --no-weights"):
        steps(r)


def test_the_pipeline_does_not_import_the_models():
    code = "import sys, attncli.pipeline.steps, attncli.pipeline.run, attncli.pipeline.given; "
    code += "print([m for m in sys.modules if m.startswith('attncli.models')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _record(result):
    return result.source.config_record(result)
