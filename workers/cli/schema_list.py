"""The public models `forge schemas export` writes; the event payloads of the catalogue last."""

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
from schemas.doctor import DoctorReport
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
    DoctorReport,  # `forge doctor --json`
)
# Every event type's payload model (schemas/event_catalogue.py), after the models above.
EXPORTED += tuple(dict.fromkeys(t.payload for t in CATALOGUE.values() if t.payload not in EXPORTED))
