"""Pass A with a model (compile__plan), and the model fallbacks of Pass B and Pass D.

compile__plan gives the planner binding (planner_phase_bindings.pass_a) the objective, the
compact pack catalogue, the recipes that matched weakly and the input files' receipts, and the
Pass A template to fill. The answer must survive template intake, the ladder and a dry compile;
if not, the repair binding gets the problems and its previous answer, at most MAX_REPAIRS times,
after which the plan is rejected (PLAN_REJECTED) with every reason.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio import activity

from activities.cancellation import heartbeating
from activities.harness.receipts import build_receipt
from activities.masked_output import clipped
from activities.models.base import ModelError
from activities.models.gateway import ModelGateway
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from compiler.context import compile_context
from compiler.plan.context import CompileContext, ProfileLayers, resolve_profile
from compiler.plan.planner import MAX_REPAIRS, candidate_from_answer, catalogue, planner_template
from compiler.typesystem.library import TypeLibrary
from schemas import names
from schemas.base import FrozenModel
from schemas.budget import Usage
from schemas.context import Block, ContextPack, EvidenceRef, InvokeRequest, RunContext
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.event_catalogue import PLAN_DRAFTED, payload_of
from schemas.event_catalogue import PLAN_REJECTED as PLAN_REJECTED_EVENT
from schemas.event_ids import event_id, stream_id
from schemas.events import EventDraft
from schemas.models import CallScope, Consumer, Message, ModelRequest, TextBlock
from schemas.plan import Scalar
from schemas.profile import ConsumerBinding, ExecutionProfile
from schemas.run import PlanInput, PlanResult
from schemas.run_events import PlanDrafted, PlanRejected

INPUT_PEEK_BYTES = 8 * 1024 * 1024
PLAN_REJECTED = ErrorCode.PLAN_REJECTED


def model_request(
    binding: ConsumerBinding, consumer: Consumer, system: str, messages: list[Message]
) -> ModelRequest:
    """A request under a binding's runtime overrides (extended thinking only when enabled)."""
    o = binding.runtime_overrides
    return ModelRequest(
        model=binding.model_binding_ref,
        consumer=consumer,
        system=system,
        messages=messages,
        max_tokens=o.max_tokens or 8192,
        temperature=o.temperature,
        thinking_budget_tokens=o.thinking_budget_tokens if o.use_extended_thinking else None,
        timeout_s=o.timeout_ms / 1000 if o.timeout_ms else None,
    )


def parameters_text(given: Mapping[str, Scalar]) -> str:
    """What the planner is told about run parameters, with the values the user gave."""
    lines = [
        "Run parameters: declare in `parameters` every value the user might change from one run "
        "to the next (dates, periods, thresholds, limits, names, currencies), with its type and "
        "a default, and say in each step's objective which parameters it reads; the steps' code "
        'reads them with forge_bridge.param("name") instead of writing the value into the code.'
    ]
    if given:
        lines.append("The user started this run with (declare each, with a fitting type):")
        lines += [f"- {name} = {json.dumps(value)}" for name, value in sorted(given.items())]
    else:
        lines.append("The user gave no parameter values: declare defaults for what you declare.")
    return "\n".join(lines)


