"""Small builders for context-compiler tests: a valid pack, run context, request, refs, memory."""

from __future__ import annotations

import hashlib
from typing import Any

from compiler.context.draft import NO_RETRIEVERS, Retrievers, Stage
from schemas.context import (
    ContextDraft,
    ContextPack,
    EvidenceRef,
    InvokeRequest,
    PromotedMemory,
    RunContext,
)

SNAP = "sha256:" + "1" * 64
OTHER_SNAP = "sha256:" + "2" * 64


def pack_data(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "contract_name": "test.pack",
        "contract_version": "1.0.0",
        "consumer": "executor",
        "intents": [
            {
                "intent_id": "forge.execute",
                "intent_class": "code_act",
                "task_id": "step.execute",
                "consumer": "executor",
            },
            {
                "intent_id": "forge.execute.small",
                "intent_class": "code_act",
                "task_id": "step.execute.small",
                "consumer": "executor",
            },
        ],
        "system_blocks": [{"kind": "role", "text": "You are a test executor.", "priority": 100}],
        "developer_blocks": [{"kind": "rules", "text": "Follow the contract.", "priority": 90}],
        "policy_bundles": [],
        "tools": [
            {
                "tool_id": "sandbox.session",
                "description": "run code",
                "approval_mode": "auto",
                "native_name": "run_python",
            },
            {"tool_id": "log.note", "description": "note", "approval_mode": "auto"},
            {"tool_id": "http.request", "description": "http", "approval_mode": "confirm"},
            {"tool_id": "deploy.prod", "description": "deploy", "approval_mode": "human"},
        ],
        "permissions": [
            {"tool_id": "sandbox.session"},
            {"tool_id": "log.note"},
            {"tool_id": "http.request"},
            {"tool_id": "deploy.prod"},
        ],
    }
    data.update(overrides)
    return data


def pack(**overrides: Any) -> ContextPack:
    return ContextPack.model_validate(pack_data(**overrides))


def run_ctx(**overrides: Any) -> RunContext:
    data: dict[str, Any] = {
        "tenant_id": "tenant-a",
        "project_id": "proj",
        "run_id": "run-1",
        "user_id": "user-1",
        "safety_mode": "confirm",
        "snapshot_id": SNAP,
        "facts": {},
    }
    data.update(overrides)
    return RunContext.model_validate(data)


def request(**overrides: Any) -> InvokeRequest:
    data: dict[str, Any] = {"intent_id": "forge.execute", "message": "Do the step."}
    data.update(overrides)
    return InvokeRequest.model_validate(data)


def ref(i: int, **overrides: Any) -> EvidenceRef:
    data: dict[str, Any] = {
        "id": f"kg:item:{i}",
        "class": "order",
        "classification": "INTERNAL",
        "payload_hash": "sha256:" + hashlib.sha256(str(i).encode()).hexdigest(),
        "snapshot_id": SNAP,
        "summary": f"Order {i} was shipped.",
        "priority": 50,
    }
    data.update(overrides)
    return EvidenceRef.model_validate(data)


def memory(i: int, **overrides: Any) -> PromotedMemory:
    data: dict[str, Any] = {
        "id": f"mem-{i}",
        "tenant_id": "tenant-a",
        "user_id": None,
        "intent_id": "forge.execute",
        "tier": "semantic",
        "text": f"Fact number {i}.",
        "promoted_at": "2026-05-09T09:30:00Z",
        "classification": "INTERNAL",
    }
    data.update(overrides)
    return PromotedMemory.model_validate(data)


def draft(p: ContextPack, c: RunContext, r: InvokeRequest, **outputs: Any) -> ContextDraft:
    """A draft of these inputs, with any stage outputs given already filled in."""
    return ContextDraft(pack=p, run_context=c, request=r, **outputs)


def staged(d: ContextDraft, *stages: Stage, retrievers: Retrievers = NO_RETRIEVERS) -> ContextDraft:
    """`d` after running `stages` on it, in the order given."""
    for stage in stages:
        d = stage(d, retrievers=retrievers)
    return d


def rule(rule_id: str, cond: Any, **then: Any) -> dict[str, Any]:
    return {"rule_id": rule_id, "if": cond, "then": then, "rationale": f"because {rule_id}"}
