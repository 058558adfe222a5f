"""canonical_json is RFC 8785: the fast path must agree byte for byte with the reference."""

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.hashing import canonical_json, sha256_of

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


def test_unsafe_integers_are_refused_like_the_reference():
    import pytest

    with pytest.raises(ValueError, match="send larger integers as strings"):
        canonical_json({"n": 2**60})


def test_a_digest_tree_hash_follows_its_documented_rule():
    import hashlib

    from compiler.hashing import sha256_of_digested

    long = "x" * 64 + " 𝄞"
    value = {"text": long, "short": "é𝄞", "big": 2**60, "f": 0.5, "items": [long, 1, None, True]}
    reduced = {
        "text": "sha256:" + hashlib.sha256(long.encode()).hexdigest(),
        "short": "é𝄞",
        "big": str(2**60),
        "f": 0.5,
        "items": ["sha256:" + hashlib.sha256(long.encode()).hexdigest(), 1, None, True],
    }
    expected = "sha256:" + hashlib.sha256(rfc8785.dumps(reduced)).hexdigest()
    assert sha256_of_digested(value) == expected
    without_float = {k: v for k, v in value.items() if k != "f"}
    reduced.pop("f")
    assert sha256_of_digested(without_float) == (
        "sha256:" + hashlib.sha256(rfc8785.dumps(reduced)).hexdigest()
    )


def test_top_level_numbers_and_number_like_strings():
    for value in (1.5, -2, 10**20 // 10**5, "1,2.5", [":1e5"], {"a": "[1.0"}):
        assert canonical_json(value) == rfc8785.dumps(value)
