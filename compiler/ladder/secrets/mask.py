"""Credentials masked wherever data leaves a boundary: events, failures, logs, errors, prompts.

The ladder's guard decides what a step's payload may hold; this is the floor under everything
else Forge writes or sends. It finds credentials only (every credential detector of the guard,
gitleaks' rules, Forge's context rules, and secret-looking values under fields named for a
secret), not personal data: an approver's email in an event is the audit trail, a card number
in a payload is the ladder's to judge. What it finds becomes `[REDACTED:<detector>]`; the
caller gets each finding as (where, detector, mask) to record, never the value.

What crosses a boundary may have been cut before it got here (a sandbox's stderr kept as its
last bytes, a failure kept as its last lines) or wrapped by a log, so secrets also count by
their body: a key's base64 lines without their BEGIN line, a JWT's part or its wrapped whole,
an AWS secret next to its key id (compiler/ladder/scan.py, `Detectors(..., cut=True)`).
"""

import re
from functools import cache
from typing import Any, Literal, NamedTuple

from compiler.ladder.contract import ALL_DETECTORS, Detector
from compiler.ladder.detectors import REDACTED, aws_secret_under_key, mask, placeholder
from compiler.ladder.scan import Detectors

__all__ = [
    "BOUNDARY_DETECTORS",
    "CLIP_MARGIN",
    "Masked",
    "clip",
    "mask_text",
    "mask_value",
]

# Every detector but the personal-data ones: a detector added to the contract's list is a
# boundary detector too unless it is personal data.
PERSONAL_DATA = frozenset({"email", "phone", "us_ssn", "iban", "card"})
BOUNDARY_DETECTORS: tuple[Detector, ...] = tuple(d for d in ALL_DETECTORS if d not in PERSONAL_DATA)
_SHORTEST = 6
CLIP_MARGIN = 4096  # longer than any single-line secret a detector finds (bearer: 2,000)
_PLACEHOLDER = re.compile(re.escape(REDACTED) + r"[a-z_]{1,40}\]")
_DEPTH = 64  # nesting deeper than this is masked as text (json-encoded), never skipped


class Masked(NamedTuple):
    """One credential masked: where (a JSON pointer, or '' for a text), by what, its mask."""

    path: str
    detector: str
    masked: str


@cache
def _detectors() -> Detectors:
    # What crosses a boundary may have been cut before it got here (a sandbox's stderr kept
    # as its last bytes, a failure's last lines): a key's body or a JWT's part counts too.
    return Detectors(BOUNDARY_DETECTORS, cut=True)


def mask_text(text: str, key: str | None = None, path: str = "") -> tuple[str, list[Masked]]:
    """`text` with every credential replaced by `[REDACTED:<detector>]`, and what was replaced.

    `key` is the field name the text sits under (a random value under `client_secret` is a
    credential where the same value under `sha256` is not).
    """
    if len(text) < _SHORTEST:
        return text, []
    if key is not None and aws_secret_under_key(key, text):
        return placeholder("aws_secret"), [Masked(path, "aws_secret", mask("aws_secret", text))]
    hits = _detectors().text(text, key)
    if not hits:
        return text, []
    parts, last, found = [], 0, []
    for start, end, kind in hits:
        parts += [text[last:start], placeholder(kind)]
        found.append(Masked(path, kind, mask(kind, text[start:end])))
        last = end
    return "".join(parts) + text[last:], found


def clip(
    text: str,
    limit: int,
    *,
    keep: Literal["head", "tail"] = "head",
    lines: int | None = None,
    key: str | None = None,
) -> tuple[str, list[Masked]]:
    """`text` masked, then cut to at most `limit` characters: the only cut on a way out.

    Masking after a cut misses a secret whose recognisable part (a PEM's BEGIN line, a token's
    prefix) fell outside the window while its body stayed in; masking first cannot. `keep`
    says which end survives; a cut never splits a `[REDACTED:…]` placeholder, so what is kept
    never shows half a mask as if it were text. `lines`: at most that many lines, too (the
    first ones for "head", the last ones for "tail").

    Only the kept end and `CLIP_MARGIN` characters beyond it are scanned (a step's stderr may
    be megabytes): a single-line secret cut at the margin's far edge cannot reach the kept end,
    being shorter than the margin, and a multi-line one is known by its body (`cut=True`).
    """
    if limit < 0:
        raise ValueError(f"clip: limit must be 0 or more, not {limit}")
    window = limit + CLIP_MARGIN
    if len(text) > window:
        text = text[:window] if keep == "head" else text[len(text) - window :]
    masked, found = mask_text(text, key)
    if lines is not None:
        kept = masked.splitlines()
        kept = kept[:lines] if keep == "head" else kept[max(len(kept) - lines, 0) :]
        masked = "\n".join(kept)
    if len(masked) <= limit:
        return masked, found
    at = limit if keep == "head" else len(masked) - limit
    for m in _PLACEHOLDER.finditer(masked):
        if m.start() < at < m.end():  # a cut inside a placeholder drops the whole of it
            at = m.start() if keep == "head" else m.end()
            break
    return (masked[:at] if keep == "head" else masked[at:]), found


def mask_value(value: Any, path: str = "", key: str | None = None) -> tuple[Any, list[Masked]]:
    """A JSON value with the credentials in its strings (and field names) masked, and the list.

    Returns the value itself when nothing was found, so callers can compare by identity.
    """
    found: list[Masked] = []
    new = _walk(value, path, key, found, 0)
    return (new if found else value), found


def _walk(value: Any, path: str, key: str | None, found: list[Masked], depth: int) -> Any:
    if isinstance(value, str):
        text, hits = mask_text(value, key, path)
        found += hits
        return text
    if depth > _DEPTH:
        return value
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            name = k
            if isinstance(k, str):
                name, hits = mask_text(k, None, path)
                found += hits
            child = f"{path}/{str(name).replace('~', '~0').replace('/', '~1')}"
            out[name] = _walk(v, child, k if isinstance(k, str) else key, found, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_walk(v, f"{path}/{i}", key, found, depth + 1) for i, v in enumerate(value)]
    return value
