"""Pass D, deterministic part: tools and execution mode per backend; contracts re-hashed.

Skill discovery and the model's choice among discovered skills arrive with the model layer;
until then no step recommends a skill, and nothing here pretends otherwise.
"""

from compiler.plan.context import CompileContext
from compiler.plan.contracts.finalize import rehash
from compiler.plan.passes.contracts import plan_hash
from schemas.compiled import Backend, ContractPlan

TOOLS_BY_BACKEND: dict[Backend, list[str]] = {
    "sandbox.frozen": ["log.note", "artifact.evaluate"],
    "sandbox.session": ["sandbox.session", "log.note", "artifact.evaluate"],
    "evaluator": ["artifact.evaluate"],
    "gate": [],
    "child_workflow": [],
}


def skills(plan: ContractPlan, *, ctx: CompileContext) -> ContractPlan:
    """Bind allowed tools and execution mode to every step and re-seal its contract."""
    steps = [
        rehash(
            s.model_copy(
                update={
                    "allowed_tool_ids": list(TOOLS_BY_BACKEND[s.backend]),
                    "execution_mode": s.kind,
                }
            )
        )
        for s in plan.steps
    ]
    return plan.model_copy(update={"steps": steps, "plan_hash": plan_hash(plan.mission, steps)})