class PlannerActivities:
    """compile__plan: objective -> compiling PlannerCandidate (stored) through the planner model."""

    def __init__(
        self,
        artifacts: ArtifactStore,
        events: EventStore,
        library: TypeLibrary,
        profiles: ProfileLayers,
        *,
        gateway: ModelGateway | None,
        packs: Mapping[str, ContextPack],
    ) -> None:
        self._artifacts = artifacts
        self._events = events
        self._library = library
        self._profiles = profiles
        self._gateway = gateway
        self._packs = packs

    def _ctx(self, inp: PlanInput) -> CompileContext:
        profiles, ref = self._profiles, inp.profile_ref
        if inp.profile_document is not None:
            run_profile = ExecutionProfile.model_validate(inp.profile_document)
            profiles = profiles.model_copy(update={"run": {run_profile.profile_id: run_profile}})
            ref = run_profile.profile_id
        return CompileContext(library=self._library, profiles=profiles, profile_ref=ref)

    @activity.defn(name=names.COMPILE_PLAN)
    @heartbeating
    def plan(self, inp: PlanInput) -> PlanResult:
        """Pass A: fill the planner template; repair within bounds; reject with reasons."""
        if self._gateway is None:
            alternatives = f" (recipes that matched weakly: {', '.join(inp.hints)})" * bool(
                inp.hints
            )
            raise ForgeError(
                "this objective needs the planner model and the worker has no model provider: "
                "set ANTHROPIC_API_KEY (or FORGE_MODEL_SCRIPT to a script file) and restart the "
                "worker, start the run with a plan (forge run PLAN.json), or reword the objective "
                f"so one recipe matches clearly (forge recipes match TEXT){alternatives}",
                code=ErrorCode.PLANNER_UNAVAILABLE,
                details=inp.hints,
            )
        ctx = self._ctx(inp)
        profile = resolve_profile(ctx).profile
        bindings = profile.planner_phase_bindings
        if "pass_a" not in bindings:
            raise ForgeError(
                f"execution profile {profile.profile_id} binds no planner model "
                "(planner_phase_bindings.pass_a)",
                code=ErrorCode.PLANNER_UNAVAILABLE,
            )
        run_inputs, evidence = self._inputs(inp)
        mode = profile.validation.phases.get("planner_candidate")
        phase_mode = mode.mode if mode is not None else "block"
        run_ctx = RunContext(
            tenant_id=inp.scope.tenant,
            project_id=inp.scope.project,
            run_id=inp.run_id,
            safety_mode="confirm",
            snapshot_id=self._library.snapshot_hash,
            facts={"phase": "pass_a", "inputs": len(run_inputs)},
        )
        context = compile_context(
            self._packs["planner"],
            run_ctx,
            InvokeRequest(
                intent_id="forge.plan",
                message=f"Objective: {inp.objective}",
                sections=self._sections(inp, run_inputs),
            ),
            evidence=lambda _q: evidence,
        )
        messages = [Message(role="user", content=[TextBlock(text=context.task_prompt)])]
        scope = CallScope(
            scope=inp.scope,
            run_id=inp.run_id,
            stream_id=stream_id(inp.run_id, "plan"),
            caused_by=inp.cause_event_id,
            call_key="plan:0",
        )
        history: list[list[str]] = []
        spent = Usage()
        binding, system = bindings["pass_a"], context.system_prompt
        consumer: Consumer = "planner"
        asked = context  # the compiled context of the prompt being sent
        for attempt in range(MAX_REPAIRS + 1):
            try:
                result = self._gateway.call(
                    model_request(binding, consumer, system, messages), scope, context=asked
                )
            except ModelError as exc:
                raise ForgeError(
                    f"planner call failed: {exc.message}", code=exc.code, retryable=exc.retryable
                ) from None
            spent = spent.plus(result.usage())
            answer = result.response.text
            candidate, problems = candidate_from_answer(
                answer, ctx=ctx, run_inputs=run_inputs, phase_mode=phase_mode, params=inp.params
            )
            if candidate is not None:
                ref = self._artifacts.put_bytes(
                    inp.scope,
                    candidate.model_dump_json(indent=2).encode("utf-8"),
                    logical_path=f"meta/{inp.run_id}/planned.json",
                    media_type="application/json",
                )
                self._event(
                    inp,
                    PLAN_DRAFTED,
                    "drafted",
                    PlanDrafted(
                        candidate_ref=ref,
                        mission=candidate.mission,
                        steps=[s.step_key for s in candidate.steps],
                        repairs=attempt,
                        problems_repaired=history,
                        model_call_id=result.model_call_id,
                    ),
                )
                return PlanResult(
                    candidate_ref=ref,
                    mission=candidate.mission,
                    steps=len(candidate.steps),
                    repairs=attempt,
                    usage=spent,
                )
            history.append(problems)
            repair = bindings.get("repair", binding)
            repair_context = compile_context(
                self._packs["repair"],
                run_ctx.model_copy(update={"facts": {"phase": "repair", "attempt": attempt + 1}}),
                InvokeRequest(
                    intent_id="forge.repair",
                    message="Repair the plan: fix every problem below and answer with the whole "
                    "filled template again, JSON only.",
                    sections=[
                        Block(
                            kind="problems",
                            text="Problems:\n" + "\n".join(f"- {p}" for p in problems[:30]),
                            priority=100,
                        ),
                        Block(
                            kind="previous",
                            text="Your previous answer:\n" + clipped(answer, 30000, "prompt"),
                            priority=90,
                        ),
                    ],
                ),
            )
            messages = [
                *messages[:1],
                Message(role="assistant", content=[TextBlock(text=answer or "(empty)")]),
                Message(role="user", content=[TextBlock(text=repair_context.task_prompt)]),
            ]
            binding, system, consumer = repair, repair_context.system_prompt, "repair"
            asked = repair_context
            scope = scope.model_copy(update={"call_key": f"plan:repair:{attempt + 1}"})
        reasons = [p for problems in history for p in problems]
        self._event(inp, PLAN_REJECTED_EVENT, "rejected", PlanRejected(reasons=reasons[:50]))
        raise ForgeError(
            f"the planner's plan was rejected after {MAX_REPAIRS} repairs: "
            + "; ".join(history[-1][:8]),
            code=PLAN_REJECTED,
            details=[{"reasons": reasons[:50]}],
        )

    def _inputs(self, inp: PlanInput) -> tuple[list[dict[str, Any]], list[EvidenceRef]]:
        """Run input declarations and their receipts (schema summaries) as planner evidence."""
        decls = []
        with tempfile.TemporaryDirectory(prefix="forge-plan-") as tmp:
            root = Path(tmp)
            files = []
            for name, ref in sorted(inp.inputs.items()):
                path = ref.path if ref.path.startswith("input/") else f"input/{Path(ref.path).name}"
                decls.append({"name": name, "path": path})
                dest = root / path
                dest.parent.mkdir(parents=True, exist_ok=True)
                self._artifacts.get_to_file(inp.scope, ref.sha256, dest)
                files.append((path, None))
            receipt = build_receipt(
                root, files, step_id="plan", step_key="plan", contract_hash="", phase="preflight"
            )
        refs = [
            EvidenceRef(
                id=f"input:{f.path}",
                class_="run_input",
                classification="INTERNAL",
                payload_hash=f.sha256 or "",
                snapshot_id=self._library.snapshot_hash,
                summary="run input "
                + json.dumps(
                    {"path": f.path, "size_bytes": f.size_bytes, "schema": f.schema_summary},
                    sort_keys=True,
                    default=str,
                ),
                priority=80,
            )
            for f in receipt.files
        ]
        return decls, refs

    def _sections(self, inp: PlanInput, run_inputs: list[dict[str, Any]]) -> list[Block]:
        inputs = "\n".join(f"- {d['path']} (run input {d['name']})" for d in run_inputs)
        blocks = [
            Block(kind="template", text="Fill this template:\n" + planner_template(), priority=100),
            Block(
                kind="inputs",
                text="Run inputs (read them from these paths):\n" + (inputs or "- none"),
                priority=95,
            ),
            Block(kind="parameters", text=parameters_text(inp.params), priority=90),
            Block(kind="catalogue", text=catalogue(self._library), priority=60),
        ]
        if inp.hints:
            blocks.append(
                Block(
                    kind="recipes",
                    text="Recipes that matched weakly (use their shape if it fits):\n"
                    + "\n".join(f"- {h}" for h in inp.hints[:10]),
                    priority=70,
                )
            )
        return blocks

    def _event(self, inp: PlanInput, type_: str, suffix: str, payload: FrozenModel) -> None:
        self._events.append(
            [
                EventDraft(
                    event_id=event_id(inp.run_id, type_, suffix),
                    type=type_,
                    scope=inp.scope,
                    run_id=inp.run_id,
                    caused_by=inp.cause_event_id,
                    timestamp=datetime.now(UTC),
                    payload=payload_of(type_, payload),
                )
            ],
            stream_id=stream_id(inp.run_id, "plan"),
        )
