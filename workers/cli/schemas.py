"""`forge schemas export`: one JSON Schema per public model, for tools outside Python."""

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from schemas.artifacts import ArtifactRef, Provenance
from schemas.base import FrozenModel
from schemas.bridge import BridgePolicy, ToolRefusal
from schemas.budget import BudgetState, ExtendBudgetInput, ModelCalled, PriceTable, ToolCalled
from schemas.compiled import (
    CompiledPlan,
    CompiledStep,
    CompiledStepContractV1,
    ContractPlan,
    DispatchPacket,
    ExecutableContract,
    GateSpec,
)
from schemas.context import CompiledContext, ContextPack
from schemas.diagnostics import Diagnostic
from schemas.evaluator import EvaluationProof, EvaluationSpec, EvidenceBundle
from schemas.event_catalogue import CATALOGUE
from schemas.events import Event, EventDraft
from schemas.models import ModelRequest, ModelResponse
from schemas.plan import ArtifactContract, PlannerCandidate, PlannerStep, ResolvedPlan, ResolvedStep
from schemas.profile import ExecutionProfile, ExecutionProfileSnapshot
from schemas.receipts import Receipt
from schemas.run import (
    DecideGateInput,
    GateDecision,
    PlanInput,
    PlanResult,
    RunInput,
    RunResult,
    RunStatusView,
    StepExecuteInput,
    StepExecuteResult,
)
from schemas.skills import SkillCandidate
from schemas.typesystem import (
    Adapter,
    ArtifactKind,
    ArtifactProfile,
    CrossStepSlot,
    DomainPack,
    EntitySchema,
    PolicyProfile,
    WorkflowPack,
)
from workers.cli.common import fail, out

schemas_app = typer.Typer(
    help="Export the JSON Schemas of Forge's public models.", no_args_is_help=True
)

EXPORTED: tuple[type[FrozenModel], ...] = (
    PlannerCandidate,
    PlannerStep,
    ResolvedPlan,
    ResolvedStep,
    CompiledStep,
    CompiledStepContractV1,
    ExecutableContract,
    ArtifactContract,
    DispatchPacket,
    ContractPlan,
    CompiledPlan,
    ExecutionProfile,
    ExecutionProfileSnapshot,
    DomainPack,
    WorkflowPack,
    ArtifactKind,
    CrossStepSlot,
    PolicyProfile,
    Adapter,
    ArtifactProfile,
    EntitySchema,
    Diagnostic,
    EventDraft,
    Event,
    Receipt,
    ArtifactRef,
    Provenance,
    RunInput,
    RunResult,
    RunStatusView,
    StepExecuteInput,
    StepExecuteResult,
    GateSpec,
    DecideGateInput,
    GateDecision,
    ExtendBudgetInput,
    BudgetState,
    ModelCalled,
    ToolCalled,
    PriceTable,
    # The model layer: model calls, the context pack compiler, the evaluator, the tool bridge.
    ModelRequest,
    ModelResponse,
    ContextPack,
    CompiledContext,
    EvidenceBundle,
    EvaluationProof,
    EvaluationSpec,
    BridgePolicy,
    ToolRefusal,
    PlanInput,
    PlanResult,
    SkillCandidate,
)
# Every event type's payload model (schemas/event_catalogue.py), after the models above.
EXPORTED += tuple(dict.fromkeys(t.payload for t in CATALOGUE.values() if t.payload not in EXPORTED))


def schema_documents() -> dict[str, dict[str, Any]]:
    """File name -> JSON Schema for every exported model."""
    return {f"{m.__name__}.json": m.model_json_schema() for m in EXPORTED}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@schemas_app.command("export")
def export_cmd(directory: Annotated[Path, typer.Argument(metavar="DIR")]) -> None:
    """Write one <Model>.json per public model into DIR (the repo keeps schemas/jsonschema/)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        docs = schema_documents()
        for name, schema in docs.items():
            (directory / name).write_text(render(schema), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write to {directory}: {exc.strerror}")
    out.print(f"[green]✓[/] wrote {len(docs)} JSON Schemas to {directory}")
