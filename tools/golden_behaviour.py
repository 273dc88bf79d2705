"""What transformers' decoders do with the golden folders of tests/models/golden/: greedy ids, lens, ablation.

    ref/bin/python tools/golden_behaviour.py [GOLDEN_DIR]     (default tests/models/golden)

Pinned: torch==2.13.0, transformers==5.23.0 (never attncli's dependencies; the environment tools/reference.py
makes, checked when run). For every decoder folder made by
tools/golden_decoders.py it writes behaviour.json beside reference.npz:

- "greedy": the prompt's ids and `generate(do_sample=False, max_new_tokens=NEW)`'s new ids (the prompt and the
  new tokens are longer than every sliding window);
- "lens": for every layer (hidden_states[0..L]) and position, the top K ids and probabilities of the final norm
  and the output head (the last layer: the model's own logits, Gemma 2's soft-capped);
- "ablate": for every head, in "zero" and "mean" mode, the change in the logit and the log-probability of the
  model's own next token at the last position when that head's slice of the output projection's input is set
  to zero or to its mean over the text (a forward pre-hook on o_proj, c_proj or dense).

For every encoder–decoder folder (tools/golden_seq2seq.py: a *ForConditionalGeneration or *MTModel) it writes
generation.json: "cases" of `generate(input_ids=SOURCE, do_sample=False, max_new_tokens=NEW)` with the folder's
own settings (its forced EOS too), "from-start" with the decoder start token alone (attn's TEXT ""), "continued"
with `decoder_input_ids` = the first words of the target (attn's TEXT: those words, mBART's with its language code
first) as the decoder reads them with teacher forcing (shift_tokens_right of their labels, without the
end-of-sequence token) and `decoder_start_token_id` their first (mBART: the language code, as mBART's documentation
generates; the others': their own start): the source's and decoder's ids, the new ids, and at every step
the TOP ids of the raw logits (`output_logits`, before the forced EOS) and their logits; and "lens": the "short"
pair with teacher forcing (its labels' decoder input), each `decoder_hidden_states[l]` (l < L) through the
decoder's final norm (mBART's layer_norm, T5's final_layer_norm; T5 also scaled by d_model^-0.5 when its config
says scale_decoder_outputs) and the head (+ final_logits_bias), the last layer the model's own logits: the top K
ids and probabilities at every layer and position, and the largest |logit|.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "time flies like an arrow"
NEW = 24  # new tokens: with the prompt, more than every sliding window (8) of the golden folders
K = 5
TOP = 5  # an encoder–decoder's logits kept per step


def parts(model):  # -> (final norm, [output projection per layer]) of a *ForCausalLM
    inner = getattr(model, "model", None) or getattr(model, "transformer", None) or model.gpt_neox
    if hasattr(inner, "h"):  # GPT-2
        return inner.ln_f, [block.attn.c_proj for block in inner.h]
    if hasattr(inner, "final_layer_norm"):  # GPT-NeoX
        return inner.final_layer_norm, [layer.attention.dense for layer in inner.layers]
    return inner.norm, [layer.self_attn.o_proj for layer in inner.layers]


def head_logits(model, normed):  # [..., d] -> [..., vocab], soft-capped as the model's own (Gemma 2)
    import torch

    out = model.get_output_embeddings()(normed)
    cap = getattr(model.config, "final_logit_softcapping", None)
    return torch.tanh(out / cap) * cap if cap else out


def behaviour(folder: Path) -> dict:
    import torch
    import transformers
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(folder), attn_implementation="eager", dtype=torch.float32
    ).eval()
    ids = tok.encode(PROMPT).ids
    x = torch.tensor([ids])
    eos = model.config.eos_token_id
    with torch.no_grad():
        out = model.generate(
            x, do_sample=False, max_new_tokens=NEW, pad_token_id=eos if eos is not None else 0, num_beams=1
        )
        run = model(x, output_hidden_states=True)
        norm, projections = parts(model)
        hidden = run.hidden_states
        layers = [head_logits(model, norm(h[0])) for h in hidden[:-1]] + [run.logits[0]]
        probs = torch.softmax(torch.stack(layers).double(), dim=-1)  # [L + 1, n, vocab]
        top = torch.sort(probs, dim=-1, descending=True, stable=True)
        clean = run.logits[0, -1]
        target = int(clean.argmax())
        clean_lp = torch.log_softmax(clean.double(), -1)[target]
        d_k = model.config.hidden_size // model.config.num_attention_heads
        d_k = getattr(model.config, "head_dim", None) or d_k
        ablate = {}
        for mode in ("zero", "mean"):
            rows = []
            for l, proj in enumerate(projections):
                for h in range(model.config.num_attention_heads):

                    def hook(module, args, h=h, mode=mode):
                        (z,) = args
                        z = z.clone()
                        cut = z[..., h * d_k : (h + 1) * d_k]
                        z[..., h * d_k : (h + 1) * d_k] = 0 if mode == "zero" else cut.mean(dim=-2, keepdim=True)
                        return (z,)

                    handle = proj.register_forward_pre_hook(hook)
                    logits = model(x).logits[0, -1]
                    handle.remove()
                    lp = torch.log_softmax(logits.double(), -1)[target]
                    rows.append(
                        {
                            "layer": l,
                            "head": h,
                            "delta_logit": float(logits[target] - clean[target]),
                            "delta_logprob": float(lp - clean_lp),
                        }
                    )
            ablate[mode] = rows
    return {
        "prompt": PROMPT,
        "greedy": {"ids": ids, "new": out[0, len(ids) :].tolist(), "max_new_tokens": NEW},
        "lens": {"k": K, "top_ids": top.indices[..., :K].tolist(), "top_probs": top.values[..., :K].tolist()},
        "ablate": {"target": target, **ablate},
    }


def decoder_head(model, hidden):  # [..., d_model] a decoder's stream -> [..., vocab], as the model's own logits
    dec = model.get_decoder()
    norm = getattr(dec, "layer_norm", None) or getattr(dec, "final_layer_norm", None)
    h = hidden if norm is None else norm(hidden)
    if getattr(model.config, "scale_decoder_outputs", False) and model.config.model_type == "t5":
        h = h * model.config.d_model**-0.5
    out = model.lm_head(h)
    bias = getattr(model, "final_logits_bias", None)
    return out if bias is None else out + bias


def target_lens(model, tok, pair: dict) -> dict:
    """The decoder's lens of `pair`'s target, teacher-forced (see the module's docstring)."""
    import torch

    source = torch.tensor([tok.encode(pair["source"]).ids])
    target = pair["target"]
    code = target.split()[0] if model.config.model_type == "mbart" else None
    labels = tok.encode(target.removeprefix(f"{code} ") if code else target).ids
    if code:
        labels[-1] = tok.token_to_id(code)
    labels = torch.tensor([labels])
    with torch.no_grad():
        run = model(input_ids=source, labels=labels, output_hidden_states=True)
        layers = [decoder_head(model, h[0]) for h in run.decoder_hidden_states[:-1]] + [run.logits[0]]
        every = torch.stack(layers)  # [L + 1, m, vocab]
        top = torch.sort(torch.softmax(every.double(), dim=-1), dim=-1, descending=True, stable=True)
    return {
        "source": pair["source"],
        "text": target,
        "decoder_ids": model.prepare_decoder_input_ids_from_labels(labels=labels)[0].tolist(),
        "k": K,
        "top_ids": top.indices[..., :K].tolist(),
        "top_probs": top.values[..., :K].tolist(),
        "max_abs_logit": float(every.abs().max()),
    }


def generation(folder: Path) -> dict:
    """transformers' greedy targets of an encoder–decoder folder (see the module's docstring)."""
    import torch
    import transformers
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(
        str(folder), attn_implementation="eager", dtype=torch.float32
    ).eval()
    pairs = json.loads((folder / "pairs.json").read_text(encoding="utf-8"))
    eos = model.config.eos_token_id
    cases = []
    for case, pair, n_words in (("from-start", pairs["short"], 0), ("continued", pairs["long"], 3)):
        text = " ".join(pair["target"].split()[:n_words])
        source = torch.tensor([tok.encode(pair["source"]).ids])
        kwargs = {}
        if text:
            code = text.split()[0] if model.config.model_type == "mbart" else None  # the target's language code
            labels = tok.encode(text.removeprefix(f"{code} ") if code else text).ids
            if code:  # the target tokenizer's labels: its language code last, where the source's stands
                labels[-1] = tok.token_to_id(code)
            first = model.prepare_decoder_input_ids_from_labels(labels=torch.tensor([labels]))[0].tolist()
            while first[-1] == eos:  # the decoder input of those words, without the end the tokenizer appends
                first.pop()
            # its first token the decoder's start: mBART's language code, as its documentation generates
            kwargs |= {"decoder_input_ids": torch.tensor([first]), "decoder_start_token_id": first[0]}
        with torch.no_grad():
            out = model.generate(
                source,
                do_sample=False,
                num_beams=1,
                max_new_tokens=NEW,
                output_logits=True,
                return_dict_in_generate=True,
                **kwargs,
            )
        ids = out.sequences[0].tolist()
        first_len = len(ids) - len(out.logits)
        raw = torch.cat(out.logits)  # [new, vocab]
        top = torch.sort(raw, dim=-1, descending=True, stable=True)
        cases.append(
            {
                "case": case,
                "source": pair["source"],
                "text": text,
                "source_ids": source[0].tolist(),
                "decoder_ids": ids[:first_len],
                "new": ids[first_len:],
                "max_new_tokens": NEW,
                "top_ids": top.indices[:, :TOP].tolist(),
                "top_logits": top.values[:, :TOP].tolist(),
            }
        )
    return {"cases": cases, "lens": target_lens(model, tok, pairs["short"])}


def main(argv: list[str]) -> None:
    from reference import require  # tools/reference.py: the pinned environment

    require("tools/golden_behaviour.py")
    golden = Path(argv[0]) if argv else ROOT / "tests" / "models" / "golden"
    for folder in sorted(golden.iterdir()):
        config = folder / "config.json"
        architectures = json.loads(config.read_text())["architectures"] if config.is_file() else []
        if any(a.endswith(("ForConditionalGeneration", "MTModel")) for a in architectures):
            written = generation(folder)
            (folder / "generation.json").write_text(json.dumps(written, indent=1) + "\n")
            print(f"{folder.name:12s} " + " · ".join(f"{c['case']} {c['new'][:8]}…" for c in written["cases"]))
        if not any(a.endswith(("CausalLM", "LMHeadModel")) for a in architectures):
            continue
        doc = behaviour(folder)
        (folder / "behaviour.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{folder.name:12s} greedy {doc['greedy']['new'][:8]}… target {doc['ablate']['target']}")


if __name__ == "__main__":
    main(sys.argv[1:])
