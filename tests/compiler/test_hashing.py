"""canonical_json is RFC 8785: the fast path must agree byte for byte with the reference.

The fast path is orjson with sorted keys; floats and characters beyond U+FFFF go to rfc8785.
"""

import datetime
import enum

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.hashing import canonical_json, sha256_of

_texts = st.text() | st.just('é𝄞\n\x00\u2028\x7f"\\/') | st.sampled_from(["\U0001f600", "\ufb33"])
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _texts
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_texts, inner, max_size=6),
    max_leaves=40,
)


@settings(max_examples=3000, deadline=None)
@given(_json)
def test_canonical_json_equals_the_reference_encoder(value):
    # astral and BMP member names, escapes, floats deep in values: the fast path and the exact
    # one must both come out as the reference
    assert canonical_json(value) == rfc8785.dumps(value)


def test_known_rfc8785_vectors():
    # Key order by UTF-16 code units, ECMAScript number forms, minimal escapes.
    value = {"\U0001f600": 1, "\ufb33": 2, "b": [1.0, 1e21, 1e-7, -0.0], "a": "\u2028\n\x1f"}
    assert canonical_json(value) == rfc8785.dumps(value)
    assert canonical_json({"b": 1, "a": [True, None]}) == b'{"a":[true,null],"b":1}'


def test_whitespace_and_key_order_do_not_change_the_hash():
    assert sha256_of({"a": 1, "b": [1, 2]}) == sha256_of({"b": [1, 2], "a": 1})
    assert sha256_of({"a": 1}) != sha256_of({"a": 2})


def test_numbers_inside_strings_and_keys_take_the_fast_path_correctly():
    value = {"v": 'x"1.5\\', "1e5": [3, "2.0e7"], "n": 9007199254740991}
    assert canonical_json(value) == rfc8785.dumps(value)


@pytest.mark.parametrize("n", [2**53, -(2**53), 2**60, 10**17, -(10**30)])
def test_unsafe_integers_are_refused_with_what_to_do(n):
    for value in ({"n": n}, [1, {"a": [n]}], n):
        with pytest.raises(
            ValueError,
            match=rf"^integer {n} cannot be canonicalized: .*"
            r"send such integers as strings$",
        ):
            canonical_json(value)
        with pytest.raises(ValueError, match=rf"^integer {n} cannot be canonicalized"):
            sha256_of([{"a": 1, "b": "x"}, {"a": n, "b": "y"}])


def test_the_largest_safe_integers_still_hash_and_a_huge_one_is_named_by_size():
    edge = {"hi": 2**53 - 1, "lo": -(2**53) + 1}
    assert canonical_json(edge) == rfc8785.dumps(edge)
    with pytest.raises(ValueError, match="integer of 3322 bits cannot be canonicalized"):
        canonical_json([10**1000])
    with pytest.raises(rfc8785.FloatDomainError):  # other refusals keep the package's errors
        canonical_json(float("nan"))


def test_top_level_numbers_and_number_like_strings():
    for value in (1.5, -2, 10**20 // 10**5, "1,2.5", [":1e5"], {"a": "[1.0"}):
        assert canonical_json(value) == rfc8785.dumps(value)


def test_member_names_beyond_the_bmp_are_sorted_by_utf16():
    # U+1F600 is D83D DE00 in UTF-16, before U+FB33; by code point it comes after
    value = {"\U0001f600": 1, "\ufb33": 2, "a": [{"\U0001f600": "x", "\ufb33": 0.5}]}
    assert canonical_json(value) == rfc8785.dumps(value)
    assert canonical_json(value).index("\U0001f600".encode()) < canonical_json(value).index(
        "\ufb33".encode()
    )


def test_a_float_anywhere_takes_the_exact_path():
    value = {"a": [1, {"b": [1.0, 1e21, 123456789012345680000.0, -0.0, 5e-324]}]}
    assert canonical_json(value) == rfc8785.dumps(value)
    assert b"[1,1e+21,123456789012345680000,0,5e-324]" in canonical_json(value)


def test_subclasses_and_tuples_are_their_json_values():
    class Colour(str, enum.Enum):  # noqa: UP042 - str() of it is "Colour.RED", not its value
        RED = "red"

    class Level(enum.IntEnum):
        HIGH = 3

    value = {"c": Colour.RED, "l": Level.HIGH, "t": (1, "x")}
    assert canonical_json(value) == b'{"c":"red","l":3,"t":[1,"x"]}'


def test_what_json_cannot_say_is_refused():
    with pytest.raises(rfc8785.CanonicalizationError, match="keys must be strings"):
        canonical_json({"a": [{1: "a"}]})
    with pytest.raises(rfc8785.CanonicalizationError, match="unsupported type"):
        canonical_json({"s": {1, 2}})
    with pytest.raises(rfc8785.FloatDomainError):
        canonical_json([float("inf")])
    with pytest.raises(rfc8785.CanonicalizationError, match="unsupported type"):
        canonical_json({"when": datetime.datetime(2026, 1, 1)})
    nan = float("nan")
    for value in (nan, [None, nan], {"a": None, "b": [float("-inf")]}):  # orjson writes null
        with pytest.raises(rfc8785.FloatDomainError):
            canonical_json(value)
