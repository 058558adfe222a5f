"""The credential detectors: gitleaks' rule set and Forge's context rules, searched in one pass.

Every rule is an RE2 expression (gitleaks writes Go's RE2 syntax), so matching time is linear
in the text whatever it holds. One RE2 set of all rules says which rules match a string at
all (most strings: none, in one pass); only those rules are then run for their matches. A
match counts when its secret (the rule's secret group, else its first non-empty group, else
the whole match) is random enough for the rule (Shannon entropy, gitleaks' thresholds), is no
placeholder or documented example, carries a valid checksum where its format has one (GitHub's
CRC32, secrets/checksums.py), is not one of Forge's own values (context rules only), and
passes the rule's and gitleaks' global allow lists. As in gitleaks, a rule with keywords counts
only in a text holding one of them (a bare 40-digit hex run is a git commit, not a Sourcegraph
token, unless `sgp_` or `sourcegraph` is there too).
"""

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import re2

from compiler.ladder.secrets.allow import CONTEXT_RULES, forge_value, placeholder
from compiler.ladder.secrets.checksums import CHECKSUMS
from compiler.ladder.secrets.forge_rules import FORGE_RULES
from compiler.ladder.secrets.gitleaks_rules import GLOBAL_ALLOW, RULES
from compiler.ladder.secrets.rule import Allow, Rule

__all__ = ["ALL_RULES", "SecretHit", "SecretScanner", "entropy"]

SecretHit = tuple[int, int, str]  # start, end of the secret; rule id
ALL_RULES: tuple[Rule, ...] = RULES + FORGE_RULES

# Gitleaks ends most secrets at a quote, a space, ';', an escaped newline or the end: it scans
# source files. Forge also scans prose, log lines and paths, where a key is followed by '.',
# ',', ':', a closing bracket or a '/' ("invalid key sk_live_….", "keys/sk_live_….json"): the
# same rules end there too (tests/guard/test_corpus.py measures the benign strings again).
GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
FORGE_END = r"""(?:[\x60'"\s;.,:)\]}>&|/]|\\[nr]|$)"""
_MAX_MEM = 256 << 20  # the set of ~220 rules needs more than RE2's default 8 MiB


def entropy(text: str) -> float:
    """Shannon entropy of `text` in bits per character (gitleaks' measure)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


class _Compiled:
    def __init__(self, rule: Rule, options: Any) -> None:
        self.rule = rule
        self.regex = rule.regex.replace(GITLEAKS_END, FORGE_END)
        self.pattern = re2.compile(self.regex, options)
        self.allows = [
            (a, [re2.compile(r, options) for r in a.regexes], [s.lower() for s in a.stopwords])
            for a in rule.allows
        ]
        self.context = rule.id in CONTEXT_RULES
        self.checksum = CHECKSUMS.get(rule.id, _any)
        self.keywords = tuple(k.lower() for k in rule.keywords)


class SecretScanner:
    """The chosen rules (all by default), compiled once; `find` is the per-string search."""

    def __init__(self, rules: Iterable[Rule] = ALL_RULES) -> None:
        options = re2.Options()
        options.max_mem = _MAX_MEM
        self._rules = [_Compiled(r, options) for r in rules]
        self._set = re2.Set.SearchSet(options)
        for compiled in self._rules:
            self._set.Add(compiled.regex)
        self._set.Compile()
        self._global = [re2.compile(r, options) for r in GLOBAL_ALLOW.regexes]
        self._stopwords = [s.lower() for s in GLOBAL_ALLOW.stopwords]
        self.ids = frozenset(c.rule.id for c in self._rules)

    def any(self, text: str) -> bool:
        """Whether any rule's expression matches (before entropy and allow lists)."""
        return bool(self._set.Match(text))

    def find(self, text: str) -> list[SecretHit]:
        """Every confirmed secret in `text`: its span and the rule that found it, in order."""
        matched = self._set.Match(text)
        if not matched:
            return []
        hits: list[SecretHit] = []
        lowered = text.lower()
        for index in sorted(matched):
            compiled = self._rules[index]
            if compiled.keywords and not any(k in lowered for k in compiled.keywords):
                continue  # gitleaks runs a rule only where one of its keywords occurs
            for m in compiled.pattern.finditer(text):
                span = _secret_span(m, compiled.rule.group)
                if span is not None and self._counts(compiled, text, m, span):
                    hits.append((span[0], span[1], compiled.rule.id))
        return _first_of_overlaps(hits)

    def _counts(self, compiled: _Compiled, text: str, m: Any, span: tuple[int, int]) -> bool:
        secret = text[span[0] : span[1]]
        rule = compiled.rule
        if rule.entropy is not None and entropy(secret) < rule.entropy:
            return False
        if not compiled.checksum(secret):
            return False
        if placeholder(secret) or (compiled.context and forge_value(secret)):
            return False
        lowered = secret.lower()
        if any(w in lowered for w in self._stopwords):
            return False
        if any(g.search(secret) for g in self._global):
            return False
        return not any(
            _allowed(allow, regexes, stopwords, text, m, secret, lowered)
            for allow, regexes, stopwords in compiled.allows
        )


def _any(_secret: str) -> bool:
    return True


def _secret_span(m: Any, group: int | None) -> tuple[int, int] | None:
    if group is not None:
        start, end = m.span(group)
        return (start, end) if start >= 0 and end > start else None
    for g in range(1, len(m.groups()) + 1):
        start, end = m.span(g)
        if start >= 0 and end > start:
            return start, end
    start, end = m.span()
    return (start, end) if end > start else None


def _allowed(
    allow: Allow,
    regexes: list[Any],
    stopwords: list[str],
    text: str,
    m: Any,
    secret: str,
    lowered: str,
) -> bool:
    if allow.target == "match":
        target = m.group(0)
    elif allow.target == "line":
        start, end = m.span()
        target = text[text.rfind("\n", 0, start) + 1 : _line_end(text, end)]
    else:
        target = secret
    by_regex = bool(regexes) and any(r.search(target) for r in regexes)
    by_word = bool(stopwords) and any(w in lowered for w in stopwords)
    if allow.condition == "AND":
        return (by_regex or not regexes) and (by_word or not stopwords)
    return by_regex or by_word


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _first_of_overlaps(hits: list[SecretHit]) -> list[SecretHit]:
    """Hits in order; of two that overlap, the one starting first stays.

    At the same start, the one found by its shape rather than its context stays
    (`stripe-access-token` over `generic-api-key`), then the longer.
    """
    kept: list[SecretHit] = []
    for hit in sorted(hits, key=lambda h: (h[0], h[2] in CONTEXT_RULES, -(h[1] - h[0]))):
        if kept and hit[0] < kept[-1][1]:
            continue
        kept.append(hit)
    return kept
