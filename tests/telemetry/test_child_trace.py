"""A sub-recipe's child run is a run of its own: its own trace (derived from its run id), rooted
at `forge.run.child`, which links to the parent run's trace; every span is catalogued."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from activities import telemetry as names
from tests.telemetry.span_catalogue import by_catalogued_name, read_catalogue, recorded_problems
from tests.telemetry.trace_shape import ancestors, run_trace
from tests.workflows.engine import engine
from tests.workflows.test_sub_recipes import calling, recipe
from workers.telemetry import tracing
from workers.telemetry.run_attributes import CHILD_SPAN


async def test_a_child_run_is_its_own_trace_linked_to_its_parents(
    spans: InMemorySpanExporter, temporal_env, task_queue, tmp_path
):
    home = tmp_path / "home"
    recipe(home, "inner", "done-when: the inner work is written\nDo the inner work.")
    async with engine(temporal_env, home, task_queue) as eng:
        handle = await eng.start(calling("inner", "outer"))
        await handle.result()  # the child fails at its model step: no executor here
    child_id = f"{handle.id}-call"
    parent, _ = run_trace(spans, handle.id)
    child, by_id = run_trace(spans, child_id)
    (root,) = [s for s in child if s.parent is not None and s.parent.span_id not in by_id]
    assert root.name == CHILD_SPAN
    assert root.context.trace_id == tracing.run_trace_id(child_id)
    assert root.attributes[names.RUN_ID] == child_id
    (link,) = root.links
    assert link.context.trace_id == tracing.run_trace_id(handle.id)
    assert "RunWorkflow:CompiledRunWorkflow" in [
        by_id[link.context.span_id].name,
        *ancestors(by_id[link.context.span_id], by_id),
    ]
    # The child's workflow runs under the parent's StartChildWorkflow, itself under the root.
    (workflow,) = [s for s in child if s.name == "RunWorkflow:CompiledRunWorkflow"]
    assert ancestors(workflow, by_id) == ["StartChildWorkflow:CompiledRunWorkflow", CHILD_SPAN]
    assert all(s.attributes.get(names.RUN_ID) == child_id for s in child)
    assert [s for s in parent if s.name.startswith("RunActivity:")]
    # Every span of both runs is in the span catalogue, with the attributes it lists.
    recorded = by_catalogued_name([*parent, *child])
    assert recorded_problems(recorded, read_catalogue()) == []
