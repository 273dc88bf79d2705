"""One resolver for an option that names a vocabulary token (--target, --contrast): its text with or without the
leading space, or its vocabulary form; an ambiguous one says what was chosen; a target that is another spelling
of the model's own next token is said (`--target is` watches `is` where the model writes ` is`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attncli.errors import ConfigError
from attncli.models import load_model
from attncli.models.interpret.ablate import another_spelling
from attncli.models.runs.vocab import VocabToken, spellings, token_text, vocab_token

GPT2 = Path(__file__).parent / "golden" / "gpt2"


@pytest.fixture(scope="module")
def golden_gpt2():
    return load_model(GPT2)


@pytest.mark.parametrize("given", ["the", " the", "Ġthe"])
def test_the_text_with_or_without_its_space_and_the_vocabulary_form_name_one_token(golden_gpt2, given):
    """`the` alone is no token of this vocabulary: its spaced spelling is the only one, chosen without a note."""
    found = vocab_token(golden_gpt2, given)
    assert found.id == golden_gpt2.tokenizer.token_to_id("Ġthe") and found.text == " the" and found.note is None


def test_an_ambiguous_name_is_chosen_as_typed_and_the_note_names_the_other(golden_gpt2):
    """`is` and ` is` are both tokens: the one as typed is watched, and the note says which and what else."""
    bare, spaced = golden_gpt2.tokenizer.token_to_id("is"), golden_gpt2.tokenizer.token_to_id("Ġis")
    found = vocab_token(golden_gpt2, "is", "--contrast")
    assert found.id == bare
    assert found.note == f"--contrast 'is' is the token 'is' (id {bare}); it could also mean ' is' (id {spaced})"
    for given in (" is", "Ġis"):  # with its space, or in the vocabulary's form: one token, no note
        assert vocab_token(golden_gpt2, given) == VocabToken(spaced, " is", None)


def test_a_name_of_several_tokens_is_a_command_line_mistake(golden_gpt2):
    with pytest.raises(ConfigError, match=r"--target 'time flies' is \d+ tokens for gpt2"):
        vocab_token(golden_gpt2, "time flies")


def test_spellings_and_the_line_about_another_spelling(golden_gpt2):
    bare, spaced = golden_gpt2.tokenizer.token_to_id("is"), golden_gpt2.tokenizer.token_to_id("Ġis")
    assert spellings(golden_gpt2, bare) == [bare, spaced] and token_text(golden_gpt2, spaced) == " is"
    said = another_spelling(golden_gpt2, bare, spaced, "is")
    assert said is not None and said.startswith("--target 'is' watches the token 'is'")
    assert f"the model's own next token is ' is' (id {spaced}), another spelling of it" in said
    assert another_spelling(golden_gpt2, spaced, spaced, " is") is None  # the model's own token: nothing to say
    the = golden_gpt2.tokenizer.token_to_id("Ġthe")
    assert another_spelling(golden_gpt2, bare, the, "is") is None  # another word: the target is what the user asked
