"""Test harness for the run engine: a Forge client on the session dev server, a worker, helpers."""

import asyncio
import concurrent.futures
import io
import json
import sys
import threading
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.store.events import EventStore
from schemas.events import Event
from schemas.run import RunInput, RunResult
from schemas.run_source import ObjectiveSource, PlanSource
from schemas.scope import Scope
from tests.support.events import catalogue_problems
from workers.plugin import ForgePlugin
from workers.process.worker import ForgeWorker, Services, build_worker
from workers.services import runs
from workers.settings import Settings
from workflows.run import CompiledRunWorkflow

ROOT = Path(__file__).resolve().parents[2]
BILLING = ROOT / "examples" / "billing-audit"


@dataclass
class Engine:
    client: Client
    settings: Settings
    services: Services
    # Events a test wrote on purpose outside the catalogue (a corrupt ledger): not checked.
    planted: set[str] = field(default_factory=set)

    async def start(
        self, document: dict[str, Any], inputs: dict[str, Path] | None = None, **extra: Any
    ) -> WorkflowHandle[CompiledRunWorkflow, RunResult]:
        from compiler.plan.parse import parse_candidate

        candidate = parse_candidate(document)
        scope = extra.get("scope", Scope.default())  # the run's scope: its inputs are its own
        refs = runs.bind_inputs(candidate, inputs or {}, self.services.artifacts, scope)
        plan_ref = self.services.artifacts.put_bytes(
            scope, runs.plan_bytes(document), logical_path="meta/plans/test.json"
        )
        run_id = extra.pop("run_id", None) or runs.new_run_id(scope.tenant)
        run = RunInput(
            run_id=run_id,
            source=PlanSource(plan_ref=plan_ref),
            inputs=refs,
            **self._waits(extra),
        )
        return await runs.start_run(self.client, self.settings, run)

    async def start_objective(
        self, objective: str, **extra: Any
    ) -> WorkflowHandle[CompiledRunWorkflow, RunResult]:
        """A run started from an objective alone: recipes__match decides what it runs."""
        tenant = extra.get("scope", Scope.default()).tenant
        run_id = extra.pop("run_id", None) or runs.new_run_id(tenant)
        source = ObjectiveSource(
            objective=objective, planner_provider=extra.pop("planner_provider", None)
        )
        run = RunInput(run_id=run_id, source=source, **self._waits(extra))
        return await runs.start_run(self.client, self.settings, run)

    def _waits(self, extra: dict[str, Any]) -> dict[str, Any]:
        """A test engine without a model is the only worker: its model work is never served,
        so it fails EXECUTOR_UNAVAILABLE after a short wait instead of the default ten minutes.
        """
        s = self.settings
        if s.anthropic_api_key is None and s.model_script is None:
            extra.setdefault("model_wait_s", UNSERVED_WAIT_S)
        return extra

    async def run(
        self, document: dict[str, Any], inputs: dict[str, Path] | None = None, **extra: Any
    ) -> RunResult:
        return await (await self.start(document, inputs, **extra)).result()


UNSERVED_WAIT_S = 2


async def forge_client(env: WorkflowEnvironment) -> Client:
    return await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        plugins=[ForgePlugin()],
    )


SHUTDOWN_S = 60


@asynccontextmanager
async def bounded_shutdown(worker: ForgeWorker) -> AsyncIterator[ForgeWorker]:
    """The worker, whose shutdown fails the test after SHUTDOWN_S with every task's stack."""
    await worker.__aenter__()
    try:
        yield worker
    finally:
        try:
            async with asyncio.timeout(SHUTDOWN_S):
                await worker.__aexit__(None, None, None)
        except TimeoutError:
            stacks = io.StringIO()
            for task in asyncio.all_tasks():
                task.print_stack(file=stacks)
            # A sync activity holds its thread until it returns: show what each thread is doing.
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                stacks.write(f"Thread {names.get(ident, ident)}:\n")
                traceback.print_stack(frame, file=stacks)
            raise AssertionError(
                f"the worker did not shut down in {SHUTDOWN_S} s; tasks:\n{stacks.getvalue()}"
            ) from None


@asynccontextmanager
async def engine(
    env: WorkflowEnvironment, home: Path, task_queue: str, *, settings: Settings | None = None
) -> AsyncIterator[Engine]:
    settings = settings or Settings(home=home, task_queue=task_queue)
    services = Services.from_settings(settings)
    client = await forge_client(env)
    try:
        slots = settings.worker_activity_slots
        with concurrent.futures.ThreadPoolExecutor(max_workers=slots) as pool:
            async with bounded_shutdown(build_worker(client, settings, services, pool)):
                eng = Engine(client, settings, services)
                yield eng
    except BaseException:
        services.close()
        raise
    # Every event the test's runs wrote is a catalogued type with a payload its model accepts.
    written = services.events.list_events(limit=1_000_000)
    problems = catalogue_problems(e for e in written if e.event_id not in eng.planted)
    services.close()
    assert not problems, "\n".join(problems[:20])


def billing_plan() -> dict[str, Any]:
    return runs.load_plan_document(
        BILLING / "frozen-plan.json", json.loads((BILLING / "frozen-plan.json").read_text())
    )


def billing_inputs(tmp: Path) -> dict[str, Path]:
    sys.path.insert(0, str(BILLING))
    try:
        import generate  # examples/billing-audit/generate.py
    finally:
        sys.path.remove(str(BILLING))
    data = tmp / "data"
    generate.generate(data, seed=2)
    return {
        "time_entries": data / "time_entries.csv",
        "rate_cards": data / "rate_cards.csv",
        "contracts": data / "contracts.json",
    }


async def wait_for_event(
    events: EventStore,
    run_id: str,
    type_: str,
    step_key: str | None = None,
    *,
    timeout_s: float = 60.0,
) -> list[Event]:
    """Poll the event log until `type_` (for `step_key`, if given) appears; the run's events."""
    for _ in range(int(timeout_s * 10)):
        found = events.list_events(run_id=run_id)
        if any(
            e.type == type_ and (step_key is None or e.payload.get("step_key") == step_key)
            for e in found
        ):
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"{type_} ({step_key or 'any step'}) never happened in {run_id}")
