"""A capsule run started headless over HTTP is one trace, like any run: its submission, the
workflow and the sealed steps, linked to the request that asked for it."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from activities import telemetry as names
from schemas import names as activity_names
from tests.api.server import running_api
from tests.api.test_capsules import upload
from tests.api.test_runs import counting_plan, finished
from tests.telemetry.trace_shape import ancestors, run_trace
from workers.services.runs import SUBMIT_SPAN


async def test_a_headless_capsule_run_is_one_trace_linked_to_its_request(
    spans: InMemorySpanExporter, temporal_env, task_queue, tmp_path
):
    url = f"sqlite:///{tmp_path / 'forge.db'}"
    async with running_api(temporal_env, task_queue, tmp_path / "home", url) as api:
        async with api.client(role="operator") as http:
            body = {"plan": counting_plan(), "inputs": {"data": await upload(http, b"a\n1\n")}}
            source = (await http.post("/v1/runs", json=body)).json()["run_id"]
            assert (await finished(http, source))["status"] == "completed"
            made = await http.post("/v1/capsules", json={"run_id": source, "name": "rows"})
            assert made.status_code == 201, made.text
            newer = {"inputs": {"data": await upload(http, b"a\n1\n2\n3\n")}}
            ran = await http.post("/v1/capsules/rows/versions/1/runs", json=newer)
            assert ran.status_code == 201, ran.text
            run_id = ran.json()["run_id"]
            detail = await finished(http, run_id)
            assert detail["status"] == "completed", detail
    in_trace, by_id = run_trace(spans, run_id)
    assert all(s.attributes.get(names.RUN_ID) == run_id for s in in_trace)
    assert all(s.attributes.get(names.TENANT) == "acme" for s in in_trace)
    # The submission is the root, linked to the capsule-run request that asked for it.
    (root,) = [s for s in in_trace if s.parent is None]
    assert root.name == SUBMIT_SPAN
    (link,) = root.links
    asked = by_id[link.context.span_id]
    route = "POST /v1/capsules/{name}/versions/{version}/runs"
    assert route in [asked.name, *ancestors(asked, by_id)]
    # The capsule is instantiated (no planning, no compile passes), then its sealed step runs.
    workflow = ["RunWorkflow:CompiledRunWorkflow", "StartWorkflow:CompiledRunWorkflow", SUBMIT_SPAN]
    ran = [
        s.name.removeprefix("RunActivity:") for s in in_trace if s.name.startswith("RunActivity:")
    ]
    assert activity_names.CAPSULE_INSTANTIATE in ran and activity_names.STEP_EXECUTE in ran
    assert "recipes__match" not in ran and "compile__passes" not in ran
    for span in in_trace:
        if span.name.startswith("RunActivity:"):
            assert ancestors(span, by_id)[1:] == workflow, span.name
    (step,) = [s for s in in_trace if s.name == f"RunActivity:{activity_names.STEP_EXECUTE}"]
    assert step.attributes[names.STEP_ID] == "count" and step.attributes[names.ATTEMPT] == 1
    (sandbox,) = [s for s in in_trace if s.name == "sandbox.run"]
    assert ancestors(sandbox, by_id)[0] == step.name
    assert sandbox.attributes["forge.sandbox.exit_code"] == 0
    # Sealed code asks no model: the capsule run has no model span.
    assert not [s for s in in_trace if s.name.startswith("chat ")]
