"""The shared blocks and the hand-written safetensors reader: RoPE scaling, RMSNorm, BF16, laziness, bad files."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from attncli.core import mkl
from attncli.models import ModelError, encode, forward, load_model, rms_norm
from attncli.models.files.tensorfile import TensorFile, TensorFileError, bf16_to_float32
from attncli.models.network import blocks, parallel
from attncli.models.network.blocks import ACTIVATION_FNS, apply_rope, feed_forward, relu, rope_frequencies, rope_tables
from tests.models.test_golden import GOLDEN
from tests.tolerance import U32, affine_bound, assert_within, gamma, matmul_bound


def test_rope_scaling_kinds():
    base = rope_frequencies(8, 10000.0, None)
    e = np.arange(0, 8, 2) / 8  # float32 θ^e: e's rounding, times ln θ, then pow's and 1/x's own (4 u at most)
    exact = 10000.0**-e
    assert_within(base, exact, (np.log(10000.0) * e + 4) * U32 * exact)
    assert np.array_equal(rope_frequencies(8, 10000.0, {"rope_type": "linear", "factor": 4.0}), base / np.float32(4))
    assert np.array_equal(rope_frequencies(8, 10000.0, {"rope_type": "dynamic", "factor": 4.0}), base)
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 48}
    got = rope_frequencies(8, 10000.0, {**llama3, "high_freq_factor": 4.0})  # wavelengths 6.3 | 12..48 | 63, 628, ...
    assert got[0] == base[0] and got[1:].tolist() == (base[1:] / np.float32(8)).tolist()  # high kept, low divided
    got = rope_frequencies(8, 10000.0, {**llama3, "high_freq_factor": 8.0})  # 6 < 6.3 < 48: the middle band
    assert base[0] / 8 < got[0] < base[0]  # blended


def test_rope_rotates_pairs_and_keeps_norms():
    q = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    cos, sin = rope_tables(5, rope_frequencies(4, 10000.0, None))
    out = apply_rope(q, cos, sin)  # the first 4 dims rotate in pairs (i, i + 2), the last 4 pass
    assert np.array_equal(out[..., 4:], q[..., 4:]) and np.array_equal(out[:, 0], q[:, 0])
    pairs = lambda a: np.hypot(a[..., :2], a[..., 2:4])  # noqa: E731
    # cos² + sin² is 1 within 4 u (each rounded, 1 ulp of libm's error each), x cos - y sin within γ₂ of
    # |x cos| + |y sin| <= √2 r, each hypot within 2 u: 10 u of the pair's norm r in all
    assert_within(pairs(out), pairs(q), 10 * U32 * pairs(q).astype(np.float64))


def test_rms_norm_and_gemma_offset():
    x = np.array([[3.0, 4.0]], dtype=np.float32)
    # float32: x² (u), a mean of 2 (γ₂, ÷2 exact), √ (halves that, u more), 1/· (u), x·inv (u); g = 1 exact
    expected = x.astype(np.float64) / np.sqrt(12.5)
    bound = (gamma(2) + 4 * U32) * np.abs(expected)
    assert_within(rms_norm(x, np.ones(2, np.float32), 0.0), expected, bound)
    assert_within(rms_norm(x, np.zeros(2, np.float32), 0.0, offset=1.0), expected, bound)


def test_bf16_is_the_top_half_of_float32():
    f = np.array([1.0, -2.5, 3.140625, np.inf, -0.0, 2.0**-133], dtype=np.float32)  # 2^-133: a BF16 subnormal
    assert np.array_equal(bf16_to_float32((f.view(np.uint32) >> 16).astype(np.uint16)), f)


def test_only_the_layers_asked_for_are_read():
    model = load_model(GOLDEN / "llama")
    forward(model, encode(model, "time flies").ids, upto_layer=0)
    read = set(model.weights._cache)
    assert read and not any(name.startswith("layers.1.") for name in read)
    assert "layers.0.mlp.gate_proj.weight" not in read  # the last layer's MLP cannot change its attention


def _write(path, header: dict, data: bytes) -> None:
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)


def test_bad_safetensors_files_say_what_is_wrong(tmp_path):
    f = tmp_path / "a.safetensors"
    _write(f, {"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8)
    with pytest.raises(TensorFileError, match="offsets do not fit"):
        TensorFile(f)
    _write(f, {"t": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 2]}}, b"\0" * 2)
    with pytest.raises(TensorFileError, match="unknown dtype Q4"):
        TensorFile(f)
    _write(f, {"t": {"dtype": "F32", "shape": ["4"], "data_offsets": [0, 16]}}, b"\0" * 16)
    with pytest.raises(TensorFileError, match="malformed"):
        TensorFile(f)
    f.write_bytes(b"\x01")
    with pytest.raises(TensorFileError, match="too short"):
        TensorFile(f)
    _write(f, {"t": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}, b"\x80\x3f" * 4)
    t = TensorFile(f)
    assert t.get_tensor("t").tolist() == [[1.0, 1.0], [1.0, 1.0]] and t.get_slice("t").rows([1]).shape == (1, 2)
    with pytest.raises(TensorFileError, match="outside the tensor"):
        t.get_slice("t").rows([2])


@pytest.mark.parametrize("entry", [{"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}, 1])
def test_a_header_of_a_million_entries_is_refused_before_it_is_parsed(tmp_path, entry, monkeypatch):
    """Hostile round III: 10⁶ empty entries took 38–64 s and 1.2 GB; the colons are counted first."""
    import json as json_module

    f = tmp_path / "a.safetensors"
    _write(f, {f"t{i}": entry for i in range(300_000)}, b"")  # 10⁶ as found; 3 × 10⁵ is past the cap
    parsed = []
    monkeypatch.setattr(json_module, "loads", lambda *a, **k: parsed.append(1))
    with pytest.raises(TensorFileError, match="more entries than 65,536 tensors would"):
        TensorFile(f)
    assert not parsed


def test_rows_are_read_in_any_order_with_repeats(tmp_path):
    f = tmp_path / "a.safetensors"
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    _write(f, {"__metadata__": {}, "t": {"dtype": "F32", "shape": [4, 3], "data_offsets": [0, 48]}}, table.tobytes())
    rows = TensorFile(f).get_slice("t").rows([3, 0, 3])
    assert rows.tolist() == table[[3, 0, 3]].tolist() and rows.flags.writeable and rows.shape == (3, 3)
    assert TensorFile(f).get_slice("t").rows([]).shape == (0, 3)


def test_a_rotary_config_that_cannot_run_is_refused(tmp_path):
    import shutil

    folder = tmp_path / "m"
    shutil.copytree(GOLDEN / "llama", folder)
    config = json.loads((folder / "config.json").read_text())
    config["rope_parameters"] = {"rope_type": "ntk", "factor": 4.0, "rope_theta": 10000.0}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="rope type 'ntk' is not supported; supported: default, linear"):
        load_model(folder)
    config["rope_parameters"] = {"rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0, 2.0]}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="rope short_factor must be a list of 4 numbers"):
        load_model(folder)
    config["rope_parameters"], config["num_key_value_heads"] = {"rope_theta": 10000.0}, 3
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="4 attention heads are not divisible by 3 key/value heads"):
        load_model(folder)


@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32", "F64"])
@pytest.mark.parametrize("special", [np.inf, -np.inf, np.nan, -np.nan, None])
def test_the_finite_check_reads_every_non_finite_pattern_and_no_finite_one(tmp_path, dtype, special):
    """The check reads bit patterns (the largest as signed and as unsigned integers): ±inf and NaN of either sign
    are found; the largest finite values of both signs, -0 and the smallest subnormals are not (F64: a value
    beyond float32's range becomes inf when read, and is found)."""
    stored_dtype = {"BF16": np.float32, "F16": np.float16, "F32": np.float32, "F64": np.float64}[dtype]
    info = np.finfo(np.float16 if dtype == "F16" else np.float32)
    finite = np.array([info.max, -info.max, -0.0, info.smallest_subnormal, -info.smallest_subnormal, 1.0])
    values = (finite if special is None else np.append(finite, special)).astype(stored_dtype)
    stored = (values.view(np.uint32) >> 16).astype(np.uint16) if dtype == "BF16" else values
    if dtype == "BF16":  # bf16 keeps float32's exponent: its largest finite is 0x7F7F, not a truncated float32 max
        stored[:2] = [0x7F7F, 0xFF7F]
    f = tmp_path / "s.safetensors"
    _write(f, {"t": {"dtype": dtype, "shape": [stored.size], "data_offsets": [0, stored.nbytes]}}, stored.tobytes())
    got, ok = TensorFile(f).get_slice("t").read_checked()
    assert ok == (special is None) == bool(np.isfinite(got).all())
    if dtype == "F64" and special is None:
        big = np.float64([1e39, 1.0])  # finite as F64, inf as float32
        _write(f, {"t": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}}, big.tobytes())
        assert not TensorFile(f).get_slice("t").read_checked()[1]


