"""Capsule runs keep the source run's governance: gates gate every run; a planner-declared
parameter becomes the capsule's, read by sealed model-written code with a new value.

Real parts: the Temporal dev server, bubblewrap, the stores, and the local Messages server.
"""

import json

import pytest

from activities.store.artifacts_s3 import s3_client
from compiler.plan.params import ParameterInvalid
from tests.store.s3 import CREDENTIALS, moto_endpoint, use_test_credentials
from tests.workflows.engine import billing_plan, engine
from tests.workflows.model_env import executor, model_engine, run_python, text
from tests.workflows.test_capsules import SCOPE, billing_data, output, prepare, services
from tests.workflows.test_gates import decision, gated_plan, pending_gate
from tests.workflows.test_model_runs import OBJECTIVE, SALES
from tests.workflows.test_model_runs import SCRIPT as MODEL_RUN_SCRIPT
from tests.workflows.test_params import MODEL_CODE, PLANNED
from workers.services import runs
from workers.services.capsules import extract_run
from workflows.run import CompiledRunWorkflow

__all__ = ["moto_endpoint"]  # the S3 server fixture, shared with tests/store


async def test_a_gate_in_the_capsule_gates_every_capsule_run(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        source = await eng.start(gated_plan())
        await source.execute_update(
            CompiledRunWorkflow.decide_gate, decision(await pending_gate(source))
        )
        done = await source.result()
        assert done.status == "completed", done
        version = extract_run(services(eng), SCOPE, done.run_id, "shipping")
        assert [g["gate_id"] for g in version.content.governance["gates"]] == ["gate-ship"]  # type: ignore[index,union-attr]
        prepared = prepare(eng, "shipping", {})
        handle = await runs.start_run(eng.client, eng.settings, prepared.run)
        gate = await pending_gate(handle)  # the capsule run waits for a person, as its source did
        view = await handle.query(CompiledRunWorkflow.status)
        states = {s.step_key: s.status for s in view.steps}
        assert states == {"prepare": "done", "ship": "awaiting_approval", "after": "pending"}
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        result = await handle.result()
        assert result.status == "completed", result
        assert result.gates["gate-ship"].status == "approved"


PARAM_SCRIPT = [
    {"when": {"consumer": "planner"}, "response": text(json.dumps(PLANNED), thinking=True)},
    executor("totals", run_python(MODEL_CODE), times=0),
]


async def test_a_planner_declared_parameter_becomes_the_capsules(
    temporal_env, task_queue, tmp_path
):
    home = tmp_path / "home"
    async with model_engine(temporal_env, home, task_queue, PARAM_SCRIPT) as (eng, server):
        handle = await eng.start_objective(
            "count the large sales of a region", params={"min_amount": "8"}
        )
        source = await handle.result()
        assert source.status == "completed", source
        assert output(eng, source, "output/count.json") == {"region": "north", "count": 1}
        paid = server.request_count
        version = extract_run(services(eng), SCOPE, source.run_id, "large-sales")
        scalars = {s.name: (s.type, s.default, s.read_by) for s in version.content.scalars}
        assert scalars == {
            "min_amount": ("number", 8, ["totals"]),  # the source run's value is the default
            "region": ("string", "north", ["totals"]),
        }
        values = {"region": "south", "min_amount": "1"}
        prepared = prepare(eng, "large-sales", {}, params=values)
        rerun = await (await runs.start_run(eng.client, eng.settings, prepared.run)).result()
        assert rerun.status == "completed", rerun
        # The sealed program the executor wrote reads the new values; no model is asked.
        assert output(eng, rerun, "output/count.json") == {"region": "south", "count": 1}
        assert server.request_count == paid


async def test_inputs_read_from_a_configured_s3_bucket(
    temporal_env, task_queue, tmp_path, moto_endpoint, monkeypatch
):
    """s3:// inputs of a bucket in FORGE_INPUT_BUCKETS, through a real S3-speaking server."""
    use_test_credentials(monkeypatch)
    client = s3_client(moto_endpoint, **CREDENTIALS)
    client.create_bucket(Bucket="acme-billing")
    week = billing_data(tmp_path, 7)
    for path in week.values():
        client.upload_file(str(path), "acme-billing", f"week-48/{path.name}")
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        source = await eng.run(billing_plan(), billing_data(tmp_path, 2))
        extract_run(services(eng), SCOPE, source.run_id, "billing")
        s3 = {"input_buckets": ("acme-billing",), "s3_endpoint": moto_endpoint}
        uris = {n: f"s3://acme-billing/week-48/{p.name}" for n, p in week.items()}
        prepared = prepare(eng, "billing", uris, **s3)
        result = await (await runs.start_run(eng.client, eng.settings, prepared.run)).result()
        assert result.status == "completed", result
        found = output(eng, result, "output/discrepancies.json")
        key = json.loads((tmp_path / "seed-7" / "answer_key.json").read_text())
        assert sorted(d["entry_id"] for d in found) == sorted(d["entry_id"] for d in key)
        missing = {**uris, "contracts": "s3://acme-billing/week-49/contracts.json"}
        with pytest.raises(ParameterInvalid, match="no such object"):
            prepare(eng, "billing", missing, **s3)


async def test_sealed_code_still_asks_the_governed_evaluator(temporal_env, task_queue, tmp_path):
    """Seed 000 §8.3: no planning or code generation, but the evaluator calls remain."""
    script = [
        {**entry, "times": 0} if entry["when"].get("consumer") == "evaluator" else entry
        for entry in MODEL_RUN_SCRIPT
    ]
    sales = tmp_path / "sales.csv"
    sales.write_text(SALES)
    async with model_engine(temporal_env, tmp_path / "home", task_queue, script) as (eng, server):
        ref = eng.services.artifacts.put_file(SCOPE, sales, logical_path="input/sales.csv")
        source = await (await eng.start_objective(OBJECTIVE, inputs={"sales": ref})).result()
        assert source.status == "completed", source
        version = extract_run(services(eng), SCOPE, source.run_id, "judged")
        evaluates = {p.step_key: p.evaluates for p in version.content.programs}
        assert evaluates == {"totals": True, "summary": False}
        paid = server.request_count
        prepared = prepare(eng, "judged", {"sales": sales}, roots=(tmp_path,))
        sealed = await (await runs.start_run(eng.client, eng.settings, prepared.run)).result()
        assert sealed.status == "completed", sealed
        asked = [h.get("x-forge-consumer") for h in server.headers[paid:]]
        assert asked == ["evaluator"]  # the judgment, not the planner nor the executor
        events = eng.services.events.list_events(run_id=sealed.run_id)
        assert [e.type for e in events].count("evaluation.proof.v1") == 1
        assert sealed.budget.spent.model_calls == 1  # budgeted and recorded
