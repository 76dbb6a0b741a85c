"""The tolerant JSON parser: fences, prose, trailing commas, truncation; and its promises."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_sim.models.base import BadModelReply
from loom_sim.models.json_repair import parse_for_schema, parse_json


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("[1, 2, 3]", [1, 2, 3]),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Sure! Here it is:\n```\n{"a": [1, 2]}\n```\nAnything else?', {"a": [1, 2]}),
        (
            'The verdict is {"score": 4, "why": "consistent"} as requested.',
            {"score": 4, "why": "consistent"},
        ),
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ('{"text": "a } and a { inside"} trailing', {"text": "a } and a { inside"}),
        ('{"q": "she said \\"hi\\" {"}', {"q": 'she said "hi" {'}),
        ('I think {maybe} so. {"real": true}', {"real": True}),
        ('note [1] first: {"k": "v"}', [1]),
    ],
)
def test_finds_the_json(text, expected):
    assert parse_json(text) == expected


def test_prefer_object_skips_an_earlier_array():
    text = 'note [1] first: {"k": "v"}'
    assert parse_json(text, prefer_object=True) == {"k": "v"}
    assert parse_json("[1, 2]", prefer_object=True) == [1, 2]  # no object at all: the array


def test_parse_for_schema_returns_none_instead_of_raising():
    schema = {"type": "object", "properties": {"k": {"type": "string"}}}
    assert parse_for_schema('see [1]: {"k": "v"}', schema) == {"k": "v"}
    assert parse_for_schema("no json at all", schema) is None


def test_a_truncated_outer_object_wins_over_complete_inner_values():
    assert parse_json('{"a": [1, 2], "b": {"c": 3}, "d": ') == {"a": [1, 2], "b": {"c": 3}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "hel', {"a": "hel"}),
        ('{"a": 1, "b": ', {"a": 1}),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a": 1, "b":', {"a": 1}),
        ('{"a": 1,', {"a": 1}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": {"b": {"c": "deep', {"a": {"b": {"c": "deep"}}}),
        ('{"a": 1.', {"a": 1}),
        ('{"a": 1, "b": tru', {"a": 1}),
        ('{"a": "x\\u00', {"a": "x"}),
        ('{"a": "x\\', {"a": "x"}),
        ('```json\n{"scores": [4, 5', {"scores": [4, 5]}),
    ],
)
def test_repairs_truncation(text, expected):
    assert parse_json(text) == expected


@pytest.mark.parametrize(
    "text", ["", "no json here", "I think {maybe not", "[oops", None, "```\n```"]
)
def test_nothing_parses(text):
    with pytest.raises(BadModelReply) as caught:
        parse_json(text, model="openai/gpt-4.1")
    message = str(caught.value)
    assert "openai/gpt-4.1" in message
    assert "\n" not in message


def test_excerpt_is_short():
    with pytest.raises(BadModelReply) as caught:
        parse_json("words " * 500)
    assert len(str(caught.value)) < 300


# ─── properties ─────────────────────────────────────────────────────────────

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=25,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=6)
# Prose as models write it around JSON: words and punctuation, no brackets of its own.
prose = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_characters="{}[]`", exclude_categories=("Cs", "Cc")
    ),
    max_size=40,
)
wrappers = st.sampled_from(
    [
        "{before}{json}{after}",
        "{before}\n```json\n{json}\n```\n{after}",
        "{before}```\n{json}\n```{after}",
        "{before}\n\n{json}",
        "{json}\n\n{after}",
    ]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    obj=json_objects, before=prose, after=prose, wrapper=wrappers, indent=st.sampled_from([None, 2])
)
def test_any_object_wrapped_in_prose_or_fences_parses_back(obj, before, after, wrapper, indent):
    dumped = json.dumps(obj, indent=indent, ensure_ascii=False)
    text = wrapper.format(before=before, json=dumped, after=after)
    assert parse_json(text) == obj


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(obj=json_values, cut=st.integers(min_value=0, max_value=10_000))
def test_truncated_dumps_parse_or_raise_bad_model_reply(obj, cut):
    dumped = json.dumps(obj)
    text = dumped[: cut % (len(dumped) + 1)]
    try:
        parse_json(text)
    except BadModelReply:
        pass


@settings(max_examples=200)
@given(obj=json_objects.filter(bool), cut=st.integers(min_value=1, max_value=10_000))
def test_truncated_objects_yield_an_object(obj, cut):
    dumped = json.dumps(obj)
    text = dumped[: max(1, cut % (len(dumped) + 1))]
    assert isinstance(parse_json(text), dict)


@settings(max_examples=200)
@given(text=st.text(max_size=200))
def test_arbitrary_text_never_raises_anything_else(text):
    try:
        parse_json(text)
    except BadModelReply:
        pass


def test_a_reply_encoded_twice_gives_the_value_inside():
    """`"{}"` is a JSON string holding an object: the object is what was asked for (found by
    the property test above with a quote for prose on both sides)."""
    assert parse_json('"{}"') == {}
    assert parse_json('"{\\"a\\": 1}"') == {"a": 1}
    assert parse_json('"plain words"') == "plain words"
