"""Every keyword of every API function is declared once (api/keywords.py's KEYWORDS) and checked there: a value
of the wrong type is a ConfigError naming the keyword and what it takes (hostile round IV, items 12 and 13)."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import attncli
from attncli import api
from attncli.api.keywords import KEYWORDS, KINDS, option
from attncli.errors import ConfigError, DataError

GOLDEN = Path(__file__).parent.parent / "models" / "golden"
DECODER = str(GOLDEN / "qwen2")
FUNCTIONS = {name: getattr(api, name) for name in api.__all__ if inspect.isfunction(getattr(api, name))}


def test_every_keyword_of_every_function_is_in_the_table_once():
    declared: dict[str, set[str]] = {}
    for k in KEYWORDS:
        for f in k.functions.split():
            assert k.name not in declared.setdefault(f, set()), (f, k.name)  # one row per keyword of a function
            declared[f].add(k.name)
    taken = {  # **options stand for another function's keywords (show_lines takes show's), checked as that one's
        f: {n for n, p in inspect.signature(fn).parameters.items() if p.kind is not p.VAR_KEYWORD}
        for f, fn in FUNCTIONS.items()
    }
    assert {f: names for f, names in declared.items() if names} == {f: names for f, names in taken.items() if names}
    assert all(hasattr(fn, "__wrapped__") for fn in FUNCTIONS.values())  # each checked by @checked


# (function, positional text or None, keywords): each a wrong type the round found raising TypeError,
# AttributeError or an unpacking error, and the like for every other kind of keyword
WRONG = [
    ("show", "a b", {"heads": "2"}),
    ("show", "a b", {"heads": True}),
    ("show", "a b", {"heads": 2.0}),
    ("show", "a b", {"dim": None}),
    ("show", "a b", {"dk": "4"}),
    ("show", "a b", {"d_a": 1.5}),
    ("show", "a b", {"seed": 1.5}),
    ("show", "a b", {"seed": None}),
    ("show", "a b", {"temperature": "1"}),
    ("show", "a b", {"temperature": None}),
    ("show", "a b", {"mask": 5}),
    ("show", "a b", {"mask": [1, 2]}),
    ("show", "a b", {"tokenizer": None}),
    ("show", "a b", {"variant": 3}),
    ("show", "a b", {"positional": ["sinusoidal"]}),
    ("show", "a b", {"projection": None}),
    ("show", "a b", {"context": 7}),
    ("show", "a b", {"rank": "2"}),
    ("show", "a b", {"features": 2.5}),
    ("show", "a b", {"stats": "yes"}),
    ("show", "a b", {"stats": 1}),
    ("show", "a b", {"no_weights": None}),
    ("show", "a b", {"mean_heads": 0}),
    ("show", "a b", {"matrix_only": "no"}),
    ("show", "a b", {"contrib": 1}),
    ("show", "a b", {"scale": None}),
    ("show", "a b", {"drop_sink": "yes"}),
    ("show", "a b", {"raw_tokens": "no"}),
    ("show", "a b", {"query": 1.0}),
    ("show", "a b", {"precision": "3"}),
    ("show", "a b", {"max_tokens": 1e3}),
    ("show", "a b", {"limits": 5}),
    ("show", "a b", {"dtype": np.float32}),
    ("show", b"a b", {}),
    ("show", 123, {}),
    ("show", None, {}),
    ("show", "a b", {"model": 123}),
    ("show", "a b", {"model": DECODER, "layer": "1"}),
    ("show", "a b", {"model": DECODER, "head": 0.0}),
    ("show", "a b", {"model": DECODER, "part": 1}),
    ("show", "a b", {"model": DECODER, "generate": "3"}),
    ("show", "a b", {"model": DECODER, "generate": 2.0}),
    ("steps", "a b", {"query": 0.5}),
    ("steps", "a b", {"heads": "1"}),
    ("view", "a b", {"output": 5}),
    ("view", "a b", {"lens": "yes"}),
    ("view", "a b", {"model": DECODER, "ablate": True, "target": 5}),
    ("view", "a b", {"model": DECODER, "ablate": True, "mode": None}),
    ("compare", "a b", {"tokenizers": ["char"]}),
    ("compare", "a b", {"variants": None}),
    ("compare", "a b", {"temperature": "hot"}),
    ("tokens", "a b", {"max_tokens": "9"}),
    ("tokens", ["a"], {}),
    ("compute", None, {"q": None}),
    ("compute", None, {"q": "1 2"}),
    ("compute", None, {"q": [[1.0]], "mask": ["causal"]}),
    ("compute", None, {"q": [[1.0]], "params": [1, 2]}),
    ("compute", None, {"q": [[1.0]], "no_weights": "true"}),
    ("heads", "a b", {"model": DECODER, "stat": 3}),
    ("heads", "a b", {"model": DECODER, "generate": "2"}),
    ("lens", "a b", {"model": DECODER, "top_k": "5"}),
    ("lens", "a b", {"model": None}),
    ("ablate", "a b", {"model": DECODER, "target": 5}),
    ("ablate", "a b", {"model": DECODER, "heads": [(0,)]}),
    ("ablate", "a b", {"model": DECODER, "heads": "0.1"}),
    ("ablate", "a b", {"model": DECODER, "heads": [(0, 1, 2)]}),
    ("ablate", "a b", {"model": DECODER, "heads": [("0", 1)]}),
    ("ablate", "a b", {"model": DECODER, "heads": 3}),
    ("ablate", "a b", {"model": DECODER, "mode": 0}),
    ("rollout", "a b", {"model": DECODER, "layer": "0"}),
    ("show_lines", None, {"lines": "one text"}),
    ("show_lines", None, {"lines": ["a b"], "heads": "2"}),
    ("show_lines", None, {"lines": ["a b"], "on_warning": "print"}),
    ("patch", "a b", {"model": DECODER, "corrupt": 3, "target": "a"}),
    ("patch", "a b", {"model": DECODER, "corrupt": "a c", "target": "a", "noising": "yes"}),
    ("dla", "a b", {"model": DECODER, "target": 5}),
    ("ablate", "a b", {"model": DECODER, "rank_by": 1}),
    ("ablate", "a b", {"model": DECODER, "contrast": 2}),
    ("knockout", "a b", {"model": DECODER, "span": "a", "window": "2"}),
    ("catalog", None, {"path": 7}),
    ("catalog", None, {"path": ["a", 7]}),
    ("corpus", None, {"lines": "one text", "model": DECODER}),
    ("corpus", None, {"lines": ["a"], "model": DECODER, "workers": "2"}),
    ("corpus", None, {"lines": ["a"], "model": DECODER, "progress": 1}),
    ("corpus", None, {"lines": ["a"], "model": DECODER, "stops": KeyboardInterrupt}),
]


@pytest.mark.parametrize("function, text, keywords", WRONG, ids=[f"{f}{sorted(k)}" for f, _, k in WRONG])
def test_a_wrong_type_is_a_config_error_naming_the_keyword(function, text, keywords):
    args = () if text is None and function in ("compute", "corpus", "show_lines", "catalog") else (text,)
    with pytest.raises(ConfigError) as e:
        getattr(attncli, function)(*args, **keywords)
    said = str(e.value)
    named = [option(k) for k in keywords] + ([option("text")] if args else [])
    assert any(f"{name} takes " in said for name in named), said
    assert "\n" not in said


def test_how_many_wrong_type_cases_per_function():
    """The count of the table above, per function (the closing note of issue 37 reports it)."""
    counted: dict[str, int] = {}
    for function, _, _ in WRONG:
        counted[function] = counted.get(function, 0) + 1
    assert sum(counted.values()) == len(WRONG) >= 70
    assert set(counted) == set(FUNCTIONS) - {"variants"}  # every function with keywords has a case


REQUIRED = {
    "text": "a b",
    "model": DECODER,
    "q": [[1.0]],
    "lines": ["a b"],
    "corrupt": "a c",
    "target": "a",
    "span": "a",
}
EVERY = sorted((f, k.name) for k in KEYWORDS for f in k.functions.split())


@pytest.mark.parametrize("function, keyword", EVERY, ids=[f"{f}-{k}" for f, k in EVERY])
def test_every_keyword_of_every_function_refuses_a_foreign_value(function, keyword):
    """Each (function, keyword) of the table given values no keyword takes (bytes, a complex number, a bare object;
    compute's arrays take what NumPy reads, and a complex or an object array is then the data's DataError): a
    ConfigError naming that keyword, before anything runs."""
    fn = FUNCTIONS[function]
    params = inspect.signature(fn).parameters
    foreign = [b"\x00"] + ([] if keyword in ("q", "k", "v") else [1j, object()])
    for value in foreign:
        needed = [name for name, p in params.items() if p.default is p.empty and p.kind is not p.VAR_KEYWORD]
        given = {name: REQUIRED[name] for name in needed} | {keyword: value}
        with pytest.raises(ConfigError, match=rf"^{option(keyword)} takes ") as e:
            fn(**given)
        assert "\n" not in str(e.value)


def test_a_call_python_refuses_is_a_config_error_too():
    with pytest.raises(ConfigError, match=r"show\(\): got an unexpected keyword argument 'hedas'"):
        attncli.show("a b", hedas=2)
    with pytest.raises(ConfigError, match=r"ablate\(\): missing a required argument: 'model'"):
        attncli.ablate("a b")


def test_numpy_numbers_are_taken_everywhere():
    r = attncli.show("a b c", model=DECODER, generate=np.int64(2))
    assert len(r.tokens) == 3 + 2
    r = attncli.show("a b", heads=np.int64(2), dim=np.int32(8), temperature=np.float32(0.5), stats=np.bool_(True))
    assert r.weights.shape == (2, 2, 2)
    rows = attncli.ablate("a b", model=DECODER, heads=[np.array([0, 1])]).rows
    assert [(row["layer"], row["head"]) for row in rows] == [(0, 1)]
    assert KINDS[("show", "generate")].plain(np.uint8(3)) == 3


def test_weights_resized_in_place_are_a_data_error_not_an_index_error():
    r = attncli.show("time flies like", heads=2)
    r.weights.resize((1, 2, 2), refcheck=False)
    with pytest.raises(DataError, match=r"weights has shape \(1, 2, 2\), but its 2 heads and 3 x 3 tokens give"):
        r.to_json()
