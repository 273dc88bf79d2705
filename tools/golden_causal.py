"""Activation patching, direct logit attribution and attention knockout computed by transformers with hooks.

    ref/bin/python tools/golden_causal.py [GGUF_FILE]

Pinned: torch==2.13.0, transformers==5.23.0, gguf==0.19.0 (never attncli's dependencies; the environment
tools/reference.py makes, checked when run). Every model runs with eager attention in float32. Writes causal.json
beside every decoder golden folder's behaviour.json (tests/models/golden/*, tools/golden_decoders.py) for the pair
CLEAN / CORRUPT below (target: the clean run's top next token; contrast: the corrupt run's, or the clean run's
second when they agree), and with GGUF_FILE (SmolLM2-135M-Instruct Q4_1, dequantized by transformers' GGUF loading)
tests/models/smollm2/causal.json for the IOI pair and the factual prompt of issue 35:

- "patch": for each of resid, heads, attn-out and mlp-out, denoising (the clean activation into the corrupt run),
  every score (m_patched − m_corrupt) / (m_clean − m_corrupt), m = logit(target) − logit(contrast) at the last
  position, the model's own logits. resid: a forward pre-hook on decoder layer l replacing the hidden state
  entering it at one position; heads: a pre-hook on o_proj (c_proj, dense) replacing a head's slice of its input
  at every position; attn-out / mlp-out: a hook on the attention (MLP) module replacing its output at one position;
- "dla": the clean text's parts through the final norm, its scale frozen at the full run's last stream (LayerNorm:
  g ⊙ (c − mean c) / σ; RMSNorm: (offset + g) ⊙ c / rms), then lm_head's rows target − contrast, before any final
  soft-cap: hidden_states[0] (the embeddings), each head (its o_proj input slice times its columns of o_proj's
  weight), o_proj's bias, each MLP's output (Gemma 2, OLMo 2: its post-feed-forward norm's output; their attention
  parts times post_attention_layernorm(o) / o, that norm's scale frozen), the final norm's bias;
- "knockout": a pre-hook on the attention modules of each window's layers adding dtype-min (as −∞) to the 4-D
  additive mask at (query, key) for the keys of the span, and the relative change of the full run's top next-token
  probability.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLEAN, CORRUPT = "time flies like an arrow", "time fries like an arrow"
TINY_KNOCKOUT = {"text": CLEAN, "span": "flies", "window": 1}
IOI = (
    "When Mary and John went to the store, John gave a drink to",
    "When Mary and John went to the store, Mary gave a drink to",
    " Mary",
    " John",
)
FACT = {"text": "The capital of France is", "span": "France", "window": 6}
WHATS = ("resid", "heads", "attn-out", "mlp-out")


def modules(model):  # -> final norm, [layer], [attention], [o_proj], [mlp], [post-feed-forward norm or None]
    inner = getattr(model, "model", None) or getattr(model, "transformer", None) or model.gpt_neox
    if hasattr(inner, "h"):  # GPT-2
        blocks = list(inner.h)
        return inner.ln_f, blocks, [b.attn for b in blocks], [b.attn.c_proj for b in blocks], [b.mlp for b in blocks]
    if hasattr(inner, "final_layer_norm"):  # GPT-NeoX
        blocks = list(inner.layers)
        return (
            inner.final_layer_norm,
            blocks,
            [b.attention for b in blocks],
            [b.attention.dense for b in blocks],
            [b.mlp for b in blocks],
        )
    blocks = list(inner.layers)
    return (
        inner.norm,
        blocks,
        [b.self_attn for b in blocks],
        [b.self_attn.o_proj for b in blocks],
        [b.mlp for b in blocks],
    )


def first(output):
    return output[0] if isinstance(output, tuple) else output


def metric(model, ids, a, b):
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1].double()
    return float(logits[a] - logits[b])


def capture(model, ids):  # -> {"resid": [l][n, d], "o_in": [l][n, H dk], "attn": [l][n, d], "mlp": [l][n, d]}
    import torch

    _, blocks, attns, projs, mlps = modules(model)
    got: dict[str, list] = {k: [None] * len(blocks) for k in ("resid", "o_in", "attn", "mlp")}
    handles = []
    for l in range(len(blocks)):

        def pre(m, args, kwargs, l=l):
            got["resid"][l] = (args[0] if args else kwargs["hidden_states"])[0].clone()

        handles.append(blocks[l].register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(
            projs[l].register_forward_pre_hook(lambda m, args, l=l: got["o_in"].__setitem__(l, args[0][0].clone()))
        )
        handles.append(
            attns[l].register_forward_hook(lambda m, a, out, l=l: got["attn"].__setitem__(l, first(out)[0].clone()))
        )
        handles.append(
            mlps[l].register_forward_hook(lambda m, a, out, l=l: got["mlp"].__setitem__(l, first(out)[0].clone()))
        )
    with torch.no_grad():
        model(torch.tensor([ids]))
    for h in handles:
        h.remove()
    return got


def patch(model, clean, corrupt, a, b, whats=WHATS) -> dict:
    """Every denoising patch's normalized score (see the module's docstring)."""
    _, blocks, attns, projs, mlps = modules(model)
    src = capture(model, clean)
    m_clean, m_corrupt = metric(model, clean, a, b), metric(model, corrupt, a, b)
    n, n_head = len(clean), model.config.num_attention_heads
    out = {"m_clean": m_clean, "m_corrupt": m_corrupt}
    for what in whats:
        grid = []
        for l in range(len(blocks)):
            row = []
            for i in range(n_head if what == "heads" else n):
                if what == "resid":

                    def hook(m, args, kwargs, l=l, i=i):
                        if args:
                            x = args[0].clone()
                            x[0, i] = src["resid"][l][i]
                            return (x, *args[1:]), kwargs
                        x = kwargs["hidden_states"].clone()
                        x[0, i] = src["resid"][l][i]
                        return args, {**kwargs, "hidden_states": x}

                    handle = blocks[l].register_forward_pre_hook(hook, with_kwargs=True)
                elif what == "heads":
                    d_k = src["o_in"][l].shape[-1] // n_head

                    def hook(m, args, l=l, i=i, d_k=d_k):
                        x = args[0].clone()
                        x[0, :, i * d_k : (i + 1) * d_k] = src["o_in"][l][:, i * d_k : (i + 1) * d_k]
                        return (x, *args[1:])

                    handle = projs[l].register_forward_pre_hook(hook)
                else:
                    key, module = ("attn", attns[l]) if what == "attn-out" else ("mlp", mlps[l])

                    def hook(m, args, output, l=l, i=i, key=key):
                        y = first(output).clone()
                        y[0, i] = src[key][l][i]
                        return (y, *output[1:]) if isinstance(output, tuple) else y

                    handle = module.register_forward_hook(hook)
                m = metric(model, corrupt, a, b)
                handle.remove()
                row.append((m - m_corrupt) / (m_clean - m_corrupt))
            grid.append(row)
        out[what] = grid
    return out


def dla(model, ids, a, b) -> dict:
    """Each part's direct contribution to m at the last position (see the module's docstring)."""
    import torch

    norm, blocks, _, projs, _ = modules(model)
    got = capture(model, ids)
    post_ff = [getattr(block, "post_feedforward_layernorm", None) for block in blocks]
    post_attn = [
        getattr(block, "post_attention_layernorm", None) if post_ff[l] is not None else None
        for l, block in enumerate(blocks)
    ]
    with torch.no_grad():
        run = model(torch.tensor([ids]), output_hidden_states=True)
        last = run.hidden_states[-1][0, -1].double()  # transformers' last hidden state is after the final norm
        head = model.get_output_embeddings().weight.double()
        u = head[a] - head[b]
        # the stream before the final norm: the sum of the parts, recomputed below as the model added them
        parts = [("embeddings", None, None, run.hidden_states[0][0, -1].double())]
        for l in range(len(blocks)):
            w = projs[l].weight.double()
            o_in = got["o_in"][l][-1].double()
            n_head = model.config.num_attention_heads
            d_k = o_in.shape[-1] // n_head
            w_o = (
                w if type(projs[l]).__name__ == "Conv1D" else w.T
            )  # [H d_k, d]: GPT-2's Conv1D, else nn.Linear's transpose
            bias = projs[l].bias
            o = o_in @ w_o + (0 if bias is None else bias.double())
            frozen = torch.ones_like(o)
            if post_attn[l] is not None:
                frozen = post_attn[l](got["attn"][l][-1:])[0].double() / got["attn"][l][-1].double()
            for h in range(n_head):
                parts.append(("head", l, h, (o_in[h * d_k : (h + 1) * d_k] @ w_o[h * d_k : (h + 1) * d_k]) * frozen))
            if bias is not None and bool(bias.any()):
                parts.append(("attn bias", l, None, bias.double() * frozen))
            f = got["mlp"][l][-1:]
            if post_ff[l] is not None:
                f = post_ff[l](f)
            parts.append(("mlp", l, None, f[0].double()))
        stream = sum(p[3] for p in parts)
        centre = isinstance(norm, torch.nn.LayerNorm)
        eps = norm.eps if centre else getattr(norm, "variance_epsilon", None) or norm.eps
        g = norm.weight.double() + (1.0 if model.config.model_type.startswith("gemma") else 0.0)

        def frozen_final(c):
            c = c - c.mean() if centre else c
            x = stream - stream.mean() if centre else stream
            return g * c / torch.sqrt((x * x).mean() + eps)

        rows = [{"component": c, "layer": l, "head": h, "dla": float(frozen_final(v) @ u)} for c, l, h, v in parts]
        if centre and bool(norm.bias.any()):
            rows.append(
                {"component": "final norm bias", "layer": None, "head": None, "dla": float(norm.bias.double() @ u)}
            )
    return {"m": float(last @ u), "rows": rows}


def knockout(model, ids, keys, window) -> dict:
    """The top next token's relative change with the edges last -> keys blocked per window of layers."""
    import torch

    _, blocks, attns, _, _ = modules(model)
    with torch.no_grad():
        probs = torch.softmax(model(torch.tensor([ids])).logits[0, -1].double(), -1)
    top = int(probs.argmax())
    rows = []
    for s in range(len(blocks) - window + 1):
        handles = []
        for l in range(s, s + window):

            def pre(m, args, kwargs):
                mask = kwargs["attention_mask"]
                assert mask is not None, "eager attention hands every layer its 4-D mask"
                mask = mask.clone()
                mask[..., len(ids) - 1, keys] = torch.finfo(mask.dtype).min
                return args, {**kwargs, "attention_mask": mask}

            handles.append(attns[l].register_forward_pre_hook(pre, with_kwargs=True))
        with torch.no_grad():
            p = float(torch.softmax(model(torch.tensor([ids])).logits[0, -1].double(), -1)[top])
        for h in handles:
            h.remove()
        rows.append(
            {"first_layer": s, "last_layer": s + window - 1, "delta_prob": (p - float(probs[top])) / float(probs[top])}
        )
    return {"top": top, "prob": float(probs[top]), "rows": rows}


