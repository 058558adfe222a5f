"""Canonical JSON (RFC 8785) and the sha256 digests every Forge hash is made of.

`sha256_of(value)` hashes the RFC 8785 canonical JSON of a value. `sha256_of_digested(value)`
hashes the RFC 8785 canonical JSON of the value's digest tree (long strings replaced by their
sha256), for values that are mostly long text; see `digested_json` for the exact rule.
"""

import hashlib
import json
import re
from functools import partial
from itertools import chain, compress, islice, repeat
from operator import itemgetter
from typing import Any, NoReturn

import rfc8785
from pydantic import BaseModel, TypeAdapter

# In compact JSON a number starts right after '[', ':' or ','. A float then shows '.', 'e' or
# 'E' after its digits; an integer of 16+ digits may exceed 2**53. A string that merely looks
# like this (",1.5") only sends the value to the exact encoder: slower, never wrong.
_NEEDS_FULL = re.compile(r"[\[:,]-?\d+(?:[.eE]|\d{15})")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def canonical_json(value: Any) -> bytes:
    """Return the RFC 8785 canonical encoding of a JSON value or a pydantic model.

    The `rfc8785` package is exact but pure Python. For values whose only numbers are safe
    integers (below 16 digits) and whose text stays in the Basic Multilingual Plane, RFC 8785
    output is exactly what the C `json` encoder writes with sorted keys and no whitespace
    (UTF-16 and code-point key order agree in the BMP; string escapes are the same). That is
    checked with two regex searches and everything else goes through `rfc8785`; a property test
    holds the two equal.

    An integer of magnitude 2**53 or more has no RFC 8785 form: it raises a ValueError that
    names it and says to send such integers as strings. Other values JSON cannot carry (NaN,
    infinities, non-string keys, other types) raise `rfc8785`'s own errors.
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError):
        return _exact(value)  # raises the package's precise error for bad values
    if not text.isascii() and _ASTRAL.search(text):
        return _exact(value)
    if (text[0] in "-0123456789" or _NEEDS_FULL.search(text)) and not _safe_numbers(value):
        return _exact(value)
    return text.encode("utf-8")


def _exact(value: Any) -> bytes:
    """`rfc8785.dumps`, with an integer it cannot encode reported as what to do about it."""
    try:
        return rfc8785.dumps(value)
    except ValueError:  # IntegerDomainError, or str() refusing a gigantic integer on the way
        big = first_unsafe_int(value)
        if big is None:
            raise
        raise ValueError(unsafe_integer_message(big)) from None


_SAFE_INT = 2**53


def unsafe_integer_message(n: int) -> str:
    """Why an integer of magnitude 2**53 or more cannot be hashed, and what to send instead."""
    shown = str(n) if n.bit_length() <= 256 else f"of {n.bit_length()} bits"
    return (
        f"integer {shown} cannot be canonicalized: RFC 8785 JSON holds integers only up to "
        "2**53 - 1 in magnitude (what an IEEE 754 double represents exactly); send such "
        "integers as strings"
    )


def first_unsafe_int(value: Any) -> int | None:
    """The first integer in a JSON value that RFC 8785 cannot hold (2**53 or more in magnitude)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if not -_SAFE_INT < item < _SAFE_INT:
                return int(item)
    return None


