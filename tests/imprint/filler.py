"""A model stand-in: fills a template from the template alone (tokens + constraint notes).

Every FILL token gets a value valid for its token; OPTIONAL tokens are filled or left as they
are at random; AUTO tokens are left for the system; `{ONE_OF}` gets one alternative (sometimes
kept inside the wrapper); maps get real keys; arrays get a number of elements the notes allow.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from compiler.imprint import ONE_OF, REF_CIRCULAR, REF_MAX_DEPTH, Token, parse_token
from compiler.imprint.unfilled import untouched

# Text the filler writes never starts with "{", so it is never mistaken for an unfilled token.
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="{"), max_size=12)
KEY_TEXT = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6).map(lambda s: "k" + s)
NOTE = re.compile(r"(?:at least (\d+)|at most (\d+)|(\d+)-(\d+)|exactly (\d+)) items")


def fill(
    draw: st.DrawFn, template: Any, notes: dict[str, str], path: str = "$", force: bool = False
) -> Any:
    """Fill `template` as a careful model would; `force` fills OPTIONAL tokens too."""
    if isinstance(template, str):
        return _fill_token(draw, template, force)
    if isinstance(template, list) and notes.get(path, "").startswith("a tuple"):
        return _fill_tuple(draw, template, notes, path, force)
    if isinstance(template, list):
        low, high, unique = _array_rules(notes.get(path, ""))
        count = draw(st.integers(low, high))
        items = []
        for _ in range(count):
            item = fill(draw, template[0], notes, f"{path}[*]", force)
            if untouched(item) or item == template[0]:
                # An element left as it was reads as "no element": a model that wants the
                # element fills it.
                item = fill(draw, template[0], notes, f"{path}[*]", True)
            items.append(item)
        if unique:
            seen: dict[str, Any] = {}
            for item in items:
                seen.setdefault(json.dumps(item, sort_keys=True), item)
            items = list(seen.values())
        return items
    if isinstance(template, dict):
        if set(template) == {ONE_OF}:
            return _fill_choice(draw, template[ONE_OF], notes, path, force)
        out: dict[str, Any] = {}
        for key, sub in template.items():
            token = parse_token(key)
            if token is not None and token.kind in ("KEY", "KEY_ENUM"):
                for _ in range(draw(st.integers(0, 2))):
                    out[_key_for(draw, token)] = fill(draw, sub, notes, f"{path}{{KEY}}", True)
            else:
                child = f"{path}.{key}" if key.isidentifier() else f'{path}["{key}"]'
                out[key] = fill(draw, sub, notes, child, force)
        return out
    return template


def _fill_tuple(
    draw: st.DrawFn, template: list[Any], notes: dict[str, str], path: str, force: bool
) -> list[Any]:
    """Positions in order: the required ones, then optionally more, each filled in full."""
    match = re.search(r"the first (\d+) required", notes[path])
    low = int(match.group(1)) if match else 0
    count = draw(st.integers(low, len(template)))
    return [fill(draw, template[i], notes, f"{path}[{i}]", True) for i in range(count)]


def _fill_choice(
    draw: st.DrawFn, alts: list[Any], notes: dict[str, str], path: str, force: bool
) -> Any:
    index = draw(st.integers(0, len(alts) - 1))
    chosen = fill(draw, alts[index], notes, f"{path}{ONE_OF}[{index}]", force)
    if chosen == alts[index] or untouched(chosen) or draw(st.booleans()):
        return chosen  # the documented form: the wrapper replaced by one filled alternative
    kept = list(alts)
    kept[index] = chosen
    return {ONE_OF: kept}  # also accepted: the wrapper kept, exactly one entry filled


def _array_rules(note: str) -> tuple[int, int, bool]:
    low, high = 0, 3
    match = NOTE.search(note)
    if match:
        at_least, at_most, lo, hi, exactly = match.groups()
        if at_least:
            low, high = int(at_least), int(at_least) + 2
        elif at_most:
            high = min(3, int(at_most))
        elif lo:
            low, high = int(lo), min(int(hi), int(lo) + 2)
        elif exactly:
            low = high = int(exactly)
    return low, high, "unique" in note


def _key_for(draw: st.DrawFn, token: Token) -> str:
    if token.kind == "KEY_ENUM":
        return draw(st.sampled_from(token.values))
    pattern = token.modifier("pattern")
    if pattern is not None:
        return draw(st.from_regex(pattern).filter(lambda s: not s.startswith("{")))
    return draw(KEY_TEXT)


def _fill_token(draw: st.DrawFn, text: str, force: bool) -> Any:
    if text in (REF_CIRCULAR, REF_MAX_DEPTH):
        return text  # a recursive part: left out (the filler does not recurse further)
    token = parse_token(text)
    if token is None or token.kind == "AUTO":
        return text
    if token.kind.startswith("OPTIONAL") and not force and draw(st.booleans()):
        return text  # optional: left unfilled
    if token.kind in ("FILL_ENUM", "OPTIONAL_ENUM"):
        return draw(st.sampled_from(token.values))
    return draw(value_for(token))


def value_for(token: Token) -> st.SearchStrategy[Any]:
    """Values valid for a (non-enum) token."""
    assert token.type is not None
    base = _BY_TYPE[token.type](token)
    return st.one_of(st.none(), base) if token.nullable else base


def _string(token: Token) -> st.SearchStrategy[Any]:
    fmt = token.modifier("format")
    low = int(token.modifier("min_length") or 0)
    high_text = token.modifier("max_length")
    high = int(high_text) if high_text is not None else None
    pattern = token.modifier("pattern")
    if fmt in _FORMATS:
        strategy = _FORMATS[fmt]
        if pattern is not None:
            strategy = strategy.filter(lambda s: re.search(pattern, s) is not None)
    elif pattern is not None:
        strategy = st.from_regex(pattern)
    else:
        strategy = st.text(
            st.characters(codec="utf-8", exclude_characters="{"),
            min_size=low,
            max_size=high if high is not None else max(low, 12),
        )
    return strategy.filter(
        lambda s: not s.startswith("{") and low <= len(s) and (high is None or len(s) <= high)
    )


def _integer(token: Token) -> st.SearchStrategy[Any]:
    lo, hi, xlo, xhi = token.bounds()
    low = None if lo is None else math.floor(lo) + 1 if xlo else math.ceil(lo)
    high = None if hi is None else math.ceil(hi) - 1 if xhi else math.floor(hi)
    width = {"int32": 2**31, "int64": 2**63}.get(token.modifier("format") or "")
    if width is not None:
        low = max(low, -width) if low is not None else -width
        high = min(high, width - 1) if high is not None else width - 1
    step_text = token.modifier("multiple_of")
    if step_text is None:
        return st.integers(low, high)
    step = int(step_text)
    k_low = None if low is None else -((-low) // step)
    k_high = None if high is None else high // step
    return st.integers(k_low, k_high).map(lambda k: k * step)


def _number(token: Token) -> st.SearchStrategy[Any]:
    lo, hi, xlo, xhi = token.bounds()
    step_text = token.modifier("multiple_of")
    if step_text is not None:
        step = float(step_text)
        exact = Fraction(step_text)
        k_low = None if lo is None else math.ceil(lo / step) + (1 if xlo else 0)
        k_high = None if hi is None else math.floor(hi / step) - (1 if xhi else 0)
        # k * step as the float nearest the exact decimal (0.7, never 0.7000000000000001):
        # steps are checked in exact decimal arithmetic.
        return st.integers(k_low, k_high).map(lambda k: float(k * exact))
    return st.floats(
        lo,
        hi,
        exclude_min=xlo and lo is not None,
        exclude_max=xhi and hi is not None,
        allow_nan=False,
        allow_infinity=False,
    )


_FORMATS: dict[str, st.SearchStrategy[str]] = {
    "uuid": st.uuids().map(str),
    "date-time": st.datetimes(timezones=st.just(datetime.UTC)).map(lambda d: d.isoformat()),
    "date": st.dates().map(lambda d: d.isoformat()),
    "email": st.from_regex(r"\A[a-z]{1,8}@[a-z]{1,8}\.[a-z]{2,3}\Z"),
    "ipv4": st.ip_addresses(v=4).map(str),
    "uri": st.from_regex(r"\Ahttps://[a-z]{1,8}\.example/[a-z]{0,8}\Z"),
}

_BY_TYPE: dict[str, Any] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": lambda t: st.booleans(),
    "null": lambda t: st.none(),
    "object": lambda t: st.dictionaries(KEY_TEXT, st.integers() | TEXT, max_size=2),
    "array": lambda t: st.lists(st.integers() | TEXT, max_size=2),
}
