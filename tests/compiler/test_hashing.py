"""canonical_json is RFC 8785: the fast path must agree byte for byte with the reference.

So must digested_json: RFC 8785 of the digest tree, computed here by the reference encoder
from a reduction written again in a few lines.
"""

import enum
import hashlib
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.hashing import (
    canonical_json,
    digested_json,
    sha256_of,
    sha256_of_digested,
)

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=1500, deadline=None)
@given(_json)
def test_canonical_json_equals_the_reference_encoder(value):
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
            sha256_of_digested(value)
        with pytest.raises(ValueError, match=rf"^integer {n} cannot be canonicalized"):
            digested_json([{"a": 1, "b": "x"}, {"a": n, "b": "y"}])  # the column path


def test_the_largest_safe_integers_still_hash_and_a_huge_one_is_named_by_size():
    edge = {"hi": 2**53 - 1, "lo": -(2**53) + 1}
    assert canonical_json(edge) == rfc8785.dumps(edge)
    assert digested_json(edge) == rfc8785.dumps(edge)
    with pytest.raises(ValueError, match="integer of 3322 bits cannot be canonicalized"):
        canonical_json([10**1000])
    with pytest.raises(rfc8785.FloatDomainError):  # other refusals keep the package's errors
        canonical_json(float("nan"))


def test_top_level_numbers_and_number_like_strings():
    for value in (1.5, -2, 10**20 // 10**5, "1,2.5", [":1e5"], {"a": "[1.0"}):
        assert canonical_json(value) == rfc8785.dumps(value)


# ---------------------------------------------------------------- digest trees


def reduced(value: Any, min_len: int) -> Any:
    """The digest tree by the rule's own words (the reference the fast walk must equal)."""
    if isinstance(value, str):
        if len(value) < min_len:
            return value
        return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()
    if isinstance(value, dict):
        return {reduced(k, min_len): reduced(v, min_len) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [reduced(v, min_len) for v in value]
    return value


def expected(value: Any, min_len: int = 64) -> bytes:
    return rfc8785.dumps(reduced(value, min_len))


_texts = st.text(max_size=12) | st.text(min_size=60, max_size=90) | st.just("é𝄞\n\x00\u2028")


@st.composite
def _tables(draw, inner):
    """Lists of objects with one set of member names, in varying order (the column path)."""
    names = draw(st.lists(_texts, min_size=1, max_size=4, unique=True))
    rows = []
    for _ in range(draw(st.integers(2, 5))):
        cells = {n: draw(inner) for n in draw(st.permutations(names))}
        rows.append(cells)
    return rows


_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _texts
)
_trees = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(_texts, inner, max_size=5) | _tables(inner)
    ),
    max_leaves=40,
)


@settings(max_examples=1500, deadline=None)
@given(_trees, st.sampled_from([0, 1, 4, 64, 71]))
def test_digested_json_equals_the_reference_on_the_digest_tree(value, min_len):
    assert digested_json(value, min_len=min_len) == expected(value, min_len)


def test_the_rule_on_a_known_value():
    long = "x" * 63 + "𝄞"  # 64 code points (65 UTF-16 units, 67 bytes): digested
    short = "y" * 63
    value = {long: [long, short, 0.5, 1.0, 1e21, 2**53 - 1, None, True], "é": "é𝄞", "a": 1e-7}
    digest = "sha256:" + hashlib.sha256(long.encode()).hexdigest()
    tree = {digest: [digest, short, 0.5, 1, 1e21, 2**53 - 1, None, True], "é": "é𝄞", "a": 1e-7}
    assert digested_json(value) == rfc8785.dumps(tree)
    assert b"1e+21" in digested_json(value) and b"1e-7" in digested_json(value)
    assert sha256_of_digested(value) == "sha256:" + hashlib.sha256(rfc8785.dumps(tree)).hexdigest()


def test_a_string_spelling_a_digest_does_not_stand_for_what_it_digests():
    long = "z" * 500
    spelled = "sha256:" + hashlib.sha256(long.encode()).hexdigest()
    assert sha256_of_digested({"t": long}) != sha256_of_digested({"t": spelled})
    # the placeholder a float travels as is a long string like any other
    mark = "#" * 72 + "0"
    assert digested_json([mark, 0.25]) == expected([mark, 0.25])


def test_member_names_beyond_the_bmp_are_sorted_by_utf16():
    value = {"\U0001f600": 1, "\ufb33": 2, "a": [{"\U0001f600": "x" * 70, "\ufb33": 0.5}] * 2}
    assert digested_json(value) == expected(value)


def test_subclasses_and_tuples_are_their_json_values():
    class Colour(str, enum.Enum):  # noqa: UP042 - str() of it is "Colour.RED", not its value
        RED = "red"

    class Level(enum.IntEnum):
        HIGH = 3

    value = {"c": Colour.RED, "l": Level.HIGH, "t": (1, "x" * 80)}
    assert digested_json(value) == expected({"c": "red", "l": 3, "t": [1, "x" * 80]})


def test_what_json_cannot_say_is_refused():
    with pytest.raises(TypeError, match="member names must be strings"):
        digested_json({1: "a"})
    with pytest.raises(TypeError, match="member names must be strings"):
        digested_json([{1: "a", "b": 2}, {1: "c", "b": 3}])
    with pytest.raises(TypeError, match="set is not JSON"):
        digested_json({"s": {1, 2}})
    with pytest.raises(rfc8785.FloatDomainError):
        digested_json([float("inf")])


def test_min_len_is_at_most_a_digest_long_and_a_shared_memo_changes_nothing():
    with pytest.raises(ValueError, match="min_len 72"):
        digested_json("a", min_len=72)
    memo: dict[str, str] = {}
    value = {"a": ["q" * 100] * 3, "b": "q" * 100, "c": "r" * 200}
    assert digested_json(value, digests=memo) == digested_json(value) == expected(value)
    assert digested_json(value, digests=memo) == expected(value)  # from the memo
    assert digested_json(value, min_len=8, digests=memo) == expected(value, 8)
    assert set(memo) == {"q" * 100}  # text longer than 128 characters is not memoized
