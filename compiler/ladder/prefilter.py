"""Whether a text or a JSON value may hold a credential: one RE2 pass before the guard's scan.

The guard (L3) calls Python's `re` and the credential rules per string, about 10 µs each, so a
file of a million strings takes seconds to scan although almost none of it could match. This
says, in one linear RE2 pass over many strings joined, whether any of them could: every
credential rule (`secrets/`, each in multi-line mode, so that `^` and `$` still match where a
string starts and ends) and every credential pattern of `detectors.PATTERNS` (lookarounds
dropped and bounds opened, which only widens them). When it says no, the guard with the
boundary detectors would find nothing in those strings; when it says yes, the guard decides.

What only a field name reveals (a random value under `password`, an AWS secret key under
`aws_secret_access_key`) and JSON text inside a string (which the guard decodes, escapes and
all) are not visible to a pass over the text: a value under such a field, or a string that
starts like JSON, always counts as a maybe. Derived from the rules and patterns as they are,
so a detector added later is covered; a pattern RE2 cannot compile makes every text a maybe.
"""

import re
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any

import re2

from compiler.ladder.detectors import HINTS, PATTERNS
from compiler.ladder.secrets.engine import ALL_RULES, FORGE_END, GITLEAKS_END
from compiler.ladder.secrets.mask import BOUNDARY_DETECTORS

__all__ = ["JSON_TEXT", "CHUNK", "may_hold", "may_hold_value", "secret_field"]

JSON_TEXT = re.compile(r"\s*[\[{]")  # what the guard decodes as JSON text (guard._JSON_TEXT)
CHUNK = 64 * 1024  # characters of lines joined per RE2 pass: a maybe costs the guard this much
_STRINGS = 4096  # strings of a JSON value joined per RE2 pass
_JSON_START = frozenset("[{ \t\r\n")
_LOOKAROUND = re.compile(r"\(\?<?[!=][^()]*\)")
_BOUNDED = re.compile(r"\{(\d+),\d+\}")
_MAX_MEM = 256 << 20


@cache
def _gate() -> Any:
    """The RE2 set of every credential rule and pattern; None if one cannot be compiled."""
    options = re2.Options()
    options.max_mem = _MAX_MEM
    gate = re2.Set.SearchSet(options)
    patterns = [PATTERNS[k] for k in PATTERNS if k in BOUNDARY_DETECTORS]
    try:
        for rule in ALL_RULES:
            gate.Add("(?m)" + rule.regex.replace(GITLEAKS_END, FORGE_END))
        for pattern in patterns:
            gate.Add(_BOUNDED.sub(r"{\1,}", _LOOKAROUND.sub("", pattern)))
        gate.Compile()
    except re2.error:
        return None
    return gate


def may_hold(text: str) -> bool:
    """Whether the guard's credential detectors could find anything in `text` (a line each)."""
    gate = _gate()
    return gate is None or bool(gate.Match(text))


@lru_cache(maxsize=4096)  # a document repeats its field names
def secret_field(name: str) -> bool:
    """Whether a field (or column) name makes the guard judge its values as secrets."""
    lowered = name.lower()
    return bool(HINTS["secret_field"].search(name)) or ("aws" in lowered and "secret" in lowered)


def _json_text(text: str) -> bool:
    return text[:1] in _JSON_START and JSON_TEXT.match(text) is not None


def may_hold_value(value: Any) -> bool:
    """Whether the guard's credential detectors could find anything in a JSON value."""
    if isinstance(value, str):
        return _json_text(value) or may_hold(value)
    if not isinstance(value, dict | list):
        return False  # a number, a boolean or null: no credential detector reads one
    texts: list[str] = []
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, current = stack.pop()
        if isinstance(current, dict):
            members: Iterable[tuple[str | None, Any]] = current.items()
            names = list(current)
            if any(_json_text(n) for n in names):
                return True
            texts += names
        else:
            members = ((key, v) for v in current)  # an array's items share its field name
        for name, item in members:
            if isinstance(item, str):
                if _json_text(item) or (name is not None and secret_field(name)):
                    return True
                texts.append(item)
            elif isinstance(item, dict | list):
                stack.append((name, item))
        if len(texts) >= _STRINGS:
            if may_hold("\n".join(texts)):
                return True
            texts = []
    return bool(texts) and may_hold("\n".join(texts))
