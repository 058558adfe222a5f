"""L2 guarded JSON Patch: a model proposes value fixes for a payload that fails its schema.

The fixes are RFC 6902 `replace`/`add` operations; `patchguard` decides whether they apply.

The model is only called when there is something to fix, and only with a copy.
"""

from typing import Any

from compiler.ladder.conformance import strip, violations
from compiler.ladder.guard import hits_in_value
from compiler.ladder.intake import copy_checked
from compiler.ladder.model import PatchProposal, PatchRequest
from compiler.ladder.patchguard import ALLOWED_OPS, apply_guarded, record
from compiler.ladder.result import Finding
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L2"


def patch(payload: Any, *, ctx: StageContext) -> StageReport:
    """Ask the model for a patch for the current schema violations and apply it if safe."""
    report = StageReport(STAGE, payload)
    if ctx.model is None:
        return report
    trial = copy_checked(payload, ctx.contract.limits).value
    strip(trial, ctx, StageReport("trial", trial))
    errors = violations(trial, ctx)
    if not errors:
        return report
    request = PatchRequest(
        payload=copy_checked(payload, ctx.contract.limits).value,
        json_schema=ctx.contract.json_schema,
        errors=[Finding(stage=STAGE, path=p, severity="error", message=m) for p, m in errors],
        allowed_ops=list(ALLOWED_OPS),
    )
    proposal = ctx.model.propose_patch(request)
    if not isinstance(proposal, PatchProposal):
        report.find(
            "",
            "warning",
            f"the model answered {type(proposal).__name__}, not a PatchProposal; nothing applied",
        )
        return report
    if not proposal.operations:
        report.find("", "info", "the model proposed no patch")
        return report
    report.sensitive.update(hits_in_value((), proposal.rationale, ctx))
    record(apply_guarded(payload, proposal.operations, ctx), report, proposal.rationale)
    return report
