"""Stage 3: registry ∩ permissions − prohibitions − policy forbids, capped by safety mode.

The effective approval mode of a tool is the one its registry entry declares, or the one a fired
policy rule sets for it (`then.downgrade`; when several do, the strictest wins). A tool whose
effective mode ranks above the run's safety_mode is not surfaced: the model never sees a tool
it could not use. Every registry tool left out is listed in `withheld` with the reason.
"""

from typing import Any

from compiler.context.draft import Retrievers, filled
from schemas.context import (
    APPROVAL_RANK,
    ApprovalMode,
    ContextDraft,
    PolicyResolution,
    ToolSurface,
)


def _policy_modes(policy: PolicyResolution) -> dict[str, ApprovalMode]:
    modes: dict[str, ApprovalMode] = {}
    for d in policy.decisions:
        for tool_id, mode in d.downgrade.items():
            if tool_id not in modes or APPROVAL_RANK[mode] > APPROVAL_RANK[modes[tool_id]]:
                modes[tool_id] = mode
    return modes


def surface_tools(draft: ContextDraft, *, retrievers: Retrievers) -> ContextDraft:
    """`tools`: those the model may see, in registry order, and why each other is withheld."""
    pack, ctx, policy = draft.pack, draft.run_context, filled(draft.policy, "policy")
    denied = {p.tool_id for p in pack.permissions if not p.allow}
    permitted = {p.tool_id for p in pack.permissions if p.allow} - denied
    prohibited = set(ctx.prohibitions)
    forbidden_by: dict[str, str] = {}
    for d in policy.decisions:
        for tool_id in d.forbids:
            forbidden_by.setdefault(tool_id, f"{d.bundle_id}/{d.rule_id}")
    modes = _policy_modes(policy)
    ceiling = APPROVAL_RANK[ctx.safety_mode]
    tools: list[dict[str, Any]] = []
    withheld: list[dict[str, Any]] = []
    for entry in pack.tools:
        tid = entry.tool_id
        mode = modes.get(tid, entry.approval_mode)
        reason = None
        if tid not in permitted:
            reason = "no permission in the pack" if tid not in denied else "permission denies it"
        elif tid in prohibited:
            reason = "prohibited by the run"
        elif tid in forbidden_by:
            reason = f"forbidden by policy rule {forbidden_by[tid]}"
        elif APPROVAL_RANK[mode] > ceiling:
            reason = f"approval mode {mode} is above the run's safety mode {ctx.safety_mode}"
        if reason is not None:
            withheld.append({"kind": "tool", "id": tid, "reason": reason})
            continue
        tools.append(
            {
                "tool_id": tid,
                "description": entry.description,
                "approval_mode": mode,
                "declared_mode": entry.approval_mode,
                "input_schema": entry.input_schema,
                "native_name": entry.native_name,
            }
        )
    # One validation for the whole surface: hundreds of entries, each a model.
    surface = ToolSurface.model_validate({"tools": tools, "withheld": withheld})
    return draft.model_copy(update={"tools": surface})
