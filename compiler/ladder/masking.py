r"""Masking what the guard found wherever it reappears in a run's findings and corrections.

A value can come back transformed: quoted by `repr` (a jsonschema message escapes "\n"),
JSON-escaped, escaped as a JSON Pointer token ("/" -> "~1") in a path, or with its case
changed. Every such form is masked, case-insensitively. The work is linear in the text
scrubbed: candidate positions come from one regex over the forms' first few characters
(a trie, so its size does not multiply the cost per position), and each candidate is
checked against the forms of each length that share that prefix, longest first.
"""

import json
import re
from typing import Any

_PREFIX = 6  # every detector match is at least this long


def _forms(raw: str) -> set[str]:
    """The ways a found value can be spelt in a message or a path."""
    forms = {raw, json.dumps(raw)[1:-1], json.dumps(raw, ensure_ascii=False)[1:-1]}
    forms.add(repr(raw)[1:-1])
    forms |= {f.replace("~", "~0").replace("/", "~1") for f in list(forms)}
    return {f.lower() for f in forms if f}


def _trie_pattern(words: set[str]) -> str:
    """A regex matching exactly `words`, nested by shared prefixes (depth <= their length)."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(c) + emit(child) for c, child in sorted(node.items()) if c]
        if "" in node:
            branches.append("")
        if len(branches) == 1:
            return branches[0]
        return "(?:" + "|".join(branches) + ")"

    return emit(trie)


class Masker:
    """Replaces every form of each found value by `<its mask>`."""

    def __init__(self, sensitive: dict[str, str]) -> None:
        self.shown: dict[str, str] = {}
        for raw, shown in sorted(sensitive.items(), key=lambda kv: (-len(kv[0]), kv[0])):
            for form in _forms(raw):
                self.shown.setdefault(form, shown)
        self.size = min((len(f) for f in self.shown), default=_PREFIX)
        self.size = min(self.size, _PREFIX)
        # prefix -> lengths of the forms that start with it (longest first) and the forms
        self.buckets: dict[str, tuple[list[int], frozenset[str]]] = {}
        grouped: dict[str, set[str]] = {}
        for form in self.shown:
            grouped.setdefault(form[: self.size], set()).add(form)
        for prefix, forms in grouped.items():
            lengths = sorted({len(f) for f in forms}, reverse=True)
            self.buckets[prefix] = (lengths, frozenset(forms))
        self.digits = {raw for raw in sensitive if raw.isdigit()}
        self.pattern = (
            re.compile("(?=" + _trie_pattern(set(grouped)) + ")", re.IGNORECASE)
            if grouped
            else None
        )

    def text(self, text: str) -> str:
        """The text with every form of every found value masked."""
        if self.pattern is None or len(text) < self.size:
            return text
        parts: list[str] = []
        last = 0
        for m in self.pattern.finditer(text):
            start = m.start()
            if start < last:
                continue
            bucket = self.buckets.get(text[start : start + self.size].lower())
            if bucket is None:
                continue
            lengths, forms = bucket
            for length in lengths:
                piece = text[start : start + length].lower()
                if piece in forms:
                    parts += [text[last:start], f"<{self.shown[piece]}>"]
                    last = start + length
                    break
        return "".join(parts) + text[last:] if parts else text

    def value(self, value: Any) -> Any:
        """A JSON value with every string (and key, and sensitive number) masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.value(v) for k, v in value.items()}
        if isinstance(value, int) and not isinstance(value, bool) and self.digits:
            if str(abs(value)) in self.digits:
                return self.text(str(abs(value)))
        return value
