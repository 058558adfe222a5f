"""The compile passes as Temporal activities: inputs and outputs travel by reference."""

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import activity

from activities.cancellation import heartbeating
from activities.compile.resolvers import WEAK, choose_skills_by_model, resolve_weak_steps
from activities.errors import compiler_failure, model_failure
from activities.models.base import ModelError
from activities.models.gateway import ModelGateway
from activities.store.artifacts import ArtifactStore
from activities.store.skills_registry import SkillRegistry, registry_skills_for
from compiler.errors import CompilerError
from compiler.plan.context import CompileContext, ProfileLayers, resolve_profile
from compiler.plan.parse import parse_candidate
from compiler.plan.passes.contracts import contracts
from compiler.plan.passes.freeze import freeze
from compiler.plan.passes.resolve import resolve
from compiler.plan.passes.skills import skill_candidates, skills
from compiler.plan.pipeline import PASSES, run_passes
from compiler.typesystem.library import TypeLibrary, with_skills
from schemas import names
from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel
from schemas.budget import BudgetLimits, Usage
from schemas.compiled import CompiledPlan, ContractPlan
from schemas.context import ContextPack, RunContext
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.event_ids import stream_id
from schemas.models import CallScope
from schemas.plan import ResolvedPlan
from schemas.profile import MODEL_BACKENDS, ConsumerBinding, ExecutionProfile
from schemas.run import CompileInput, CompileResult, FreezeResult, StepNode
from schemas.scope import Scope

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
Passed = tuple[FrozenModel, Usage]  # a pass's output and what its model calls spent
# Compiled once when a worker starts (nothing is stored): what the passes build on first use
# (validators, indexes, lazily imported modules) is built then, not in the first run.
WARM_UP_PLAN: dict[str, Any] = {
    "mission": "worker start: warm the compiler",
    "run_inputs": [],
    "steps": [
        {
            "step_key": "warm",
            "label": "Warm up",
            "objective": "Write a small JSON file.",
            "depends_on": [],
            "input_file_paths": [],
            "expected_outputs": [{"path": "output/warm.json"}],
            "code": "open('output/warm.json', 'w').write('{\"ok\": true}')\n",
            "domain_pack_ids": [],
            "workflow_pack_ids": [],
            "policy_profile_id": "strict.fail-closed.v1",
        }
    ],
}
_warmed = threading.Event()  # once per process: what warming builds is shared by every worker


