"""The failure model (seed 000 §6.5, Part X-c): contained, classified, dependents skipped."""

import logging

import pytest

from schemas.run_source import PlanSource
from schemas.scope import Scope
from tests.workflows.engine import engine, wait_for_event
from tests.workflows.plans import code_step, plan, reading_plan, write_json

OK = write_json("output/a.json")


def _two_steps(bad_code: str, **kw) -> dict:
    return plan(
        code_step("bad", bad_code, ["output/bad.json"], **kw),
        code_step(
            "after",
            OK.replace("a.json", "after.json"),
            ["output/after.json"],
            depends_on=["bad"],
            reads=["output/bad.json"],
        ),
        code_step("independent", OK, ["output/a.json"]),
    )


async def _run(temporal_env, task_queue, tmp_path, document):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(document)
        events = eng.services.events.list_events(run_id=result.run_id)
        return result, events


async def test_code_that_raises_fails_typed_and_skips_dependents(
    temporal_env, task_queue, tmp_path
):
    result, events = await _run(
        temporal_env, task_queue, tmp_path, _two_steps("raise SystemExit('bad input data')")
    )
    assert result.status == "failed" and result.failed_steps == ["bad"]
    bad = result.steps["bad"]
    assert bad.error.failure_class == "CODE_ERROR" and "bad input data" in bad.error.message
    assert bad.attempts == 1  # a deterministic code error is not retried
    assert result.steps["after"].status == "skipped"
    assert result.skipped_steps == {"after": "upstream step 'bad' failed"}
    assert result.steps["independent"].status == "done"
    failed = [e for e in events if e.type == "step.failed.v1"]
    assert [e.payload["failure_class"] for e in failed] == ["CODE_ERROR"]
    assert any(e.type == "run.failed.v1" for e in events)


async def test_a_failed_step_is_one_log_line_without_a_traceback(
    temporal_env, task_queue, tmp_path, caplog
):
    caplog.set_level(logging.DEBUG, logger="temporalio.activity")
    await _run(temporal_env, task_queue, tmp_path, _two_steps("raise SystemExit('bad data')"))
    mine = [r for r in caplog.records if r.name == "temporalio.activity"]
    lines = [r.getMessage() for r in mine if r.levelno >= logging.WARNING]
    # Before: "Completing activity as failed" with the whole traceback, at warning level.
    assert any(line.startswith("step bad attempt 1 failed (CODE_ERROR): ") for line in lines)
    assert not [r for r in mine if r.levelno >= logging.WARNING and r.exc_info]


async def test_undeclared_write_is_a_contract_violation(temporal_env, task_queue, tmp_path):
    code = OK.replace("a.json", "bad.json") + write_json("output/sneaky.json")
    result, _ = await _run(temporal_env, task_queue, tmp_path, _two_steps(code))
    err = result.steps["bad"].error
    assert err.failure_class == "CONTRACT_VIOLATION" and "output/sneaky.json" in err.message
    assert result.steps["bad"].attempts == 1


async def test_memory_bomb_is_killed_and_retried_on_a_fresh_sandbox(
    temporal_env, task_queue, tmp_path
):
    result, events = await _run(
        temporal_env, task_queue, tmp_path, _two_steps("x = bytearray(8 * 1024**3)\n")
    )
    bad = result.steps["bad"]
    assert bad.error.failure_class == "SANDBOX_OOM"
    # strict.fail-closed.v1 retries sandbox deaths twice under the same contract.
    assert bad.attempts == 3
    attempts = [
        e.payload["attempt"]
        for e in events
        if e.type == "step.failed.v1" and e.payload["step_key"] == "bad"
    ]
    assert attempts == [1, 2, 3]


async def test_fork_bomb_is_contained(temporal_env, task_queue, tmp_path):
    code = "import os\nwhile True:\n    os.fork()\n"
    result, _ = await _run(temporal_env, task_queue, tmp_path, _two_steps(code))
    assert result.steps["bad"].status == "error"
    assert result.steps["independent"].status == "done"


@pytest.mark.parametrize("loop", ["while True:\n    pass\n", "import time\ntime.sleep(3600)\n"])
async def test_endless_step_is_killed_at_the_wall_clock(temporal_env, task_queue, tmp_path, loop):
    from activities.compile.typelib import load_profiles

    layers, _ = load_profiles()
    profile = layers.builtin["default"].model_dump(mode="json")
    profile["profile_id"] = "short-fuse"
    profile["sandbox"]["wall_clock_s"] = 3
    profile["sandbox"]["cpu_seconds"] = 2
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(_two_steps(loop), profile_document=profile)
    assert result.steps["bad"].error.failure_class == "SANDBOX_TIMEOUT"


async def test_cancel_stops_the_run_and_records_it(temporal_env, task_queue, tmp_path):
    import asyncio

    from temporalio.client import WorkflowFailureError
    from temporalio.exceptions import CancelledError

    slow = plan(
        code_step("first", OK, ["output/a.json"]),
        code_step(
            "slow",
            "import time\ntime.sleep(30)\n" + write_json("output/b.json"),
            ["output/b.json"],
            depends_on=["first"],
            reads=["output/a.json"],
        ),
        code_step(
            "never",
            write_json("output/c.json"),
            ["output/c.json"],
            depends_on=["slow"],
            reads=["output/b.json"],
        ),
    )
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(slow)
        await wait_for_event(eng.services.events, handle.id, "step.started.v1", "slow")
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as err:
            await handle.result()
        assert isinstance(err.value.cause, CancelledError)
        events = eng.services.events.list_events(run_id=handle.id)
        cancelled = [e for e in events if e.type == "run.cancelled.v1"]
        assert len(cancelled) == 1
        assert set(cancelled[0].payload["stopped_steps"]) == {"slow", "never"}
        # The in-flight step is cancelled too: its sandbox dies and it never completes.
        for _ in range(60):
            if not any(
                e.type == "step.completed.v1" and e.payload["step_key"] == "slow"
                for e in eng.services.events.list_events(run_id=handle.id)
            ):
                await asyncio.sleep(0.1)
        events = eng.services.events.list_events(run_id=handle.id)
        assert not any(
            e.type == "step.completed.v1" and e.payload["step_key"] == "slow" for e in events
        )
        history = await handle.fetch_history()
        assert any(
            ev.HasField("activity_task_cancel_requested_event_attributes") for ev in history.events
        )
        published = eng.services.events.list_published(handle.id)
        assert [p.path for p in published] == ["output/a.json"]  # kept, not clawed back


