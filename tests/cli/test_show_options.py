"""The options of issue "output that fits": --head, --mean-heads, --query, --keep-newline, bare `attn`."""

import json

from tests.conftest import attn


def test_bare_attn_prints_its_help():
    r = attn()
    assert r.exit_code == 0 and r.stdout.startswith("Usage: ") and "\\n" not in r.stdout
    assert "show" in r.stdout and "Commands" in r.stdout


def test_one_trailing_newline_of_stdin_is_not_a_token():
    plain = json.loads(attn("show", "-", "-t", "char", "-f", "json", input="ab\n").stdout)
    assert plain["tokens"] == ["a", "b"]
    kept = json.loads(attn("show", "-", "-t", "char", "-f", "json", "--keep-newline", input="ab\n").stdout)
    assert kept["tokens"] == ["a", "b", "\n"]
    two = json.loads(attn("show", "-", "-t", "char", "-f", "json", input="ab\n\n").stdout)
    assert two["tokens"] == ["a", "b", "\n"]  # only the one that ends the input goes


def test_head_narrows_a_text_run_in_every_format():
    every = json.loads(attn("show", "time flies like", "--heads", "2", "-f", "json").stdout)
    one = json.loads(attn("show", "time flies like", "--heads", "2", "--head", "1", "-f", "json").stdout)
    assert [h["head"] for h in one["heads"]] == [1] and one["config"]["head"] == 1
    assert one["heads"][0]["weights"] == every["heads"][1]["weights"] and one["output"] == every["output"]
    table = attn("show", "time flies like", "--heads", "2", "--head", "1", "--color", "never").stdout
    assert "head 1 of 0..1 shown (--head)" in table
    bad = attn("show", "time flies", "--heads", "2", "--head", "2")
    assert bad.exit_code == 2 and "--head 2 is out of range: the run has 2 heads, 0..1" in bad.stderr


def test_table_only_options_refuse_a_data_format():
    for option in (["--mean-heads"], ["--query", "flies"], ["--matrix-only"]):
        r = attn("show", "time flies", "--heads", "2", *option, "-f", "json")
        assert r.exit_code == 2 and f"{option[0]} only changes what the table draws" in r.stderr, option


def test_query_names_a_token_or_an_index():
    by_token = attn("show", "time flies like", "--query", "flies", "--color", "never").stdout
    by_index = attn("show", "time flies like", "--query", "1", "--color", "never").stdout
    assert by_token == by_index and "query 1 'flies'" in by_token
    bad = attn("show", "time flies like", "--query", "banana")
    assert bad.exit_code == 2 and "--query 'banana': no such token; the tokens are 0:time 1:flies 2:like" in bad.stderr
    assert "--query 7 is out of range" in attn("show", "time flies", "--query", "7").stderr


def test_masked_keys_are_not_top_keys_in_json_either():
    doc = json.loads(attn("show", "time flies like", "--mask", "causal", "--stats", "-f", "json").stdout)
    assert doc["stats"][0]["top_keys"][0] == [0] and len(doc["stats"][0]["top_keys"][1]) == 2


def test_the_matrix_alone_for_a_slide():
    r = attn("show", "time flies like", "--matrix-only", "--color", "never").stdout
    assert "Attention weights" in r and "Output" not in r and "scaled: s =" not in r