class CompileActivities:
    """Passes B..E over documents in the artifact store; the type library is loaded once."""

    def __init__(
        self,
        artifacts: ArtifactStore,
        library: TypeLibrary,
        profiles: ProfileLayers,
        *,
        gateway: ModelGateway | None = None,
        packs: Mapping[str, ContextPack] | None = None,
        registry: SkillRegistry | None = None,
    ):
        self._artifacts = artifacts
        self._library = library
        self._profiles = profiles
        self._gateway = gateway
        self._packs = dict(packs or {})
        self._registry = registry

    def warm(self) -> None:
        """Compile WARM_UP_PLAN through every pass, once per process (a worker calls it)."""
        if _warmed.is_set():
            return
        ctx = CompileContext(library=self._library, profiles=self._profiles, profile_ref=None)
        try:
            run_passes(parse_candidate(WARM_UP_PLAN), ctx=ctx)
        except CompilerError as exc:
            # A warm-up is an optimisation: a worker whose default profile rejects this plan
            # still starts (its runs report their own problems).
            log.warning("compiler warm-up skipped: %s", str(exc).splitlines()[0])
        _warmed.set()

    def _ctx(self, inp: CompileInput) -> CompileContext:
        profiles = self._profiles
        ref = inp.profile_ref
        if inp.profile_document is not None:
            run_profile = ExecutionProfile.model_validate(inp.profile_document)
            profiles = profiles.model_copy(update={"run": {run_profile.profile_id: run_profile}})
            ref = run_profile.profile_id
        library = self._library
        if self._registry is not None:
            # The tenant's registered skills join the stdlib and pack skills (which win a clash).
            merged = registry_skills_for(self._registry, inp.scope.tenant, library.skills)
            library = with_skills(library, merged.skills)
        return CompileContext(library=library, profiles=profiles, profile_ref=ref)

    def _model_call(
        self, inp: CompileInput, ctx: CompileContext, phase: str, pack: str
    ) -> tuple[ConsumerBinding, ContextPack, RunContext, CallScope] | None:
        """What a Pass B/D model call needs, or None when this compile has no model to ask."""
        if self._gateway is None or inp.cause_event_id is None or pack not in self._packs:
            return None
        binding = resolve_profile(ctx).profile.planner_phase_bindings.get(phase)
        if binding is None:
            return None
        run_context = RunContext(
            tenant_id=inp.scope.tenant,
            project_id=inp.scope.project,
            run_id=inp.run_id,
            safety_mode="confirm",
            snapshot_id=ctx.library.snapshot_hash,
            facts={"phase": phase},
        )
        scope = CallScope(
            scope=inp.scope,
            run_id=inp.run_id,
            stream_id=stream_id(inp.run_id, "compile"),
            caused_by=inp.cause_event_id,
            call_key=phase,
        )
        return binding, self._packs[pack], run_context, scope

    def load(self, scope: Scope, ref: ArtifactRef, model: type[M]) -> M:
        data = self._artifacts.read_bytes(scope, ref.sha256, MAX_DOCUMENT_BYTES)
        return model.model_validate_json(data)

    def _store(self, inp: CompileInput, name: str, model: BaseModel) -> ArtifactRef:
        return self._artifacts.put_bytes(
            inp.scope,
            model.model_dump_json().encode("utf-8"),
            logical_path=f"meta/{inp.run_id}/{name}.json",
            media_type="application/json",
        )

    # ---- the passes over models: what a pass activity and compile__passes share ----------

    def _document(self, inp: CompileInput) -> object:
        """Pass A intake: the candidate plan document the run was started with."""
        raw = self._artifacts.read_bytes(inp.scope, inp.source_ref.sha256, MAX_DOCUMENT_BYTES)
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ForgeError(
                f"the plan is not JSON: {exc}", code=ErrorCode.COMPILER_ERROR
            ) from None

    def _resolve(self, inp: CompileInput, ctx: CompileContext, document: object) -> Passed:
        """Pass B (deterministic resolution, then the resolver model for weak steps)."""
        try:
            candidate = parse_candidate(document)
            resolved = resolve(candidate, ctx=ctx)
        except CompilerError as exc:
            raise compiler_failure(exc) from None
        asked = self._model_call(inp, ctx, "pass_b", "resolver")
        spent: list[Usage] = []
        if asked is not None and any(s.resolution_status in WEAK for s in resolved.steps):
            binding, pack, run_context, scope = asked
            try:
                resolved = resolve_weak_steps(
                    candidate,
                    resolved,
                    ctx=ctx,
                    gateway=self._gateway_or_fail(),
                    pack=pack,
                    binding=binding,
                    run_context=run_context,
                    scope=scope,
                    spent=spent,
                )
            except ModelError as exc:
                raise model_failure(exc) from None
            except CompilerError as exc:
                raise compiler_failure(exc) from None
        return resolved, _total(spent)

    def _contracts(self, _inp: CompileInput, ctx: CompileContext, source: ResolvedPlan) -> Passed:
        """Pass C: frozen, hashed step contracts."""
        try:
            return contracts(source, ctx=ctx), Usage()
        except CompilerError as exc:
            raise compiler_failure(exc) from None

    def _skills(self, inp: CompileInput, ctx: CompileContext, source: ContractPlan) -> Passed:
        """Pass D: tools, execution mode and skills; contracts re-hashed.

        With a model, the skill resolver chooses each step's skills among what discovery offers.
        """
        choices: dict[str, list[str]] | None = None
        spent: list[Usage] = []
        asked = self._model_call(inp, ctx, "pass_d", "skill_resolver")
        offered = skill_candidates(source, ctx=ctx)
        if asked is not None and any(offered.values()):
            binding, pack, run_context, scope = asked
            try:
                choices = choose_skills_by_model(
                    offered,
                    gateway=self._gateway_or_fail(),
                    pack=pack,
                    binding=binding,
                    run_context=run_context,
                    scope=scope,
                    step_texts={s.step_key: f"{s.label}. {s.objective}" for s in source.steps},
                    spent=spent,
                )
            except ModelError as exc:
                raise model_failure(exc) from None
        try:
            return skills(source, ctx=ctx, choices=choices), _total(spent)
        except CompilerError as exc:
            raise compiler_failure(exc) from None

    def _freeze(self, _inp: CompileInput, ctx: CompileContext, source: ContractPlan) -> Passed:
        """Pass E: freeze the execution profile and emit dispatch packets."""
        try:
            return freeze(source, ctx=ctx), Usage()
        except CompilerError as exc:
            raise compiler_failure(exc) from None

    def _frozen(self, inp: CompileInput, compiled: CompiledPlan, usage: Usage) -> FreezeResult:
        """The compiled plan stored, and what the workflow schedules from."""
        ref = self._store(inp, "compiled_plan", compiled)
        return freeze_result(ref, compiled, step_nodes(compiled), usage)

    def _pass(self, name: str) -> Callable[[CompileInput, CompileContext, Any], Passed]:
        runner: Callable[[CompileInput, CompileContext, Any], Passed] = getattr(self, f"_{name}")
        return runner

    # ---- the activities --------------------------------------------------------------------

    @activity.defn(name=names.COMPILE_PASSES)
    @heartbeating
    def compile_passes(self, inp: CompileInput) -> FreezeResult:
        """Passes B..E in one activity, in compiler/plan/pipeline.py's order.

        One activity instead of one per pass: each pass activity cost a workflow task and a
        store round trip. Only the compiled plan is stored (`forge explain` recomputes the
        stages); the model passes' usage is summed into the result.
        """
        ctx = self._ctx(inp)
        current: Any = self._document(inp)
        usage = Usage()
        for _, fn in PASSES:
            current, spent = self._pass(fn.__name__)(inp, ctx, current)
            usage = usage.plus(spent)
        assert isinstance(current, CompiledPlan)
        return self._frozen(inp, current, usage)

    @activity.defn(name=names.COMPILE_RESOLVE)
    def resolve(self, inp: CompileInput) -> CompileResult:
        """Pass A intake and Pass B (runs started before compile__passes)."""
        resolved, usage = self._resolve(inp, self._ctx(inp), self._document(inp))
        return CompileResult(output_ref=self._store(inp, "resolved", resolved), usage=usage)

    def _gateway_or_fail(self) -> ModelGateway:
        assert self._gateway is not None
        return self._gateway

    @activity.defn(name=names.COMPILE_CONTRACTS)
    def contracts(self, inp: CompileInput) -> CompileResult:
        """Pass C (runs started before compile__passes)."""
        plan, _ = self._contracts(
            inp, self._ctx(inp), self.load(inp.scope, inp.source_ref, ResolvedPlan)
        )
        return CompileResult(output_ref=self._store(inp, "contracts", plan))

    @activity.defn(name=names.COMPILE_SKILLS)
    def skills(self, inp: CompileInput) -> CompileResult:
        """Pass D (runs started before compile__passes)."""
        plan, usage = self._skills(
            inp, self._ctx(inp), self.load(inp.scope, inp.source_ref, ContractPlan)
        )
        return CompileResult(output_ref=self._store(inp, "skills", plan), usage=usage)

    @activity.defn(name=names.COMPILE_FREEZE)
    def freeze(self, inp: CompileInput) -> FreezeResult:
        """Pass E and the compiled plan stored (runs started before compile__passes)."""
        compiled, _ = self._freeze(
            inp, self._ctx(inp), self.load(inp.scope, inp.source_ref, ContractPlan)
        )
        assert isinstance(compiled, CompiledPlan)
        return self._frozen(inp, compiled, Usage())