def span_keys(offsets, text: str, span: str) -> list[int]:
    start = text.find(span)
    end = start + len(span)
    return [i for i, (s, e) in enumerate(offsets) if s < end and e > start and e > s]


def tiny(folder: Path) -> dict:
    import torch
    import transformers
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(folder), attn_implementation="eager", dtype=torch.float32
    ).eval()
    clean, corrupt = tok.encode(CLEAN), tok.encode(CORRUPT)
    assert len(clean.ids) == len(corrupt.ids), folder
    with torch.no_grad():
        top_clean = model(torch.tensor([clean.ids])).logits[0, -1].argsort(descending=True).tolist()
        top_corrupt = int(model(torch.tensor([corrupt.ids])).logits[0, -1].argmax())
    a = top_clean[0]
    b = top_corrupt if top_corrupt != a else top_clean[1]
    keys = span_keys(clean.offsets, CLEAN, TINY_KNOCKOUT["span"])
    return {
        "clean": CLEAN,
        "corrupt": CORRUPT,
        "target": tok.id_to_token(a),
        "contrast": tok.id_to_token(b),
        "target_id": a,
        "contrast_id": b,
        "patch": patch(model, clean.ids, corrupt.ids, a, b),
        "dla": dla(model, clean.ids, a, b),
        "knockout": {**TINY_KNOCKOUT, "keys": keys, **knockout(model, clean.ids, keys, TINY_KNOCKOUT["window"])},
    }


