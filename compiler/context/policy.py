"""Stage 2: JsonLogic policy rules evaluated over the run's facts into typed decisions.

A rule sees one object: `facts` (the run's facts), `run_context` (the run context without its
facts), `request` (intent id and context query) and `intent` (the catalog row). Bundles are
taken by priority, highest first (ties in pack order), rules in order. Every rule whose
condition holds becomes a decision; the decision id is derived from the bundle and rule ids, so
the same pack gives the same ids on every compile.
"""

import hashlib
from typing import Any

from compiler.context.draft import Retrievers, filled
from compiler.context.errors import ContextError
from compiler.ladder.rules import evaluate, truthy
from schemas.context import (
    ContextDraft,
    IntentRow,
    InvokeRequest,
    PolicyDecision,
    PolicyResolution,
    PolicyRule,
    RunContext,
    Verdict,
)
from schemas.error_codes import ErrorCode


def decision_id(bundle_id: str, rule_id: str) -> str:
    """`pol_<12 hex>`: a stable id for the decision of `rule_id` in `bundle_id`."""
    digest = hashlib.sha256(f"{bundle_id}\x00{rule_id}".encode()).hexdigest()
    return f"pol_{digest[:12]}"


def policy_data(ctx: RunContext, req: InvokeRequest, intent: IntentRow) -> dict[str, Any]:
    """The object every rule of a compile is evaluated against."""
    run = ctx.model_dump(mode="json", exclude={"facts"})
    return {
        "facts": ctx.facts,
        "run_context": run,
        "request": {"intent_id": req.intent_id, "context_query": req.context_query},
        "intent": intent.model_dump(mode="json"),
    }


def resolve_policy(draft: ContextDraft, *, retrievers: Retrievers) -> ContextDraft:
    """`policy`: every rule that applies to the intent and whose condition holds, typed."""
    pack, intent = draft.pack, filled(draft.intent, "intent")
    data = policy_data(draft.run_context, draft.request, intent)
    bundles = sorted(pack.policy_bundles, key=lambda b: -b.priority)  # stable: ties keep order
    out: list[PolicyDecision] = []
    for bundle in bundles:
        for rule in bundle.rules:
            if rule.applies_to_intent is not None and rule.applies_to_intent != intent.intent_id:
                continue
            value, problem = evaluate(rule.if_, data)
            if problem is not None:
                raise ContextError(
                    ErrorCode.CONTEXT_POLICY_RULE,
                    f"rule {rule.rule_id!r} of bundle {bundle.bundle_id!r} in context pack "
                    f"{pack.contract_name}@{pack.contract_version} failed on the run's facts: "
                    f"{problem}. Guard the rule against missing or non-numeric facts.",
                )
            if truthy(value):
                out.append(_decision(bundle.bundle_id, rule))
    return draft.model_copy(update={"policy": PolicyResolution(decisions=out)})


def _verdict(rule: PolicyRule) -> Verdict:
    if not rule.then.allow:
        return "deny"
    return "require" if rule.then.requires else "allow"


def _decision(bundle_id: str, rule: PolicyRule) -> PolicyDecision:
    return PolicyDecision(
        policy_decision_id=decision_id(bundle_id, rule.rule_id),
        rule_id=rule.rule_id,
        bundle_id=bundle_id,
        verdict=_verdict(rule),
        requires=list(rule.then.requires),
        forbids=list(rule.then.forbids),
        downgrade=dict(rule.then.downgrade),
        rationale=rule.rationale,
    )
