"""One step attempt, and the one place its ids and call scope are built."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

from activities.errors import step_failure
from activities.harness.codeact_session import ModelServices
from activities.harness.params import step_params
from activities.net.outbound import OutboundClient
from activities.sandbox.step_runtime import RUNTIME_DIR
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from activities.store.skills_registry import SkillRegistry
from compiler.typesystem.library import TypeLibrary
from schemas.artifacts import Provenance
from schemas.base import FrozenModel
from schemas.bridge import BridgePolicy
from schemas.compiled import CompiledPlan, CompiledStep, DispatchPacket
from schemas.context import ContextPack, RunContext
from schemas.error_codes import ErrorCode
from schemas.event_catalogue import STEP_STARTED, payload_of
from schemas.event_ids import event_id, stream_id
from schemas.events import EventDraft
from schemas.models import CallScope
from schemas.plan import Scalar
from schemas.profile import ExecutionProfile
from schemas.run import StepExecuteInput


@dataclass(frozen=True)
class StepServices:
    """The worker's clients a step attempt uses (StepActivities holds them)."""

    artifacts: ArtifactStore
    events: EventStore
    library: TypeLibrary
    models: ModelServices | None
    registry: SkillRegistry | None
    # The executor's context pack decides which of a step's tools its code may call.
    packs: Mapping[str, ContextPack]
    # http.request's client, built once: loading the system's trust store into a TLS context
    # costs tens of ms, which every attempt serving the bridge would pay again.
    outbound: OutboundClient
    # The sealed step runtime every sandbox of this worker runs (FORGE_STEP_RUNTIME).
    runtime_root: Path = RUNTIME_DIR


def step_stream(run_id: str, step_key: str) -> str:
    """The step's event stream: its events, its usage ledger, its bridge and model calls."""
    return stream_id(run_id, "step", step_key)