async def test_missing_required_input_fails_closed(temporal_env, task_queue, tmp_path):
    from schemas.run import RunInput
    from workers.services import runs

    doc = reading_plan()
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        ref = eng.services.artifacts.put_bytes(
            Scope.default(), runs.plan_bytes(doc), logical_path="meta/p.json"
        )
        # Bypass the CLI's own check: the harness must refuse on its own.
        run = RunInput(run_id=runs.new_run_id(), source=PlanSource(plan_ref=ref), inputs={})
        result = await (await runs.start_run(eng.client, eng.settings, run)).result()
    err = result.steps["read"].error
    assert err.failure_class == "MISSING_INPUT" and "input/data.csv" in err.message
    assert result.steps["read"].attempts == 1


async def test_output_shape_failures_retry_under_the_same_contract(
    temporal_env, task_queue, tmp_path
):
    import yaml

    from activities.compile.typelib import STDLIB_DIR
    from workers.settings import Settings

    packs = tmp_path / "packs" / "policies"
    packs.mkdir(parents=True)
    policy = yaml.safe_load((STDLIB_DIR / "policies" / "strict.fail-closed.v1.yaml").read_text())
    policy.update(policy_profile_id="test.shape-retry.v1")
    policy["repair"].update(max_retries=1, retryable_failure_classes=["OUTPUT_SHAPE"])
    (packs / "test.shape-retry.v1.yaml").write_text(yaml.safe_dump(policy))
    empty = plan(
        code_step(
            "empty",
            "open('output/e.json', 'w').write('{}')\n",
            ["output/e.json"],
            policy="test.shape-retry.v1",
        )
    )
    placeholder = plan(
        code_step("todo", write_json("output/t.json", '{"note": "TODO"}'), ["output/t.json"])
    )
    home = tmp_path / "home"
    async with engine(
        temporal_env,
        home,
        task_queue,
        settings=Settings(home=home, task_queue=task_queue, packs_path=(tmp_path / "packs",)),
    ) as eng:
        retried = await eng.run(empty)
        once = await eng.run(placeholder)
    err = retried.steps["empty"].error
    assert err.failure_class == "OUTPUT_SHAPE" and "empty document" in err.message
    assert retried.steps["empty"].attempts == 2  # max_retries 1: one retry, same contract
    # strict.fail-closed.v1 does not retry output shape: one attempt, placeholder named.
    todo = once.steps["todo"]
    assert todo.error.failure_class == "OUTPUT_SHAPE" and "TODO" in todo.error.message
    assert todo.attempts == 1


async def test_a_slow_harness_phase_never_starts_a_second_attempt(
    temporal_env, task_queue, tmp_path, monkeypatch
):
    import time

    from activities.harness import checks

    original = checks.postflight

    def slow_postflight(*args, **kwargs):
        time.sleep(12)  # longer than the step's heartbeat timeout
        return original(*args, **kwargs)

    monkeypatch.setattr(checks, "postflight", slow_postflight)
    code = write_json("output/a.json")
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(plan(code_step("slow", code, ["output/a.json"])))
        events = eng.services.events.list_events(run_id=result.run_id)
        published = eng.services.events.list_published(result.run_id)
    assert result.status == "completed"
    assert [e.payload["attempt"] for e in events if e.type == "step.started.v1"] == [1]
    assert [p.version for p in published] == [1]
    assert not (tmp_path / "home" / "runs" / result.run_id / "slow").exists() or not any(
        (tmp_path / "home" / "runs" / result.run_id / "slow").iterdir()
    )


async def test_a_planted_symlink_fails_the_step(temporal_env, task_queue, tmp_path):
    code = "import os\nos.symlink('/etc/passwd', 'meta/peek')\n" + write_json("output/bad.json")
    result, _ = await _run(temporal_env, task_queue, tmp_path, _two_steps(code))
    err = result.steps["bad"].error
    assert err.failure_class == "CONTRACT_VIOLATION" and "meta/peek" in err.message


async def test_an_input_of_another_tenant_is_missing_not_read(temporal_env, task_queue, tmp_path):
    """A run of globex handed a reference acme stored fails closed: the bytes are never read."""
    from schemas.run import RunInput
    from workers.services import runs

    doc = reading_plan()
    acme, globex = Scope(tenant="acme"), Scope(tenant="globex")
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        store = eng.services.artifacts
        secret = store.put_bytes(acme, b"a,b\n1,2\n", logical_path="input/data.csv")
        ref = store.put_bytes(globex, runs.plan_bytes(doc), logical_path="meta/p.json")
        run = RunInput(
            run_id=runs.new_run_id("globex"),
            scope=globex,
            source=PlanSource(plan_ref=ref),
            inputs={"data": secret},
        )
        result = await (await runs.start_run(eng.client, eng.settings, run)).result()
    err = result.steps["read"].error
    assert err.failure_class == "MISSING_INPUT" and "input/data.csv" in err.message
    assert "globex" in err.message and "acme" not in err.message
    assert result.steps["read"].attempts == 1