def _total(spent: list[Usage]) -> Usage:
    total = Usage()
    for one in spent:
        total = total.plus(one)
    return total


def freeze_result(
    ref: ArtifactRef, compiled: CompiledPlan, nodes: list[StepNode], usage: Usage | None = None
) -> FreezeResult:
    """What the workflow schedules from: the stored plan's ref, its nodes, the profile's caps."""
    budgets = compiled.profile_snapshot.profile.budgets
    return FreezeResult(
        compiled_ref=ref,
        plan_hash=compiled.plan_hash,
        nodes=nodes,
        max_parallel=budgets.max_parallel_steps,
        history_threshold=budgets.history_event_threshold,
        profile_id=compiled.profile_snapshot.profile_id,
        gates=compiled.gates,
        budget=BudgetLimits(
            max_tokens=budgets.max_tokens_per_run, max_cost_usd=budgets.max_cost_usd_per_run
        ),
        usage=usage or Usage(),
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
            model_provider=_model_provider(plan, s.backend),
        )
        for s in plan.steps
    ]


def _model_provider(plan: CompiledPlan, backend: str) -> str | None:
    """The provider whose workers may take a model step (its queue); None for code steps.

    A model backend the profile binds no model for stays on the run's queue, where the step
    fails with the profile's missing binding named.
    """
    if backend not in MODEL_BACKENDS:
        return None
    binding = plan.profile_snapshot.profile.executor_by_backend.get(backend)
    return names.provider_of(binding.model_binding_ref) if binding is not None else None
