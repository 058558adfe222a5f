"""The token grammar: rendering, parsing, escaping, ranges, malformed tokens."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler.imprint import (
    REF_CIRCULAR,
    TemplateError,
    Token,
    looks_like_token,
    parse_token,
    schema_to_template,
)
from compiler.imprint.tokens import parse_range


@pytest.mark.parametrize(
    ("text", "kind", "type_", "nullable", "mods"),
    [
        ("{FILL|string}", "FILL", "string", False, ()),
        ("{OPTIONAL|integer?}", "OPTIONAL", "integer", True, ()),
        ("{AUTO|string|format:uuid}", "AUTO", "string", False, (("format", "uuid"),)),
        (
            "{FILL|number|range:1-100|default:5}",
            "FILL",
            "number",
            False,
            (("range", "1-100"), ("default", "5")),
        ),
    ],
)
def test_typed_tokens_parse_and_render_back(text, kind, type_, nullable, mods) -> None:
    token = parse_token(text)
    assert token == Token(kind=kind, type=type_, nullable=nullable, modifiers=mods)
    assert str(token) == text


def test_enum_tokens_keep_their_values_in_order() -> None:
    token = parse_token("{FILL_ENUM|active|paused|archived}")
    assert token == Token(kind="FILL_ENUM", values=("active", "paused", "archived"))
    assert str(parse_token("{OPTIONAL_ENUM|none|preferred|required}")) == (
        "{OPTIONAL_ENUM|none|preferred|required}"
    )


def test_a_pipe_inside_an_enum_value_is_escaped() -> None:
    token = Token(kind="FILL_ENUM", values=("a|b", "c\\d", ""))
    text = str(token)
    assert text == "{FILL_ENUM|a\\|b|c\\\\d|}"
    assert parse_token(text) == token


@given(
    values=st.lists(st.text(max_size=8), min_size=1, max_size=5),
    pattern=st.text(max_size=12),
    nullable=st.booleans(),
)
def test_every_token_parses_back_to_what_was_rendered(values, pattern, nullable) -> None:
    enum = Token(kind="OPTIONAL_ENUM", values=tuple(values))
    assert parse_token(str(enum)) == enum
    typed = Token(kind="FILL", type="string", nullable=nullable, modifiers=(("pattern", pattern),))
    assert parse_token(str(typed)) == typed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1-100", (1, 100)),
        ("-5-10", (-5, 10)),
        ("-100", (None, 100)),
        ("--5", (None, -5)),
        ("0-", (0, None)),
        ("0.5-99.5", (0.5, 99.5)),
        ("1e-05-2", (1e-05, 2)),
        ("-", (None, None)),
        ("..100", (None, 100)),
        ("..-1", (None, -1)),
        ("..-1.5e3", (None, -1500.0)),
        ("1..100", (1, 100)),
        ("-5..", (-5, None)),
    ],
)
def test_ranges_read_negative_numbers_and_open_ends(text, expected) -> None:
    assert parse_range(text) == expected


@pytest.mark.parametrize(
    ("schema", "token"),
    [
        ({"type": "integer", "maximum": -1}, "{FILL|integer|range:..-1}"),
        ({"type": "number", "maximum": 5}, "{FILL|number|range:..5}"),
        ({"type": "integer", "minimum": -5}, "{FILL|integer|range:-5-}"),
        ({"type": "integer", "minimum": -5, "maximum": -1}, "{FILL|integer|range:-5--1}"),
        ({"type": "number", "exclusiveMaximum": -1}, "{FILL|number|exclusive_range:..-1}"),
    ],
)
def test_an_open_minimum_is_written_so_it_cannot_read_as_a_negative_number(
    schema: dict[str, Any], token: str
) -> None:
    assert schema_to_template(schema) == token
    parsed = parse_token(token)
    assert parsed is not None and str(parsed) == token


def test_bounds_combine_inclusive_and_exclusive_ranges() -> None:
    token = parse_token("{FILL|number|range:0-|exclusive_range:-100}")
    assert token is not None
    assert token.bounds() == (0, 100, False, True)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{FILL|strin}", "unknown type 'strin'"),
        ("{FILL}", "needs a type"),
        ("{FILL|string|colour:red}", "unknown modifier"),
        ("{AUTO|text?}", "unknown type 'text'"),
    ],
)
def test_malformed_tokens_are_reported(text, says) -> None:
    with pytest.raises(TemplateError) as info:
        parse_token(text, path="$.x")
    assert info.value.reason == "token" and info.value.path == "$.x"
    assert says in info.value.problem


def test_bad_range_says_how_to_write_one() -> None:
    with pytest.raises(TemplateError, match="range:1-100"):
        parse_range("one-two")


@pytest.mark.parametrize("text", ["hello", "{not a token}", "{FILLING|string}", ""])
def test_ordinary_text_is_not_a_token(text) -> None:
    assert parse_token(text) is None
    assert not looks_like_token(text)


def test_markers_look_like_tokens_but_do_not_parse() -> None:
    assert looks_like_token(REF_CIRCULAR) and looks_like_token("{ONE_OF}")
    assert parse_token(REF_CIRCULAR) is None
    assert looks_like_token("{KEY|string}")