@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32", "F64"])
def test_a_large_tensor_is_read_exactly_block_by_block_and_checked_finite(tmp_path, dtype):
    """5 MiB of float32 (over `fresh`'s threshold for a map of its own) in 10 blocks of the reading pass, the last
    one short: every value widened exactly (F64 rounded as astype), and a NaN in the last block found."""
    values = np.random.default_rng(0).standard_normal(10 * 2**17 - 6).astype(np.float32)
    stored = {
        "BF16": (values.view(np.uint32) >> 16).astype(np.uint16),
        "F16": values.astype(np.float16),
        "F32": values,
        "F64": values.astype(np.float64) * (1 + 2**-30),  # not a float32: rounded on reading
    }[dtype]
    f = tmp_path / "a.safetensors"
    entry = {"dtype": dtype, "shape": [2, stored.size // 2], "data_offsets": [0, stored.nbytes]}
    _write(f, {"t": entry}, stored.tobytes())
    got, ok = TensorFile(f).get_slice("t").read_checked()
    want = bf16_to_float32(stored) if dtype == "BF16" else stored.astype(np.float32)
    assert ok and got.dtype == np.float32 and got.flags.writeable
    assert np.array_equal(got.reshape(-1), want)
    stored[-1] = 0x7FC0 if dtype == "BF16" else np.nan
    _write(f, {"t": entry}, stored.tobytes())
    got, ok = TensorFile(f).get_slice("t").read_checked()
    assert not ok and np.isnan(got[-1, -1]) and np.isfinite(got.reshape(-1)[:-1]).all()


@pytest.mark.parametrize("rows", [5, 100, 500])  # below SWAP_ROWS, transposed, from FEED_FORWARD_ROWS on
def test_feed_forward_is_the_mlp_and_its_residual_at_every_size(rows, backend):
    """x + act(x W_upᵀ + b_up) W_downᵀ + b_down, against float64: within the float32 bound of the second product
    (its inputs' own rounding, the first product's and GELU's, carried through |W_down| as a first-order term)."""
    rng = np.random.default_rng(rows)
    d, f = 24, 40
    w = {
        "up.weight": rng.standard_normal((f, d), dtype=np.float32),
        "up.bias": rng.standard_normal(f, dtype=np.float32),
        "down.weight": rng.standard_normal((d, f), dtype=np.float32),
        "down.bias": rng.standard_normal(d, dtype=np.float32),
    }
    x = rng.standard_normal((rows, d), dtype=np.float32)
    got = feed_forward(w, "up", "down", relu, x.reshape(1, rows, d))
    assert got.shape == (1, rows, d) and got.dtype == np.float32 and got.flags.c_contiguous
    w64 = {k: v.astype(np.float64) for k, v in w.items()}
    h = np.maximum(x @ w64["up.weight"].T + w64["up.bias"], 0)
    want = x + h @ w64["down.weight"].T + w64["down.bias"]
    h_err = affine_bound(x, w["up.weight"].T, w["up.bias"])  # |δh| (relu passes it on, never grows it)
    bound = (
        affine_bound(h.astype(np.float32), w["down.weight"].T, w["down.bias"]) + h_err @ np.abs(w64["down.weight"]).T
    )
    assert_within(got[0], want, bound * (1 + 1e-6) + U32 * np.abs(want), "feed_forward")


@pytest.mark.parametrize("rows", [1, 5, 100])
def test_dense_multiplies_through_mkl_on_one_thread_only(rows, monkeypatch):
    """With MKL, x W (W a weight's transpose, read as stored) is MKL's product, within the float32 bound; inside
    `threads(2)` it is NumPy's (OpenBLAS's threads), MKL being sequential, and so is a single row's."""
    fast = mkl.load()
    if fast is None:
        pytest.skip("the optional mkl package is not installed")
    used = []
    spy = type("Spy", (), {"matmul": lambda self, a, b, out: used.append(a.shape) or fast.matmul(a, b, out)})()
    monkeypatch.setattr(blocks, "_mkl", lambda: spy)
    rng = np.random.default_rng(rows)
    x, w = rng.standard_normal((2, rows, 48), dtype=np.float32), rng.standard_normal((40, 48), dtype=np.float32)
    got = blocks.dense(x, w.T)
    assert used == [(2 * rows, 48)] and got.shape == (2, rows, 40) and got.dtype == np.float32
    assert blocks.dense(x[0, :1], w.T).shape == (1, 40) and len(used) == 1  # one row: NumPy's gemv
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    assert_within(got, want, matmul_bound(x, w.T) * (1 + 1e-6), "dense through MKL")
    with parallel.threads(2):
        blocks.dense(x, w.T)
    assert len(used) == 1


@pytest.mark.parametrize("name", sorted(ACTIVATION_FNS))
def test_every_activation_writes_the_same_values_in_place(name):
    """act(x, out=x) (what an MLP does to its own temporary) is bitwise act(x), x left as it was by act(x)."""
    x = np.random.default_rng(0).standard_normal((3, 70_000), dtype=np.float32) * 4  # over one GELU chunk
    before = x.copy()
    want = ACTIVATION_FNS[name](x)
    assert np.array_equal(x, before)
    got = ACTIVATION_FNS[name](x, out=x)
    assert got is x or np.shares_memory(got, x)
    assert np.array_equal(got, want)