@dataclass(frozen=True)
class StepAttempt:
    """One attempt of one step (in one pass of its loop), built once by step__execute.

    Every id the attempt's work carries is built here: its event ids and drafts, the logical
    paths of its receipts and programs, the call scope of its model calls, the run context its
    context packs see, the bridge policy of its step code and the provenance of its outputs.
    """

    inp: StepExecuteInput
    plan: CompiledPlan
    step: CompiledStep
    number: int
    workspace: Path
    # The step's dispatch packet: its execution contract holds the step's own timeout.
    packet: DispatchPacket

    @classmethod
    def begin(
        cls,
        inp: StepExecuteInput,
        plan: CompiledPlan,
        step: CompiledStep,
        *,
        number: int,
        runs_dir: Path,
    ) -> "StepAttempt":
        """The attempt, its workspace refused when the ids would place it outside runs_dir."""
        return cls(
            inp=inp,
            plan=plan,
            step=step,
            number=number,
            workspace=_workspace(runs_dir, inp, number),
            packet=next(p for p in plan.dispatch_packets if p.step_key == step.step_key),
        )

    @property
    def iteration(self) -> int:
        """Which pass of a loop this is (1 for a step without a loop)."""
        return self.inp.iteration

    @cached_property
    def params(self) -> dict[str, Scalar]:
        """The run's declared parameters, typed (meta/params.json); StepFailure if one is not."""
        return step_params(self.inp.step_key, self.plan.parameters, self.inp.params)

    @property
    def profile(self) -> ExecutionProfile:
        return self.plan.profile_snapshot.profile

    @property
    def stream_id(self) -> str:
        return step_stream(self.inp.run_id, self.inp.step_key)

    @property
    def started(self) -> str:
        """The attempt's step.started.v1 event: what the attempt's own work is caused by."""
        return self.event_id(STEP_STARTED, str(self.number))

    @property
    def skills_staging(self) -> Path:
        """Where the attempt's bound skills are staged, next to its workspace."""
        return self.workspace.parent / f"{self.workspace.name}.skills"

    @property
    def bridge_tool_ids(self) -> list[str]:
        """The step's allowed tools its code reaches through the bridge."""
        return [t for t in self.step.allowed_tool_ids if t != "sandbox.session"]

    def event_id(self, type_: str, suffix: str) -> str:
        if self.iteration > 1:
            # A loop's later passes: their own events (ids and payloads name the iteration).
            suffix = f"i{self.iteration}.{suffix}"
        return event_id(self.inp.run_id, type_, self.inp.step_key, suffix)

    def draft(
        self, type_: str, suffix: str, payload: FrozenModel, *, caused_by: str | None
    ) -> EventDraft:
        """An event of this attempt; its payload names the step and, after the first, the pass.

        `payload` is the type's catalogue model; its step_key and iteration are this
        attempt's (the iteration is stored only for a loop's later passes).
        """
        own: dict[str, object] = {"step_key": self.inp.step_key}
        if self.iteration > 1:
            own["iteration"] = self.iteration
        return EventDraft(
            event_id=self.event_id(type_, suffix),
            type=type_,
            scope=self.inp.scope,
            run_id=self.inp.run_id,
            caused_by=caused_by,
            timestamp=datetime.now(UTC),
            payload=payload_of(type_, payload.model_copy(update=own)),
        )

    def _tag(self) -> str:
        """The attempt in artifact paths; a loop's later passes name their iteration too."""
        return f"{self.number}" if self.iteration == 1 else f"i{self.iteration}.{self.number}"

    def receipt_path(self, phase: str) -> str:
        return f"meta/{self.inp.run_id}/receipts/{self.inp.step_key}.{phase}.{self._tag()}.json"

    def code_path(self) -> str:
        """The program that produced the accepted outputs."""
        return f"meta/{self.inp.run_id}/code/{self.inp.step_key}.{self._tag()}.py"

    def turn_code_path(self, turn: int) -> str:
        """The program of one executor turn."""
        return f"meta/{self.inp.run_id}/code/{self.inp.step_key}.{self.number}.turn-{turn}.py"

    def call_scope(self, call_key: str) -> CallScope:
        """Where a model call of this attempt is accounted, caused by the attempt's start."""
        return CallScope(
            scope=self.inp.scope,
            run_id=self.inp.run_id,
            stream_id=self.stream_id,
            step_key=self.inp.step_key,
            attempt=self.number,
            iteration=self.iteration,
            caused_by=self.started,
            call_key=call_key,
        )

    def run_context(self) -> RunContext:
        """What the attempt's context packs see of the run."""
        effort = self.inp.effort
        return RunContext(
            tenant_id=self.inp.scope.tenant,
            project_id=self.inp.scope.project,
            run_id=self.inp.run_id,
            safety_mode="confirm",
            snapshot_id=self.plan.library_snapshot_hash,
            facts={
                "backend": self.step.backend,
                "step_kind": self.step.kind,
                "effort": effort.tier if effort else "standard",
                "network": bool(self.profile.egress.allow),
                "egress_domains": sorted({r.domain for r in self.profile.egress.allow}),
                "iteration": self.iteration,
            },
        )

    def bridge_policy(self, allowed_tool_ids: list[str]) -> BridgePolicy:
        """What the attempt's step code may do through the bridge."""
        return BridgePolicy(
            run_id=self.inp.run_id,
            step_key=self.inp.step_key,
            attempt=self.number,
            iteration=self.iteration,
            contract_hash=self.step.contract_hash,
            allowed_tool_ids=allowed_tool_ids,
            bridge_call_budget=self.packet.execution_contract.bridge_call_budget,
            egress=self.profile.egress,
            scope=self.inp.scope,
        )

    def provenance(self, code_hash: str | None) -> Provenance:
        """Where the attempt's published outputs came from."""
        return Provenance(
            run_id=self.inp.run_id,
            step_key=self.step.step_key,
            contract_hash=self.step.contract_hash,
            input_hashes={p: r.sha256 for p, r in sorted(self.inp.inputs.items())},
            code_hash=code_hash,
            attempt=self.number,
        )


def _workspace(runs_dir: Path, inp: StepExecuteInput, attempt: int) -> Path:
    """The attempt's workspace; it must stay under runs/ whatever the ids say."""
    root = runs_dir.resolve()
    name = f"attempt-{attempt}" if inp.iteration == 1 else f"i{inp.iteration}-attempt-{attempt}"
    workspace = (root / inp.run_id / inp.step_key / name).resolve()
    if not workspace.is_relative_to(root) or workspace == root:
        raise step_failure(
            ErrorCode.CONTRACT_VIOLATION,
            f"workspace {workspace} escapes {root}",
            attempt=attempt,
            retryable=False,
        )
    return workspace
