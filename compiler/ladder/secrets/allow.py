"""What a credential-shaped value may be without being a secret.

Three kinds, checked on the secret a rule captured (never on the text around it):
- documented example values and obvious placeholders, for every rule (`AKIAIOSFODNN7EXAMPLE`,
  `<password>`, `${DB_PASSWORD}`, `changeme`, `****`, `xxxxxxxx`);
- Forge's own values, for the rules that find secrets by their context rather than their
  shape (a `*_key` field, a `token=` pair): sha256 digests and `sha256:` hashes, UUIDs, and
  identifiers made of words, numbers and short hex runs joined by `-`, `_`, `:`, `.` or `/`
  (run ids, idempotency keys, contract refs, step keys);
- the rule's own allow lists and gitleaks' global one (see `rule.Allow`).
"""

import re

__all__ = ["CONTEXT_RULES", "forge_value", "placeholder"]

# Rules that find a secret by the words around it, so Forge's own values could fall in them.
CONTEXT_RULES = frozenset(
    {
        "generic-api-key",
        "password-assignment",
        "connection-string-password",
        "http-basic-credentials",
        "curl-auth-user",
        "curl-auth-header",
    }
)

_PLACEHOLDER = re.compile(
    r"(?i)^(?:"
    r"[<\[{(][^<>\[\]{}()]{0,60}[>\]})]"  # <password>, [TOKEN], {secret}
    r"|\$\{?[\w.:-]{1,80}\}?|\{\{[^{}]{0,80}\}\}|%[\w.-]{1,80}%|\$\([^()]{1,80}\)"  # variables
    r"|(.)\1{2,}"  # ****, xxxxxxxx, 00000000
    r"|(?:your|my|insert|enter)(?:[_ .-]?[a-z]{1,12}){1,4}"  # your_api_key, YOUR-TOKEN-HERE
    r"|change[_ .-]?(?:me|it|this)|passw[o0]rd\d{0,4}|secret\d{0,4}|p@ssw[o0]rd"
    r"|(?:dummy|sample|fake|test|placeholder|redacted|example|todo|tbd|none|null|undefined)"
    r"[\w.-]{0,20}"
    r")$"
)
_EXAMPLE = re.compile(r"(?i)example|\[REDACTED:")
_DIGEST = re.compile(r"^(?:sha(?:256|512):)?(?:[0-9a-f]{64}|[0-9a-f]{128})$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_IDENT = re.compile(r"^[A-Za-z0-9]+(?:[-_:./][A-Za-z0-9]+)+$")
_SEGMENT = re.compile(r"^(?:[A-Za-z]+|\d+|[0-9a-f]{1,8})$")


def placeholder(secret: str) -> bool:
    """A documented example value or an obvious placeholder: never a finding."""
    return bool(_PLACEHOLDER.match(secret) or _EXAMPLE.search(secret))


def forge_value(secret: str) -> bool:
    """A value Forge itself writes: a digest, a UUID, or an identifier of words and numbers."""
    if _DIGEST.match(secret) or _UUID.match(secret):
        return True
    if _IDENT.match(secret) is None:
        return False
    return all(_SEGMENT.match(s) for s in re.split(r"[-_:./]", secret))
