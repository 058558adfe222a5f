r"""The pack's redaction rules: compiled once per rule list, applied with a sound shortcut.

Stage 7 redacts every evidence, memory and session block that fits its bucket, so a compile may
run each rule over a few hundred texts. Rules like `\bAKIA[0-9A-Z]{16}\b` or
`(?i)\b(?:api[_-]?key|secret|token|password)...` start with an assertion, which leaves `re`
nothing to skip ahead with: it tries the rule at every position of every text. But every match
of such a rule contains one of a few literal strings ("AKIA"; one of "api", "secret", "token",
"password"), and `str.__contains__` rules a text out far faster. So a text that contains none
of a rule's required literals is left as it is without running the rule; every other text goes
through `re.sub` as before. The shortcut never changes a result: it only skips a rule that
cannot match (tests/compiler/context/test_redaction.py holds the two equal).
"""

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from compiler.context.errors import ContextError
from schemas.context import ContextPack
from schemas.error_codes import ErrorCode

REDACTED = "[REDACTED]"

# CPython's regex parser is private (re._parser, re._constants): the shortcut reads it when it
# is there and is simply off when a Python moves it; results never depend on it.
_parser: Any
_constants: Any
try:
    from re import _constants, _parser  # type: ignore[attr-defined,no-redef]
except ImportError:  # pragma: no cover - a Python without them runs every rule in full
    _parser = _constants = None


class Redactor(NamedTuple):
    """One compiled rule and the literals (any one of) that every match of it contains.

    `needs` is empty when the rule has no such literals (no shortcut). When `folded`, the rule
    ignores case and `needs` is lowercased ASCII, checked against the lowercased text, which is
    exact for an ASCII text (a non-ASCII text always runs the rule: Unicode case folding maps
    some non-ASCII characters onto ASCII letters, e.g. U+212A KELVIN SIGN onto k).
    """

    pattern: re.Pattern[str]
    needs: tuple[str, ...]
    folded: bool


def redactors(pack: ContextPack) -> tuple[Redactor, ...]:
    """The pack's redaction rules, compiled; an invalid one is a ContextError naming it."""
    try:
        return _compiled(tuple(pack.redaction_rules))
    except re.error:
        for i, rule in enumerate(pack.redaction_rules):
            try:
                re.compile(rule)
            except re.error as exc:
                raise ContextError(
                    ErrorCode.CONTEXT_PACK_INVALID,
                    f"redaction_rules[{i}] {rule!r} of context pack {pack.contract_name}@"
                    f"{pack.contract_version} is not a valid regex ({exc}); fix or remove it.",
                ) from None
        raise


@functools.lru_cache(maxsize=64)
def _compiled(rules: tuple[str, ...]) -> tuple[Redactor, ...]:
    """Each distinct rule list, compiled once per process (a pack's rules recur on every compile).

    A cache of a pure function of an immutable key: the compile stays pure.
    """
    return tuple(Redactor(re.compile(rule), *required_literals(rule)) for rule in rules)


def required_literals(rule: str) -> tuple[tuple[str, ...], bool]:
    """Strings one of which every match of `rule` contains, and whether they are case-folded.

    Only the rule's top level is read: each item of its sequence must match, in order, so a run
    of adjacent literal items is matched verbatim, and an alternation whose every branch starts
    with literals is matched by one of those. Of the candidates, the one whose shortest string
    is longest is kept. Repeats, groups, classes and scoped flags count for nothing. ((), False)
    when nothing qualifies or the parser surprises us: then the rule simply always runs.
    """
    if _parser is None or _constants is None:
        return (), False
    try:
        parsed = _parser.parse(rule)
        folded = bool(parsed.state.flags & re.IGNORECASE)
        candidates: list[tuple[str, ...]] = []
        run = ""
        for op, arg in [*parsed.data, (None, None)]:
            if op is _constants.LITERAL:
                run += chr(arg)
                continue
            if run:
                candidates.append((run,))
                run = ""
            if op is _constants.BRANCH:
                heads = tuple(_head(branch) for branch in arg[1])
                if all(heads):
                    candidates.append(heads)
        if not candidates:
            return (), False
        needs = max(candidates, key=lambda c: min(len(s) for s in c))
        if folded:
            if not all(s.isascii() for s in needs):
                return (), False
            needs = tuple(s.lower() for s in needs)
    except Exception:  # noqa: BLE001 - a private parser: a surprise only turns the shortcut off
        return (), False
    return needs, folded


def _head(branch: Iterable[tuple[Any, Any]]) -> str:
    """The literal characters a branch starts with."""
    run = ""
    for op, arg in branch:
        if op is not _constants.LITERAL:
            break
        run += chr(arg)
    return run


def redact(text: str, rules: Sequence[Redactor]) -> str:
    """`text` with every match of each rule in turn replaced by REDACTED."""
    for rule in rules:
        if rule.needs:
            if not rule.folded:
                hay: str | None = text
            else:
                hay = text.lower() if text.isascii() else None
            if hay is not None and not any(s in hay for s in rule.needs):
                continue  # the rule cannot match this text
        text = rule.pattern.sub(REDACTED, text)
    return text
