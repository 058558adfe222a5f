"""What a ladder run reports: corrections made, findings raised, and the verdict."""

from typing import Any, Literal

from pydantic import Field

from schemas.base import FrozenModel

Severity = Literal["error", "warning", "info"]
CorrectionOp = Literal["add", "remove", "replace", "move"]


class Correction(FrozenModel):
    """One change a stage made to the payload, in RFC 6902 terms.

    `path` is the RFC 6901 pointer of the changed location after the change. For "move"
    (a field rename) `before` is the pointer the value came from and `after` the pointer it
    now lives at; for the other ops `before` and `after` are the values (None for absent).
    """

    stage: str
    path: str
    op: CorrectionOp
    before: Any = None
    after: Any = None
    reason: str


class Finding(FrozenModel):
    """Something a stage noticed; an "error" makes the result not ok."""

    stage: str
    path: str
    severity: Severity
    message: str


class LadderResult(FrozenModel):
    """The verdict of one ladder run.

    `ok` is True when no finding is an error. `blocked_by` names the stage whose error
    stopped the run in block mode (None in report mode and when nothing blocked). `payload`
    is the corrected payload; it is None when the payload could not be parsed or when the
    guard blocked it. A payload carrying what the guard found is never handed back: in
    report mode (and with the guard's `redact` action) every hit is replaced by
    `[REDACTED:<kind>]`, a correction whose `before` shows only masks.
    """

    ok: bool
    payload: Any
    corrections: list[Correction]
    findings: list[Finding]
    blocked_by: str | None = None
    stages_run: list[str] = Field(default_factory=list)

    def as_json_patch(self) -> list[dict[str, Any]]:
        """Return the corrections as an RFC 6902 patch that replays them on the parsed input.

        One exception: a field name the guard redacted is masked in its correction, so the
        `move` renaming it names a source that is not in the input.
        """
        patch: list[dict[str, Any]] = []
        for c in self.corrections:
            if c.op == "move":
                patch.append({"op": "move", "from": c.before, "path": c.path})
            elif c.op == "remove":
                patch.append({"op": "remove", "path": c.path})
            else:
                patch.append({"op": c.op, "path": c.path, "value": c.after})
        return patch
