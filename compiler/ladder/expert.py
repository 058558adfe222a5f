"""L6 expert model review: meaning the deterministic stages cannot judge.

For example "revenue" that holds costs, or "should_be_150" where a number belongs.

The model's findings are recorded as L6 findings (an error counts like any other); value
fixes it proposes go through the same guardrails as L2's. Whatever the guard would find in
the model's own words (its messages, its rationale) is masked in the result like a hit in
the payload.
"""

from typing import Any

from compiler.ladder.guard import hits_in_value
from compiler.ladder.intake import copy_checked
from compiler.ladder.model import ReviewRequest, ReviewVerdict
from compiler.ladder.patchguard import apply_guarded, record
from compiler.ladder.pointer import PointerError, decode
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L6"
_MAX_MESSAGE = 500


def expert(payload: Any, *, ctx: StageContext) -> StageReport:
    """Ask the model to review the payload; record its findings and guarded fixes."""
    report = StageReport(STAGE, payload)
    if ctx.model is None:
        return report
    request = ReviewRequest(
        payload=copy_checked(payload, ctx.contract.limits).value,
        json_schema=ctx.contract.json_schema,
        rules=[r.model_dump(mode="json") for r in ctx.contract.rules],
        findings=list(ctx.earlier_findings),
    )
    verdict = ctx.model.review(request)
    if not isinstance(verdict, ReviewVerdict):
        report.find(
            "",
            "warning",
            f"the model answered {type(verdict).__name__}, not a ReviewVerdict; review ignored",
        )
        return report
    for finding in verdict.findings:
        message = finding.message[:_MAX_MESSAGE]
        try:
            decode(finding.path)
            path = finding.path
        except PointerError:
            path, message = "", f"{message} (at {finding.path[:80]!r}, not a JSON Pointer)"
        report.find(path, finding.severity, message)
        report.sensitive.update(hits_in_value((), message, ctx))  # masked like payload hits
    report.sensitive.update(hits_in_value((), verdict.rationale, ctx))
    if verdict.operations:
        record(apply_guarded(payload, verdict.operations, ctx), report, verdict.rationale)
    return report