def smollm2(path: Path) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    clean_text, corrupt_text, target, contrast = IOI
    clean, corrupt = tok(clean_text)["input_ids"], tok(corrupt_text)["input_ids"]
    a, b = (tok(t, add_special_tokens=False)["input_ids"] for t in (target, contrast))
    assert len(a) == len(b) == 1 and len(clean) == len(corrupt)
    fact = tok(FACT["text"], return_offsets_mapping=True)
    keys = span_keys(fact["offset_mapping"], FACT["text"], FACT["span"])
    return {
        "clean": clean_text,
        "corrupt": corrupt_text,
        "ids": clean,
        "target": target,
        "contrast": contrast,
        "target_id": a[0],
        "contrast_id": b[0],
        "patch": patch(model, clean, corrupt, a[0], b[0], ("resid", "heads")),
        "dla": dla(model, clean, a[0], b[0]),
        "knockout": {
            **FACT,
            "ids": fact["input_ids"],
            "keys": keys,
            **knockout(model, fact["input_ids"], keys, FACT["window"]),
        },
    }


def main(argv: list[str]) -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/golden_causal.py", gguf="0.19.0")
    import torch

    torch.set_num_threads(1)
    golden = ROOT / "tests" / "models" / "golden"
    for folder in sorted(golden.iterdir()):
        if not (folder / "behaviour.json").is_file():
            continue
        doc = tiny(folder)
        (folder / "causal.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{folder.name:16s} m {doc['patch']['m_clean']:+.3f} / {doc['patch']['m_corrupt']:+.3f}")
    if argv:
        doc = smollm2(Path(argv[0]).resolve())
        (ROOT / "tests" / "models" / "smollm2" / "causal.json").write_text(json.dumps(doc, indent=1) + "\n")
        print("smollm2", doc["patch"]["m_clean"], doc["patch"]["m_corrupt"])


if __name__ == "__main__":
    main(sys.argv[1:])
