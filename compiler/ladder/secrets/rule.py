"""The shape of a secret rule: gitleaks' rule format, as data the guard compiles once."""

from typing import NamedTuple

__all__ = ["Allow", "Rule"]


class Allow(NamedTuple):
    """A rule's allow list: a candidate it matches is not a finding.

    `target` says what the regexes are matched against: the secret (gitleaks' default), the
    whole match, or the line; a stop word allows a secret that contains it.
    """

    regexes: tuple[str, ...] = ()
    stopwords: tuple[str, ...] = ()
    target: str = "secret"
    condition: str = "OR"


class Rule(NamedTuple):
    """One detector: a regex (RE2 syntax), the group that is the secret, how random it must be."""

    id: str
    description: str
    regex: str
    keywords: tuple[str, ...] = ()
    entropy: float | None = None
    group: int | None = None
    allows: tuple[Allow, ...] = ()
