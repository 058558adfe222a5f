"""The event catalogue: every event type Forge writes, its version, payload model and meaning.

Event types are persisted compatibility data: a type is never renamed, and a payload that must
change incompatibly gets a new version (`step.completed.v2`) next to the old one, which stays
readable. Writers build payloads through their model and store `payload_of(type, model)`;
readers that want typed access use `read_payload`, which never fails on a type the catalogue
does not know (it returns None) nor on keys an older writer stored that the model has since
dropped. `forge schemas export` writes each payload model's JSON Schema.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from schemas.base import FrozenModel
from schemas.bridge import (
    LOG_NOTED,
    TOOL_REFUSED,
    TOOL_REPLAYED,
    LogNoted,
    ToolRefusal,
    ToolReplayed,
)
from schemas.budget import MODEL_CALLED, TOOL_CALLED, ModelCalled, ToolCalled
from schemas.capsule import CAPSULE_EXTRACTED, CAPSULE_IMPORTED, CapsuleRecorded
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.evaluator import EVALUATION_PROOF
from schemas.guard import (
    GUARD_FOUND,
    GUARD_MASKED,
    GUARD_OUTPUT_MASKED,
    CredentialsFound,
    OutputMasked,
    SecretsMasked,
)
from schemas.recipes import RECIPE_TRAIL, RUN_TAGGED, TrailEntry
from schemas.run_events import (
    BudgetExhausted,
    BudgetExtended,
    BudgetExtensionRefused,
    GateDecided,
    GateDecisionRefused,
    GateEscalated,
    GateReminder,
    GateRequested,
    PlanDrafted,
    PlanRejected,
    RunCancelled,
    RunCompiled,
    RunCompleted,
    RunFailed,
    RunStarted,
    RunTagged,
)
from schemas.step_events import (
    ArtifactPublished,
    EvaluationProofRecorded,
    ModelFailed,
    StepCompleted,
    StepFailed,
    StepIteration,
    StepReceipt,
    StepReused,
    StepSkipped,
    StepStarted,
)
from schemas.webhooks import WEBHOOK_DELIVERED, WEBHOOK_FAILED, WebhookDelivered, WebhookFailed

__all__ = [
    "ARTIFACT_PUBLISHED",
    "BUDGET_EXHAUSTED",
    "BUDGET_EXTENDED",
    "BUDGET_EXTENSION_REFUSED",
    "CAPSULE_EXTRACTED",
    "CAPSULE_IMPORTED",
    "GUARD_FOUND",
    "GUARD_MASKED",
    "CATALOGUE",
    "EVALUATION_PROOF",
    "GATE_DECIDED",
    "GATE_DECISION_REFUSED",
    "GATE_ESCALATED",
    "GATE_REMINDER",
    "GATE_REQUESTED",
    "LOG_NOTED",
    "MODEL_CALLED",
    "MODEL_FAILED",
    "PLAN_DRAFTED",
    "PLAN_REJECTED",
    "RECIPE_TRAIL",
    "RUN_CANCELLED",
    "RUN_COMPILED",
    "RUN_COMPLETED",
    "RUN_FAILED",
    "RUN_STARTED",
    "RUN_SUBMITTED",
    "RUN_TAGGED",
    "STEP_COMPLETED",
    "STEP_FAILED",
    "STEP_ITERATION",
    "STEP_RECEIPT_POSTFLIGHT",
    "STEP_RECEIPT_PREFLIGHT",
    "STEP_REUSED",
    "STEP_SKIPPED",
    "STEP_STARTED",
    "TOOL_CALLED",
    "TOOL_REFUSED",
    "TOOL_REPLAYED",
    "WEBHOOK_DELIVERED",
    "WEBHOOK_FAILED",
    "EventType",
    "payload_of",
    "read_payload",
]

RUN_SUBMITTED = "run.submitted.v1"
RUN_STARTED = "run.started.v1"
RUN_COMPILED = "run.compiled.v1"
RUN_COMPLETED = "run.completed.v1"
RUN_FAILED = "run.failed.v1"
RUN_CANCELLED = "run.cancelled.v1"
PLAN_DRAFTED = "plan.drafted.v1"
PLAN_REJECTED = "plan.rejected.v1"
GATE_REQUESTED = "gate.requested.v1"
GATE_DECIDED = "gate.decided.v1"
GATE_DECISION_REFUSED = "gate.decision_refused.v1"
GATE_REMINDER = "gate.reminder.v1"
GATE_ESCALATED = "gate.escalated.v1"
BUDGET_EXTENDED = "budget.extended.v1"
BUDGET_EXTENSION_REFUSED = "budget.extension_refused.v1"
BUDGET_EXHAUSTED = "budget.exhausted.v1"
STEP_STARTED = "step.started.v1"
STEP_RECEIPT_PREFLIGHT = "step.receipt.preflight.v1"
STEP_RECEIPT_POSTFLIGHT = "step.receipt.postflight.v1"
STEP_COMPLETED = "step.completed.v1"
STEP_FAILED = "step.failed.v1"
STEP_REUSED = "step.reused.v1"
STEP_SKIPPED = "step.skipped.v1"
STEP_ITERATION = "step.iteration.v1"
ARTIFACT_PUBLISHED = "artifact.published.v1"
MODEL_FAILED = "model.failed.v1"


@dataclass(frozen=True)
class EventType:
    """One catalogued event type: `<family>.v<version>`, its payload model, what it records."""

    name: str
    payload: type[FrozenModel]
    description: str

    @property
    def family(self) -> str:
        return self.name.rsplit(".v", 1)[0]

    @property
    def version(self) -> int:
        return int(self.name.rsplit(".v", 1)[1])


_TYPES = (
    # The run, in its `<run>:run` stream (run.tagged too); the workflow writes these.
    EventType(
        RUN_SUBMITTED,
        RunStarted,
        "Reserved root type, no writer yet: a run accepted before its workflow starts, "
        "with what run.started would carry.",
    ),
    EventType(RUN_STARTED, RunStarted, "The run's workflow started (root event)."),
    EventType(RUN_TAGGED, RunTagged, "The plan a recipe or the planner made; fitness tags."),
    EventType(RUN_COMPILED, RunCompiled, "Passes B..E froze the plan; later run events name it."),
    EventType(RUN_COMPLETED, RunCompleted, "The run ended with every output published."),
    EventType(
        RUN_FAILED,
        RunFailed,
        "The run ended without its outputs: front end, steps or final checks.",
    ),
    EventType(RUN_CANCELLED, RunCancelled, "The run was cancelled; published outputs stay."),
    EventType(RECIPE_TRAIL, TrailEntry, "One line of the decision trail (`<run>:recipes`)."),
    # The planner model (`<run>:plan`).
    EventType(PLAN_DRAFTED, PlanDrafted, "The planner model's plan candidate, after repairs."),
    EventType(PLAN_REJECTED, PlanRejected, "The planner's plan failed its checks after repairs."),
    # Gates (`<run>:gate:<gate_id>`); decisions carry the deciding actor.
    EventType(GATE_REQUESTED, GateRequested, "A gated step is ready: the gate waits."),
    EventType(GATE_DECIDED, GateDecided, "A decision on a gate, applied."),
    EventType(GATE_DECISION_REFUSED, GateDecisionRefused, "A decision that did not apply."),
    EventType(GATE_REMINDER, GateReminder, "The gate still waits for its approver."),
    EventType(GATE_ESCALATED, GateEscalated, "The gate's deadline passed: another role decides."),
    # The budget (`<run>:budget`).
    EventType(BUDGET_EXHAUSTED, BudgetExhausted, "The run is blocked on its budget."),
    EventType(BUDGET_EXTENDED, BudgetExtended, "Someone raised the run's caps."),
    EventType(BUDGET_EXTENSION_REFUSED, BudgetExtensionRefused, "An extension that did not apply."),
    # A step's stream (`<run>:step:<step_key>`): its attempts, its usage ledger, its calls.
    EventType(STEP_STARTED, StepStarted, "An attempt of the step began."),
    EventType(STEP_RECEIPT_PREFLIGHT, StepReceipt, "The workspace's inputs before the executor."),
    EventType(STEP_RECEIPT_POSTFLIGHT, StepReceipt, "The workspace's outputs after the executor."),
    EventType(STEP_COMPLETED, StepCompleted, "The attempt's outputs were verified and published."),
    EventType(STEP_FAILED, StepFailed, "The attempt failed; `retryable` says if Temporal retries."),
    EventType(STEP_REUSED, StepReused, "A resumed run adopted the step's verified outputs."),
    EventType(STEP_SKIPPED, StepSkipped, "The step never ran."),
    EventType(STEP_ITERATION, StepIteration, "A pass of the step's loop finished."),
    EventType(ARTIFACT_PUBLISHED, ArtifactPublished, "An output was published (its version)."),
    EventType(MODEL_CALLED, ModelCalled, "A provider call: usage, cost, latency (usage)."),
    EventType(MODEL_FAILED, ModelFailed, "A provider call that failed (not usage)."),
    EventType(TOOL_CALLED, ToolCalled, "A tool dispatch by the executor or the bridge (usage)."),
    EventType(TOOL_REFUSED, ToolRefusal, "A bridge call refused, never dispatched."),
    EventType(TOOL_REPLAYED, ToolReplayed, "A bridge call answered from an earlier same call."),
    EventType(LOG_NOTED, LogNoted, "A note step code left through `log.note`."),
    EventType(EVALUATION_PROOF, EvaluationProofRecorded, "An evaluator's verdict and its proof."),
    EventType(
        GUARD_FOUND,
        CredentialsFound,
        "Credentials in a step's inputs or outputs, reported (the profile's phase mode: report).",
    ),
    # A tenant's capsule (`capsules:<tenant>:<name>`): its versions as they are added.
    EventType(CAPSULE_EXTRACTED, CapsuleRecorded, "A run was extracted into a capsule version."),
    EventType(CAPSULE_IMPORTED, CapsuleRecorded, "An exported capsule version was imported."),
    # A tenant's guard findings (`guard:<tenant>`): credentials masked in an event's payload,
    # or in a log line, a failure or a CLI line a process wrote.
    EventType(
        GUARD_MASKED, SecretsMasked, "Credentials were masked in an event before it was written."
    ),
    EventType(
        GUARD_OUTPUT_MASKED,
        OutputMasked,
        "Credentials were masked in a log line, a failure or a CLI line before it was written.",
    ),
    # A tenant's webhook deliveries (`webhooks:<tenant>`), caused by the event each delivered.
    EventType(WEBHOOK_DELIVERED, WebhookDelivered, "A webhook's receiver accepted a delivery."),
    EventType(
        WEBHOOK_FAILED,
        WebhookFailed,
        "A delivery failed for good: its attempts ran out, or the receiver or egress refused it.",
    ),
)

CATALOGUE: Mapping[str, EventType] = MappingProxyType({t.name: t for t in _TYPES})


def payload_of(event_type: str, payload: FrozenModel) -> dict[str, Any]:
    """The stored form of `payload` in an event of `event_type`: the fields its writer set.

    Fields left at their default are not stored (a reader's model supplies them), so a payload
    holds exactly what its writer said, and a writer that sets the same fields as before stores
    the same bytes: idempotent appends and content hashes do not move.

    Raises:
        ForgeError: EVENT_UNCATALOGUED, the type is not in the catalogue, or `payload` is not
            its model.
    """
    entry = CATALOGUE.get(event_type)
    if entry is None:
        raise ForgeError(
            f"{event_type!r} is not in schemas/event_catalogue.py",
            code=ErrorCode.EVENT_UNCATALOGUED,
        )
    if type(payload) is not entry.payload:
        raise ForgeError(
            f"{event_type} takes a {entry.payload.__name__} payload, not {type(payload).__name__}",
            code=ErrorCode.EVENT_UNCATALOGUED,
        )
    dumped = payload.model_dump(mode="json")
    return {name: value for name, value in dumped.items() if name in payload.model_fields_set}


def read_payload(event_type: str, payload: Mapping[str, Any]) -> FrozenModel | None:
    """A stored payload as its catalogue model; None when the type is not catalogued.

    Keys the model does not (or no longer) name are ignored, so an event stored by an older
    writer still reads. A payload that breaks its model raises pydantic's ValidationError.
    """
    entry = CATALOGUE.get(event_type)
    if entry is None:
        return None
    fields = entry.payload.model_fields
    return entry.payload.model_validate({k: v for k, v in payload.items() if k in fields})