def _safe_numbers(value: Any) -> bool:
    """True when every number in `value` is an integer below 2**53 (no float anywhere).

    Run only when the text scan saw something number-like, which strings can look like too
    (a digest "sha256:1234e9..."): the walk settles it by type instead of by text.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is float:
            return False
        elif kind is int and not -_SAFE_INT < item < _SAFE_INT:
            return False
    return True


def sha256_of(value: Any) -> str:
    """Return `sha256:<hex>` over the canonical JSON of `value`."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def sha256_text(text: str) -> str:
    """Return `sha256:<hex>` over UTF-8 text (frozen code, adapter sources)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- digest trees

DIGEST_MIN_LEN = 64
# len("sha256:") + 64 hex digits: a string's digest is this long. A min_len above it would let
# a short string that spells a digest stand for the long string it is the digest of.
MAX_DIGEST_MIN_LEN = 71


def sha256_of_digested(value: Any, *, min_len: int = DIGEST_MIN_LEN) -> str:
    """Return `sha256:<hex>` over `digested_json(value, min_len=min_len)`."""
    return "sha256:" + hashlib.sha256(digested_json(value, min_len=min_len)).hexdigest()


def digested_json(
    value: Any, *, min_len: int = DIGEST_MIN_LEN, digests: dict[str, str] | None = None
) -> bytes:
    """The RFC 8785 canonical JSON of the digest tree of `value` (a JSON value or a model).

    The rule, for any language: take the JSON value (a pydantic model as
    `model_dump(mode="json")`); replace every string of `min_len` or more characters, object
    member names included, by `"sha256:" + hex(sha256(its UTF-8 bytes))` (lowercase hex);
    encode the result as RFC 8785 canonical JSON. Characters are Unicode code points (Python's
    `len`; not UTF-16 units, not bytes). Every string is treated alike, whatever it holds: a
    string that already is a digest (71 characters) is digested again.

    Long text (prompts, evidence summaries) then costs one hashlib call instead of its JSON
    escaping, and the canonical encoding is of a much smaller value. The hash stays
    collision-resistant: every string of `min_len` (at most 71) or more characters, which is
    every string of a digest's length, is replaced, so a string left as it is can never spell
    a replacement, and two values with equal digest trees are equal unless sha256 collides.

    Numbers follow RFC 8785: integers up to 2**53 - 1 in magnitude (larger raise a ValueError
    that names them and says to send them as strings), floats in ECMAScript form (NaN and the
    infinities raise). `digests`, an initially empty dict passed to several calls (the hashes of
    one compile), lets them hash each repeated short-long string (an id, a digest) once.

    How, held equal to `rfc8785.dumps` of the digest tree by property tests: one walk builds
    the tree with every object's members in sorted order, hashing the long strings with hashlib
    (a list of objects is done column by column, in C loops); pydantic's JSON encoder (Rust)
    then writes it, which for strings, integers, booleans and nulls is RFC 8785's text. A float
    goes in as a placeholder string no tree can hold and its RFC 8785 text replaces it after.
    Member names are sorted by code point, which is UTF-16 order unless a name holds a
    character beyond U+FFFF: then the walk runs again, sorting by UTF-16.
    """
    if not 0 <= min_len <= MAX_DIGEST_MIN_LEN:
        raise ValueError(
            f"min_len {min_len}: must be from 0 to {MAX_DIGEST_MIN_LEN} (a digest's length)"
        )
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    memo = {} if digests is None else digests
    walk = _DigestTree(min_len, memo, utf16=False)
    tree = walk.value(value)
    if walk.astral:  # code-point order is not UTF-16 order: sort again, by UTF-16
        walk = _DigestTree(min_len, memo, utf16=True)
        tree = walk.value(value)
    out = _JSON(tree)
    if walk.numbers:
        out = _NUMBER.sub(lambda m: walk.numbers[int(m[1])], out)
    return out


_JSON = TypeAdapter(Any).dump_json  # for trees of str, int, bool, None, list and dict only
# A float's placeholder: no string of a digest tree is longer than a digest (71 characters).
_MARK = "#" * (MAX_DIGEST_MIN_LEN + 1)
_NUMBER = re.compile(b'"' + _MARK.encode() + rb'(\d+)"')
# Strings longer than this are hashed without the memo: they are text, which seldom repeats,
# and hashing one as a dict key would cost about as much as its sha256.
_MEMO_MAX = 128
_NONE = type(None)
_SCALARS = frozenset({int, bool, _NONE})
_STR = frozenset({str})
_DICT = frozenset({dict})
_INT = frozenset({int})


def _utf16(pair: tuple[str, Any]) -> bytes:
    return pair[0].encode("utf-16-be")


class _DigestTree:
    """One walk of `digested_json`: the digest tree, every object's members sorted.

    Floats are left out of the tree as placeholders; `numbers` holds their RFC 8785 text.
    """

    __slots__ = ("astral", "memo", "min_len", "numbers", "sort", "utf16")

    def __init__(self, min_len: int, memo: dict[str, str], *, utf16: bool) -> None:
        self.min_len = min_len
        self.memo = memo
        self.utf16 = utf16
        self.sort = partial(sorted, key=_utf16) if utf16 else sorted
        self.numbers: list[bytes] = []
        self.astral = False  # a member name holds a character beyond U+FFFF

    def value(self, x: Any) -> Any:
        kind = type(x)
        if kind is str:
            return x if len(x) < self.min_len else self.digest(x)
        if kind is dict:
            return self.object(x)
        if kind is list:
            return self.array(x)
        if kind is int:
            return x if -_SAFE_INT < x < _SAFE_INT else _unsafe(x)
        if kind is bool or x is None:
            return x
        return self.other(x)

    def other(self, x: Any) -> Any:
        """A float, or a subclass of a JSON type (an Enum's value, a tuple); else TypeError."""
        if isinstance(x, float):
            if x.is_integer() and -_SAFE_INT < x < _SAFE_INT:
                return int(x)  # RFC 8785 prints an integral double as that integer
            self.numbers.append(_exact(float(x)))  # raises for NaN and the infinities
            return f"{_MARK}{len(self.numbers) - 1}"
        if isinstance(x, str):
            return self.value(str.__str__(x))  # the string itself, not an Enum's name
        if isinstance(x, int):
            return self.value(int(x))
        if isinstance(x, dict):
            return self.object(dict(x))
        if isinstance(x, list | tuple):
            return self.array(list(x))
        raise TypeError(f"{type(x).__name__} is not JSON: {x!r:.80}")

    def digest(self, text: str) -> str:
        """`"sha256:" + hex(sha256(text))`, through the memo for short-long strings."""
        if len(text) > _MEMO_MAX:
            return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        found = self.memo.get(text)
        if found is None:
            found = self.memo[text] = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        return found

    def name(self, key: Any) -> str:
        if type(key) is not str:
            raise TypeError(f"object member names must be strings, not {key!r}")
        if len(key) >= self.min_len:
            return self.digest(key)
        if not key.isascii() and _ASTRAL.search(key):
            self.astral = True
        return key

    def object(self, obj: dict[Any, Any]) -> dict[str, Any]:
        out = {self.name(k): self.value(v) for k, v in obj.items()}
        if len(out) < 2:
            return out
        return dict(self.sort(out.items()))

    def names(self, keys: list[Any]) -> list[str]:
        if set(map(type, keys)) - _STR:
            bad = next(k for k in keys if type(k) is not str)
            raise TypeError(f"object member names must be strings, not {bad!r}")
        joined = "".join(keys)
        if not joined.isascii() and _ASTRAL.search(joined):
            self.astral = True  # (a digested name is ASCII: only names left as they are count)
        return self.strings(keys)

    def array(self, items: list[Any]) -> list[Any]:
        kinds = set(map(type, items))
        if kinds == _STR:
            return self.strings(items)
        if kinds <= _SCALARS:
            if int in kinds:
                ints = items if kinds == _INT else [i for i in items if type(i) is int]
                low, high = min(ints), max(ints)
                if low <= -_SAFE_INT or high >= _SAFE_INT:
                    _unsafe(low if low <= -_SAFE_INT else high)
            return items
        if kinds == _DICT and len(items) > 1:
            return self.objects(items)
        return [self.value(i) for i in items]

    def strings(self, texts: list[str]) -> list[str]:
        """A list of strings, the long ones digested (found by C loops; a copy only if any)."""
        if not texts or max(map(len, texts)) < self.min_len:
            return texts
        out = texts.copy()
        for i in compress(range(len(out)), map(self.min_len.__le__, map(len, out))):
            out[i] = self.digest(out[i])
        return out

    def objects(self, rows: list[dict[Any, Any]]) -> list[dict[str, Any]]:
        """A list of objects, done column by column: few Python steps for many objects."""
        keys = list(rows[0])
        sizes = list(map(len, rows))
        if set(sizes) == {len(keys)}:
            if not keys:
                return [{} for _ in rows]
            try:  # equal sizes, and every row has every name: the same names
                cells = [list(map(itemgetter(k), rows)) for k in keys]
            except KeyError:
                pass
            else:
                named = sorted(
                    zip(self.names(keys), map(self.array, cells), strict=True),
                    key=_utf16 if self.utf16 else None,
                )
                names = [n for n, _ in named]
                columns = [c for _, c in named]
                return list(map(dict, map(zip, repeat(names), zip(*columns, strict=True))))
        # Different names: all names in one column, all values in another, each row then
        # sorted from its slice of both.
        names_in = iter(self.names(list(chain.from_iterable(rows))))
        values_in = iter(self.array(list(chain.from_iterable(map(dict.values, rows)))))
        pairs = map(
            zip, map(islice, repeat(names_in), sizes), map(islice, repeat(values_in), sizes)
        )
        return list(map(dict, map(self.sort, pairs)))


def _unsafe(n: int) -> NoReturn:
    raise ValueError(unsafe_integer_message(n))
