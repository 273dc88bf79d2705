"""--generate N on an encoder–decoder: the target it writes from --context SOURCE, after TEXT (its beginning)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attncli.models import load_model
from attncli.models.runs.encdec import seq2seq_forward
from tests.conftest import attn

GOLDEN = Path(__file__).parents[1] / "models" / "golden"


def ok(*args) -> str:
    r = attn(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


def cases(name: str) -> list[dict]:
    return json.loads((GOLDEN / name / "generation.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("name", ["bart", "mbart", "marian", "t5"])
@pytest.mark.parametrize("part", ["cross", "decoder"])
def test_show_json_is_the_whole_target_and_its_ids_are_transformers(name, part):
    case = cases(name)[1]  # "continued": TEXT is the target's first words
    folder, n = GOLDEN / name, case["max_new_tokens"]
    args = ("show", case["text"], "--model", folder, "--context", case["source"], "--generate", n, "--part", part)
    doc = json.loads(ok(*args, "-f", "json"))
    assert doc["generated"]["ids"] == case["new"]
    assert doc["generated"]["decoding"] == "greedy (the most probable each time)"
    ids = case["decoder_ids"] + case["new"]
    assert len(doc["tokens"]) == len(ids)
    run = seq2seq_forward(load_model(folder), case["source_ids"], ids)  # one teacher-forced pass of the whole target
    weights = (run.cross if part == "cross" else run.decoder)[-1].weights
    np.testing.assert_array_equal(np.array([h["weights"] for h in doc["heads"]], dtype=np.float32), weights)


def test_an_empty_text_starts_from_the_decoder_start_token():
    case = cases("marian")[0]
    doc = json.loads(
        ok("show", "", "--model", GOLDEN / "marian", "--context", case["source"], "--generate", 5, "-f", "json")
    )
    assert doc["tokens"][0] == "<pad>" and len(doc["tokens"]) == 6
    assert doc["generated"]["ids"] == [*case["new"][:4], 0]  # Marian's forced end (forced_eos_token_id 0) last


def test_table_marks_the_written_tokens_and_says_how_the_decoder_read():
    case = cases("bart")[1]
    out = ok(
        "show",
        case["text"],
        "--model",
        GOLDEN / "bart",
        "--context",
        case["source"],
        "--generate",
        3,
        "--head",
        "0",
        "--width",
        "200",
    )
    assert out.count("›") >= 3
    assert "written: the decoder read its start token, then TEXT as its tokenizer cuts it (4 tokens), then" in out
    assert "› = written by the model after the text: 3 tokens, greedy" in out


def test_steps_heads_and_the_page_carry_the_written_target():
    case = cases("t5")[1]
    common = (case["text"], "--model", GOLDEN / "t5", "--context", case["source"], "--generate", "4")
    steps = json.loads(ok("steps", *common, "-f", "json"))
    heads = json.loads(ok("heads", *common, "--part", "decoder", "-f", "json"))
    page = json.loads(ok("view", *common, "-f", "json"))
    assert steps["generated"]["ids"] == heads["generated"]["ids"] == page["generated"]["ids"] == case["new"][:4]
    assert len(heads["tokens"]) == len(case["decoder_ids"]) + 4
    assert _as_text(page["parts"]["cross"]["labels"][-4:]) == _bare(page["parts"]["cross"]["tokens"][-4:])
    assert len(page["parts"]["decoder"]["tokens"]) == len(case["decoder_ids"]) + 4
    assert "--generate 4" in page["exact"]["command"]


def _as_text(labels: list[str]) -> list[str]:
    """Written tokens' labels (each marked ›) as their words: without the mark and the ␣ of a leading space."""
    assert all(label.startswith("›") for label in labels)
    return [label.removeprefix("›").removeprefix("␣") for label in labels]


def _bare(tokens: list[str]) -> list[str]:
    """SentencePiece's strings without the ▁ of a leading space."""
    return [t.removeprefix("▁") for t in tokens]


@pytest.mark.parametrize("text", ["", "case"])
def test_a_page_opened_at_the_encoder_still_carries_the_written_target(text):
    """The page of every part: opened at the encoder (whose rows are the source), its cross and decoder parts are
    still the target the model wrote, as when opened at the cross-attention (an empty TEXT: from the start token)."""
    case = cases("t5")[1]
    common = ("--model", GOLDEN / "t5", "--context", case["source"], "--generate", "4", "-f", "json")
    text = case["text"] if text else ""
    at_cross = json.loads(ok("view", text, *common))
    at_encoder = json.loads(ok("view", text, *common, "--part", "encoder"))
    assert at_encoder["generated"] == at_cross["generated"]
    for part in ("cross", "decoder"):
        assert at_encoder["parts"][part]["tokens"] == at_cross["parts"][part]["tokens"]
        assert _as_text(at_encoder["parts"][part]["labels"][-4:]) == _bare(at_cross["parts"][part]["tokens"][-4:])
    assert at_encoder["part"] == "encoder" and "--generate 4" in at_encoder["exact"]["command"]


def test_sampling_flags_work_on_an_encoder_decoder():
    case = cases("bart")[0]
    common = ("show", "", "--model", GOLDEN / "bart", "--context", case["source"], "--generate", "6", "-f", "json")
    one = json.loads(ok(*common, "--temperature", "3", "--seed", "1"))["generated"]
    assert one == json.loads(ok(*common, "--temperature", "3", "--seed", "1"))["generated"]
    assert one["decoding"].startswith("sampled (temperature 3; seed 1") and one["ids"][-1] == 2  # the forced end
