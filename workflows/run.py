"""CompiledRunWorkflow: compile a plan through activities, then run its DAG of step contracts."""

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from schemas.artifacts import ArtifactRef
    from schemas.events import EventDraft
    from schemas.run import (
        AppendEventsInput,
        AppendEventsResult,
        CompileInput,
        CompileResult,
        FinalizeInput,
        FinalizeResult,
        FreezeResult,
        RunCarry,
        RunInput,
        RunResult,
        RunStatus,
        RunStatusView,
        StepError,
        StepExecuteInput,
        StepExecuteResult,
        StepNode,
        StepState,
    )
    from workflows import policies

WORKFLOW_NAME = "CompiledRunWorkflow"


@workflow.defn(name=WORKFLOW_NAME)
class CompiledRunWorkflow:
    """One compiled run: passes B..E as activities, then every step through the harness."""

    def __init__(self) -> None:
        self._run_id = ""
        self._status: RunStatus = "compiling"
        self._plan_hash: str | None = None
        self._nodes: list[StepNode] = []
        self._states: dict[str, StepState] = {}
        self._generation = 1

    @workflow.query(name="status")
    def status(self) -> RunStatusView:
        """The plan with per-step state, attempts, timings and receipt summaries."""
        return RunStatusView(
            run_id=self._run_id,
            status=self._status,
            plan_hash=self._plan_hash,
            generation=self._generation,
            steps=[self._states[n.step_key] for n in self._nodes],
            order=[n.step_key for n in self._nodes],
        )

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        self._run_id = inp.run_id
        if inp.carry is not None:
            carry = inp.carry
            self._generation = carry.generation
        else:
            root = await self._emit(
                inp,
                "run.started.v1",
                "run",
                None,
                {
                    "plan_ref": inp.plan_ref.model_dump(mode="json"),
                    "inputs": sorted(inp.inputs),
                    "profile": inp.profile_ref,
                },
            )
            carry = await self._compile(inp, root)
        self._plan_hash = carry.plan_hash
        self._nodes = carry.nodes
        self._states = dict(carry.states)
        self._status = "running"
        try:
            await self._run_dag(inp, carry)
        except asyncio.CancelledError:
            await self._cancelled(inp, carry)
            raise
        return await self._finish(inp, carry)

    async def _cancelled(self, inp: RunInput, carry: RunCarry) -> None:
        """Record what the cancellation stopped; published outputs are never taken back."""
        self._status = "cancelled"
        stopped = []
        for key, st in self._states.items():
            if st.status in ("pending", "in_progress"):
                stopped.append(key)
                self._states[key] = st.model_copy(
                    update={"status": "skipped", "skipped_because": "run cancelled"}
                )
        await self._emit(
            inp,
            "run.cancelled.v1",
            "run",
            carry.root_event_id,
            {
                "stopped_steps": stopped,
            },
        )

    async def _compile(self, inp: RunInput, root: str) -> RunCarry:
        compile_in = {"profile_ref": inp.profile_ref, "profile_document": inp.profile_document}
        try:
            ref = inp.plan_ref
            for name in ("compile__resolve", "compile__contracts", "compile__skills"):
                done = await workflow.execute_activity(
                    name,
                    CompileInput(run_id=inp.run_id, source_ref=ref, **compile_in),
                    result_type=CompileResult,
                    start_to_close_timeout=policies.COMPILE_TIMEOUT,
                    retry_policy=policies.COMPILE_RETRY,
                )
                ref = done.output_ref
            frozen = await workflow.execute_activity(
                "compile__freeze",
                CompileInput(run_id=inp.run_id, source_ref=ref, **compile_in),
                result_type=FreezeResult,
                start_to_close_timeout=policies.COMPILE_TIMEOUT,
                retry_policy=policies.COMPILE_RETRY,
            )
        except ActivityError as err:
            await self._fail_run(inp, root, "compile", err)
            raise ApplicationError(
                f"plan rejected by the compiler: {_cause_message(err)}",
                type=policies.COMPILER_ERROR,
                non_retryable=True,
            ) from err
        compiled = await self._emit(
            inp,
            "run.compiled.v1",
            "run",
            root,
            {
                "plan_hash": frozen.plan_hash,
                "profile_id": frozen.profile_id,
                "steps": [n.step_key for n in frozen.nodes],
            },
        )
        return RunCarry(
            compiled_ref=frozen.compiled_ref,
            plan_hash=frozen.plan_hash,
            nodes=frozen.nodes,
            states={n.step_key: StepState(step_key=n.step_key) for n in frozen.nodes},
            max_parallel=frozen.max_parallel,
            history_threshold=inp.history_threshold or frozen.history_threshold,
            root_event_id=compiled,
            generation=1,
        )

    async def _run_dag(self, inp: RunInput, carry: RunCarry) -> None:
        running: dict[str, asyncio.Task[StepExecuteResult]] = {}
        while True:
            if not running and self._should_continue_as_new(carry):
                workflow.continue_as_new(inp.model_copy(update={"carry": self._carry(carry)}))
            for node in self._ready():
                if len(running) >= carry.max_parallel:
                    break
                running[node.step_key] = self._start_step(inp, carry, node)
            if not running:
                return
            await workflow.wait(list(running.values()), return_when=asyncio.FIRST_COMPLETED)
            for key in [k for k, t in running.items() if t.done()]:
                self._settle(key, running.pop(key))
            if self._should_continue_as_new(carry) and running:
                # Drain what is in flight before continuing as new; start nothing more.
                await workflow.wait(list(running.values()))
                for key in list(running):
                    self._settle(key, running.pop(key))

    def _ready(self) -> list[StepNode]:
        ready = []
        for node in self._nodes:
            if self._states[node.step_key].status != "pending":
                continue
            if all(self._states[d].status == "done" for d in node.depends_on):
                ready.append(node)
        return ready

    def _start_step(
        self, inp: RunInput, carry: RunCarry, node: StepNode
    ) -> "asyncio.Task[StepExecuteResult]":
        self._states[node.step_key] = self._states[node.step_key].model_copy(
            update={"status": "in_progress", "started_at": workflow.now()}
        )
        step_in = StepExecuteInput(
            run_id=inp.run_id,
            tenant_id=inp.tenant_id,
            project_id=inp.project_id,
            compiled_ref=carry.compiled_ref,
            step_key=node.step_key,
            inputs=self._inputs_for(inp, node),
            cause_event_id=carry.root_event_id,
        )
        return asyncio.ensure_future(
            workflow.execute_activity(
                "step__execute",
                step_in,
                result_type=StepExecuteResult,
                start_to_close_timeout=_step_timeout(node),
                heartbeat_timeout=policies.STEP_HEARTBEAT_TIMEOUT,
                retry_policy=policies.step_retry(node.max_attempts),
                activity_id=f"{node.step_key}",
            )
        )

    def _inputs_for(self, inp: RunInput, node: StepNode) -> dict[str, ArtifactRef]:
        """Every read path of the step, from the run's inputs or an upstream step's outputs."""
        available: dict[str, ArtifactRef] = {}
        for ref in inp.inputs.values():
            available[ref.path] = ref
        for state in self._states.values():
            for ref in state.outputs:
                available[ref.path] = ref
        return {p: available[p] for p in node.read_paths if p in available}

    def _settle(self, key: str, task: "asyncio.Task[StepExecuteResult]") -> None:
        state = self._states[key]
        now = workflow.now()
        try:
            result = task.result()
        except ActivityError as err:
            cause = err.cause
            failure = cause.type if isinstance(cause, ApplicationError) and cause.type else "ERROR"
            attempts = _attempts(err)
            self._states[key] = state.model_copy(
                update={
                    "status": "error",
                    "finished_at": now,
                    "attempts": attempts,
                    "error": StepError(failure_class=failure, message=_cause_message(err)),
                }
            )
            self._skip_dependents(key)
            return
        self._states[key] = state.model_copy(
            update={
                "status": "done",
                "finished_at": now,
                "attempts": result.attempt,
                "outputs": result.outputs,
                "receipt": result.receipt_summary,
            }
        )

    def _skip_dependents(self, failed: str) -> None:
        changed = True
        while changed:
            changed = False
            for node in self._nodes:
                st = self._states[node.step_key]
                if st.status != "pending":
                    continue
                blocked = [
                    d for d in node.depends_on if self._states[d].status in ("error", "skipped")
                ]
                if blocked:
                    root = failed if failed in blocked else blocked[0]
                    reason = f"upstream step {root!r} " + (
                        "failed" if self._states[root].status == "error" else "was skipped"
                    )
                    self._states[node.step_key] = st.model_copy(
                        update={"status": "skipped", "skipped_because": reason}
                    )
                    changed = True

    def _should_continue_as_new(self, carry: RunCarry) -> bool:
        info = workflow.info()
        pending = any(s.status in ("pending", "in_progress") for s in self._states.values())
        return pending and (
            info.get_current_history_length() >= carry.history_threshold
            or info.is_continue_as_new_suggested()
        )

    def _carry(self, carry: RunCarry) -> RunCarry:
        return carry.model_copy(
            update={
                "states": dict(self._states),
                "generation": self._generation + 1,
            }
        )

    async def _finish(self, inp: RunInput, carry: RunCarry) -> RunResult:
        failed = [k for k, s in self._states.items() if s.status == "error"]
        skipped = {
            k: s.skipped_because or "" for k, s in self._states.items() if s.status == "skipped"
        }
        outputs = [ref for n in self._nodes for ref in self._states[n.step_key].outputs]
        for key, reason in skipped.items():
            await self._emit(
                inp,
                "step.skipped.v1",
                f"step:{key}",
                carry.root_event_id,
                {
                    "step_key": key,
                    "reason": reason,
                },
            )
        if failed:
            self._status = "failed"
            await self._emit(
                inp,
                "run.failed.v1",
                "run",
                carry.root_event_id,
                {
                    "failed_steps": failed,
                    "skipped_steps": skipped,
                },
            )
        else:
            final = await workflow.execute_activity(
                "run__finalize",
                FinalizeInput(
                    run_id=inp.run_id,
                    tenant_id=inp.tenant_id,
                    project_id=inp.project_id,
                    compiled_ref=carry.compiled_ref,
                    outputs=outputs,
                    cause_event_id=carry.root_event_id,
                ),
                result_type=FinalizeResult,
                start_to_close_timeout=policies.FINALIZE_TIMEOUT,
                retry_policy=policies.EVENTS_RETRY,
            )
            self._status = "failed" if final.problems else "completed"
        return RunResult(
            run_id=inp.run_id,
            status=self._status,
            plan_hash=carry.plan_hash,
            steps=dict(self._states),
            outputs=outputs,
            failed_steps=failed,
            skipped_steps=skipped,
            generation=self._generation,
        )

    async def _fail_run(self, inp: RunInput, root: str, stage: str, err: ActivityError) -> None:
        self._status = "failed"
        details: list[object] = []
        cause = err.cause
        if isinstance(cause, ApplicationError):
            details = list(cause.details)
        await self._emit(
            inp,
            "run.failed.v1",
            "run",
            root,
            {
                "stage": stage,
                "error": _cause_message(err),
                "details": details,
            },
        )

    async def _emit(
        self,
        inp: RunInput,
        type_: str,
        stream: str,
        caused_by: str | None,
        payload: dict[str, object],
    ) -> str:
        """Append one run-level event with a deterministic id; returns that id."""
        suffix = payload.get("step_key", "")
        event_id = f"{inp.run_id}:{type_}" + (f":{suffix}" if suffix else "")
        draft = EventDraft(
            event_id=event_id,
            type=type_,
            tenant_id=inp.tenant_id,
            project_id=inp.project_id,
            run_id=inp.run_id,
            caused_by=caused_by,
            timestamp=workflow.now(),
            payload=payload,
        )
        await workflow.execute_activity(
            "events__append",
            AppendEventsInput(stream_id=f"{inp.run_id}:{stream}", events=[draft]),
            result_type=AppendEventsResult,
            start_to_close_timeout=policies.EVENTS_TIMEOUT,
            retry_policy=policies.EVENTS_RETRY,
        )
        return event_id


def _step_timeout(node: StepNode) -> timedelta:
    return policies.STEP_HARNESS_MARGIN + timedelta(seconds=node.timeout_s)


def _cause_message(err: ActivityError) -> str:
    cause = err.cause
    return str(cause.message if isinstance(cause, ApplicationError) else cause or err)


def _attempts(err: ActivityError) -> int:
    """The failing attempt's number, which step__execute puts first in its error details."""
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.details:
        first = cause.details[0]
        attempt = first.get("attempt") if isinstance(first, dict) else None
        if isinstance(attempt, int):
            return attempt
    return 1
