"""Step directives (seed 004 §4.2, §4.3, §6): only the consecutive leading lines of a body fire.

A step body opens with directive lines (`done-when:`, `loop:`, `uses:`, `invoke skill:`) in any
order; the first blank or prose line ends them. A directive written later, in prose or inside a code
fence, is text: citing a recipe is not calling it.
"""

import re

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.recipes import SLUG_PATTERN, Directives, LoopSpec

HARD_CAP = 25  # no loop, however written, runs more often than this
DEFAULT_MAX = 5  # until-dry / until MARKER without `max`
_DIRECTIVE = re.compile(r"^(done-when|loop|uses|invoke[ -]skill)\s*:\s*(.*)$", re.IGNORECASE)
_COMMENT = re.compile(r"\s+#.*$")
_SLUG = re.compile(SLUG_PATTERN)
_SKILL_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
_NUMBER = re.compile(r"^-?\d+$")


class DirectiveError(ForgeError, ValueError):
    """A directive line that does not parse; the message names the line and what is allowed."""

    code = ErrorCode.RECIPE_INVALID


def leading_directive_lines(body: str) -> tuple[list[tuple[str, str]], str]:
    """(key, value) of each leading directive line, and the prose that follows them."""
    lines = body.strip("\n").split("\n")
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        m = _DIRECTIVE.match(lines[i].strip())
        if not m or not lines[i].strip():
            break
        key = m.group(1).lower().replace("invoke-skill", "invoke skill")
        found.append((key, m.group(2).strip()))
        i += 1
    return found, "\n".join(lines[i:]).strip()


def parse_directives(body: str) -> tuple[Directives, str]:
    """The step's directives and its prose; raises DirectiveError on a malformed directive."""
    found, prose = leading_directive_lines(body)
    values: dict[str, object] = {}
    for key, raw in found:
        value = _COMMENT.sub("", raw).strip() if key != "done-when" else raw.strip()
        name = {"done-when": "done_when", "invoke skill": "invoke_skill"}.get(key, key)
        if name in values:
            raise DirectiveError(f"`{key}:` appears twice in the leading directive lines")
        if key == "loop":
            values[name] = parse_loop(value)
        elif key == "uses":
            if not _SLUG.fullmatch(value):
                raise DirectiveError(f"`uses: {value}` must name a recipe slug (a-z, 0-9, -)")
            values[name] = value
        elif key == "invoke skill":
            if not _SKILL_ID.fullmatch(value):
                raise DirectiveError(
                    f"`invoke skill: {value}` must name a skill id (a-z, 0-9, -._)"
                )
            values[name] = value
        else:
            values[name] = value
    return Directives.model_validate(values), prose


def parse_loop(directive: str) -> LoopSpec:
    """`count N`, `until-dry [max M]` or `until MARKER [max M]` (a leading `loop:` is allowed).

    Counts and maxima are clamped into [1, 25] at parse time, so an enormous count collapses to
    the hard ceiling instead of running away; `clamped_from` keeps what was written.
    """
    text = _COMMENT.sub("", directive.strip())
    if text.lower().startswith("loop:"):
        text = text[5:].strip()
    parts = text.split()
    if not parts:
        raise DirectiveError("empty loop directive: write `count N`, `until-dry` or `until MARKER`")
    mode = parts[0].lower()
    if mode == "count":
        if len(parts) != 2 or not _NUMBER.match(parts[1]):
            raise DirectiveError(f"`loop: {text}`: count needs one whole number, e.g. `count 3`")
        return _bounded("count", int(parts[1]), None)
    if mode == "until-dry":
        return _bounded("until-dry", _max(parts[1:], text), None)
    if mode == "until":
        if len(parts) < 2 or parts[1].lower() == "max":
            raise DirectiveError(f"`loop: {text}`: until needs a MARKER, e.g. `until APPROVED`")
        return _bounded("until-marker", _max(parts[2:], text), parts[1])
    raise DirectiveError(
        f"`loop: {text}`: unknown mode {parts[0]!r}; use `count N`, `until-dry [max M]` "
        "or `until MARKER [max M]`"
    )


def _max(rest: list[str], text: str) -> int:
    if not rest:
        return DEFAULT_MAX
    if len(rest) != 2 or rest[0].lower() != "max" or not _NUMBER.match(rest[1]):
        raise DirectiveError(f"`loop: {text}`: expected `max M` after the mode, got {rest!r}")
    return int(rest[1])


def _bounded(mode: str, n: int, marker: str | None) -> LoopSpec:
    clamped = min(max(n, 1), HARD_CAP)
    return LoopSpec.model_validate(
        {
            "mode": mode,
            "max": clamped,
            "marker": marker,
            "clamped_from": n if clamped != n else None,
        }
    )


_DRY = re.compile(
    r"\b(no new|nothing (?:left|new|more|else|further|found)|no more|no further|no additional|"
    r"none found|complete|completed|exhausted|finished|all covered|fully covered|"
    r"converged|no changes?)\b",
    re.IGNORECASE,
)
# "not complete", and with one qualifier between: "not yet complete", "not quite finished".
_NEGATED = re.compile(
    r"\b(not|isn't|never|nearly|almost|in)(\s+(yet|quite|fully|entirely|totally|really))?\s*$",
    re.IGNORECASE,
)


def is_dry(note: str | None) -> bool:
    """True when a done-note says the pass found nothing new (seed 004 §6.2).

    An empty note is dry. "not complete", "almost finished" or "incomplete" are not.
    """
    if note is None or not note.strip():
        return True
    for m in _DRY.finditer(note):
        if not _NEGATED.search(note[: m.start()]):
            return True
    return False


def loop_should_stop(loop: LoopSpec, iteration: int, ok: bool, note: str | None) -> bool:
    """RUN_LOOPED_STEP's exit test after `iteration` (1-based) finished."""
    if not ok or iteration >= loop.max:
        return True
    if loop.mode == "until-dry":
        return is_dry(note)
    if loop.mode == "until-marker":
        return loop.marker is not None and loop.marker in (note or "")
    return False
