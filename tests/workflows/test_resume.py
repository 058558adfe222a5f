"""forge resume: a new run linked to the old one reuses unchanged completed steps."""

import asyncio
import json

import pytest

from schemas.scope import Scope
from tests.workflows.engine import engine, wait_for_event
from tests.workflows.plans import code_step, plan, write_json


def _plan() -> dict:
    return plan(
        code_step("a", write_json("output/a.json"), ["output/a.json"]),
        code_step(
            "b",
            "import time\ntime.sleep(30)\n" + write_json("output/b.json"),
            ["output/b.json"],
            depends_on=["a"],
            reads=["output/a.json"],
        ),
        code_step(
            "c",
            write_json("output/c.json"),
            ["output/c.json"],
            depends_on=["b"],
            reads=["output/b.json"],
        ),
    )


async def test_resume_reuses_completed_steps_and_reruns_the_rest(
    cli, temporal_env, task_queue, tmp_path
):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_plan()))
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(_plan())
        # Cancel while b is running: a completed, b and c did not.
        await wait_for_event(eng.services.events, handle.id, "step.started.v1", "b")
        await handle.cancel()
        with pytest.raises(Exception):  # noqa: B017  (the cancelled run's failure)
            await handle.result()
        # b and c run again; a is adopted from the first run after verification.
        resumed = await asyncio.to_thread(cli, "resume", handle.id, "--detach")
        assert resumed.exit_code == 0, resumed.output
        assert "may reuse: a" in resumed.output
        # A plan with no model step needs no model worker: no warning (issue 34 §5).
        assert "no worker serves" not in resumed.output, resumed.output
        new_id = resumed.output.split("resuming ")[1].split(" as ")[1].split(";")[0]
        new = eng.client.get_workflow_handle(new_id)
        events = await wait_for_event(eng.services.events, new_id, "step.started.v1", "b")
        types = [(e.type, e.payload.get("step_key")) for e in events]
        assert ("step.reused.v1", "a") in types
        assert ("step.started.v1", "a") not in types  # reused, not executed again
        await new.cancel()
        forced = await asyncio.to_thread(cli, "resume", handle.id, "--from", "a", "--detach")
        assert forced.exit_code == 0 and "may reuse: none" in forced.output
    bad = await asyncio.to_thread(cli, "resume", handle.id, "--from", "nope")
    assert bad.exit_code == 2 and "not a step" in bad.output


def test_reuse_refuses_changed_contracts_inputs_and_missing_outputs(tmp_path):
    from activities.steps.reuse import ReuseActivities
    from schemas.run import ReusableStep, ReuseInput
    from workers.process.worker import Services
    from workers.settings import Settings

    services = Services.from_settings(Settings(home=tmp_path / "home"))
    out = services.artifacts.put_bytes(
        Scope.default(), b'{"ok": true}', logical_path="output/a.json"
    )
    given = services.artifacts.put_bytes(Scope.default(), b"x,y\n1,2\n", logical_path="input/d.csv")
    step = ReusableStep(
        step_key="a",
        contract_hash="sha256:c1",
        outputs=[out],
        input_hashes={"input/d.csv": given.sha256},
    )
    reuse = ReuseActivities(services.artifacts, services.events)

    def attempt(**over):
        fields = {
            "run_id": "run-new",
            "scope": Scope.default(),
            "resumed_from": "run-old",
            "step": step,
            "contract_hash": "sha256:c1",
            "inputs": {"input/d.csv": given},
            "cause_event_id": "run-new:run.compiled.v1",
        }
        return reuse.reuse(ReuseInput(**{**fields, **over}))

    assert attempt(contract_hash="sha256:c2").reason == "its contract changed"
    other = services.artifacts.put_bytes(Scope.default(), b"x,y\n9,9\n", logical_path="input/d.csv")
    assert attempt(inputs={"input/d.csv": other}).reason == "its inputs changed"
    gone = step.model_copy(
        update={"outputs": [out.model_copy(update={"sha256": "sha256:" + "0" * 64})]}
    )
    assert not attempt(step=gone).reused
    done = attempt()
    assert done.reused and done.outputs == [out]
    assert [p.path for p in services.events.list_published("run-new")] == ["output/a.json"]
    assert [e.type for e in services.events.list_events(run_id="run-new")] == ["step.reused.v1"]
