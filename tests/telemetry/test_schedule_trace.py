"""A scheduled run is its own trace (derived from its run id) linked to its schedule's firing."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from activities import telemetry as names
from schemas.schedules import ScheduledRunResult
from tests.telemetry.span_catalogue import by_catalogued_name, read_catalogue, recorded_problems
from tests.workflows.engine import engine
from tests.workflows.test_capsules import SCOPE
from tests.workflows.test_schedules import capsule, finished, request, results, roots, sales
from tests.workflows.test_schedules import settled as schedules_settled
from workers.services import schedules
from workers.telemetry import tracing
from workers.telemetry.run_attributes import SCHEDULED_SPAN


async def test_a_scheduled_runs_trace_links_to_its_firing(
    spans: InMemorySpanExporter, temporal_env, task_queue, tmp_path
):
    async with engine(
        temporal_env, tmp_path / "home", task_queue, settings=roots(tmp_path, task_queue)
    ) as eng:
        await capsule(eng, tmp_path)
        template = str(sales(tmp_path / "same" / "sales.csv", "same"))
        handle = await schedules.create(
            eng.client,
            task_queue,
            eng.services.capsules,
            SCOPE,
            request("traced", template, every="1h"),
        )
        await handle.trigger()
        (fired,) = await results(eng.client, await finished(eng.client, "scheduled-traced-", 1))
        await handle.delete()
        await schedules_settled(eng.client, "scheduled-traced-")
    assert isinstance(fired, ScheduledRunResult) and fired.status == "completed", fired
    tracing._provider.force_flush()  # type: ignore[union-attr]
    done = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in done}
    derived = tracing.run_trace_id(fired.run_id)

    # The firing: the scheduled workflow's own trace.
    (firing,) = [s for s in done if s.name == "RunWorkflow:ScheduledCapsuleWorkflow"]
    assert firing.context.trace_id != derived
    # The run: its root in the derived trace, linked to a span of the firing's trace.
    (root,) = [s for s in done if s.name == SCHEDULED_SPAN]
    assert root.context.trace_id == derived
    assert root.attributes[names.RUN_ID] == fired.run_id
    assert root.attributes[names.TENANT] == SCOPE.tenant
    (link,) = root.links
    assert link.context.trace_id == firing.context.trace_id
    linked = by_id[link.context.span_id]
    while linked is not firing and linked.parent is not None:
        linked = by_id[linked.parent.span_id]
    assert linked is firing
    # ... and the run's workflow and steps are in that trace, under the root.
    (run,) = [
        s
        for s in done
        if s.name == "RunWorkflow:CompiledRunWorkflow"
        and s.attributes.get(names.RUN_ID) == fired.run_id
    ]
    assert run.context.trace_id == derived
    step = [
        s
        for s in done
        if s.attributes.get(names.RUN_ID) == fired.run_id
        and s.attributes.get(names.STEP_ID) == "count"
    ]
    assert step and {s.context.trace_id for s in step} == {derived}
    # Every span of the run's trace is in the span catalogue, with the attributes it lists (the
    # firing's schedule__prepare names the run it prepares, in the firing's own trace).
    in_trace = [s for s in done if s.context.trace_id == derived]
    assert recorded_problems(by_catalogued_name(in_trace), read_catalogue()) == []
