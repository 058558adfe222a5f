"""The compile passes as Temporal activities: inputs and outputs travel by reference."""

import json
from typing import TypeVar

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.errors import compiler_failure
from activities.store.artifacts import ArtifactStore
from compiler.errors import CompilerError
from compiler.plan.context import CompileContext, ProfileLayers
from compiler.plan.parse import parse_candidate
from compiler.plan.passes.contracts import contracts
from compiler.plan.passes.freeze import freeze
from compiler.plan.passes.resolve import resolve
from compiler.plan.passes.skills import skills
from compiler.typesystem.library import TypeLibrary
from schemas.artifacts import ArtifactRef
from schemas.budget import BudgetLimits
from schemas.compiled import CompiledPlan, ContractPlan
from schemas.plan import ResolvedPlan
from schemas.profile import ExecutionProfile
from schemas.run import CompileInput, CompileResult, FreezeResult, StepNode

M = TypeVar("M", bound=BaseModel)
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


class CompileActivities:
    """Passes B..E over documents in the artifact store; the type library is loaded once."""

    def __init__(self, artifacts: ArtifactStore, library: TypeLibrary, profiles: ProfileLayers):
        self._artifacts = artifacts
        self._library = library
        self._profiles = profiles

    def _ctx(self, inp: CompileInput) -> CompileContext:
        profiles = self._profiles
        ref = inp.profile_ref
        if inp.profile_document is not None:
            run_profile = ExecutionProfile.model_validate(inp.profile_document)
            profiles = profiles.model_copy(update={"run": {run_profile.profile_id: run_profile}})
            ref = run_profile.profile_id
        return CompileContext(library=self._library, profiles=profiles, profile_ref=ref)

    def load(self, ref: ArtifactRef, model: type[M]) -> M:
        return model.model_validate_json(self._artifacts.read_bytes(ref.sha256, MAX_DOCUMENT_BYTES))

    def _store(self, run_id: str, name: str, model: BaseModel) -> ArtifactRef:
        return self._artifacts.put_bytes(
            model.model_dump_json().encode("utf-8"),
            logical_path=f"meta/{run_id}/{name}.json",
            media_type="application/json",
        )

    @activity.defn(name="compile__resolve")
    def resolve(self, inp: CompileInput) -> CompileResult:
        """Pass A intake and Pass B (deterministic resolution)."""
        raw = self._artifacts.read_bytes(inp.source_ref.sha256, MAX_DOCUMENT_BYTES)
        try:
            document = json.loads(raw)
        except ValueError as exc:
            raise ApplicationError(
                f"the plan is not JSON: {exc}", type="CompilerError", non_retryable=True
            ) from None
        try:
            resolved = resolve(parse_candidate(document), ctx=self._ctx(inp))
        except CompilerError as exc:
            raise compiler_failure(exc) from None
        return CompileResult(output_ref=self._store(inp.run_id, "resolved", resolved))

    @activity.defn(name="compile__contracts")
    def contracts(self, inp: CompileInput) -> CompileResult:
        """Pass C: frozen, hashed step contracts."""
        try:
            plan = contracts(self.load(inp.source_ref, ResolvedPlan), ctx=self._ctx(inp))
        except CompilerError as exc:
            raise compiler_failure(exc) from None
        return CompileResult(output_ref=self._store(inp.run_id, "contracts", plan))

    @activity.defn(name="compile__skills")
    def skills(self, inp: CompileInput) -> CompileResult:
        """Pass D (deterministic part): tools and execution mode, contracts re-hashed."""
        plan = skills(self.load(inp.source_ref, ContractPlan), ctx=self._ctx(inp))
        return CompileResult(output_ref=self._store(inp.run_id, "skills", plan))

    @activity.defn(name="compile__freeze")
    def freeze(self, inp: CompileInput) -> FreezeResult:
        """Pass E: freeze the execution profile, emit dispatch packets, store the compiled plan."""
        try:
            compiled = freeze(self.load(inp.source_ref, ContractPlan), ctx=self._ctx(inp))
        except CompilerError as exc:
            raise compiler_failure(exc) from None
        ref = self._store(inp.run_id, "compiled_plan", compiled)
        budgets = compiled.profile_snapshot.profile.budgets
        return FreezeResult(
            compiled_ref=ref,
            plan_hash=compiled.plan_hash,
            nodes=step_nodes(compiled),
            max_parallel=budgets.max_parallel_steps,
            history_threshold=budgets.history_event_threshold,
            profile_id=compiled.profile_snapshot.profile_id,
            gates=compiled.gates,
            budget=BudgetLimits(
                max_tokens=budgets.max_tokens_per_run, max_cost_usd=budgets.max_cost_usd_per_run
            ),
        )


def step_nodes(plan: CompiledPlan) -> list[StepNode]:
    """The scheduling view of each step, in topological order."""
    packets = {p.step_key: p for p in plan.dispatch_packets}
    gate_of = {k: g.gate_id for g in plan.gates for k in g.gated_step_keys}
    return [
        StepNode(
            step_key=s.step_key,
            step_id=s.step_id,
            depends_on=list(s.depends_on),
            contract_hash=s.contract_hash,
            kind=s.kind,
            backend=s.backend,
            read_paths=list(s.executable_contract_v2.read_paths),
            write_paths=list(s.executable_contract_v2.write_paths),
            max_attempts=s.repair_policy.max_retries + 1,
            timeout_s=packets[s.step_key].execution_contract.timeout_s,
            gate_id=gate_of.get(s.step_key),
            projected=packets[s.step_key].execution_contract.projected,
            tool_budget=packets[s.step_key].execution_contract.tool_budget,
            source_recipe=s.source_recipe,
            loop=s.loop,
            uses_recipe=s.uses_recipe,
        )
        for s in plan.steps
    ]
