"""A worker logs an expected activity failure as one line with its code (issue 34 §7)."""

import concurrent.futures
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest
import temporalio.activity
import temporalio.workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from schemas import names
from schemas.capsule import CapsuleInstantiateInput, CapsuleRunSpec
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import Scope
from tests.workflows.engine import engine
from workers.process import activity_log

LOGGER = "temporalio.activity"


def _fail_as_the_sdk_logs(exc: Exception) -> None:
    try:
        raise exc
    except Exception:  # noqa: BLE001 - the SDK's own shape: it logs whatever the activity raised
        temporalio.activity.logger.warning(
            "Completing activity as failed",
            exc_info=True,
            extra={"__temporal_error_identifier": "ActivityFailure"},
        )


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    activity_log.install()
    caplog.set_level(logging.WARNING, logger=LOGGER)
    return caplog


def test_an_expected_failure_is_one_line_with_its_code(logged: pytest.LogCaptureFixture) -> None:
    _fail_as_the_sdk_logs(ForgeError("no input 'rates'", code=ErrorCode.MISSING_INPUT))
    [record] = logged.records
    assert record.getMessage() == "activity failed: MISSING_INPUT: no input 'rates'"
    assert "Traceback" not in logged.text and record.exc_info is None


def test_the_traceback_stays_at_debug_level(logged: pytest.LogCaptureFixture) -> None:
    logged.set_level(logging.DEBUG, logger=LOGGER)
    _fail_as_the_sdk_logs(ForgeError("no input 'rates'", code=ErrorCode.MISSING_INPUT))
    assert "MISSING_INPUT" in logged.text and "Traceback" in logged.text


def test_a_bug_keeps_its_traceback(logged: pytest.LogCaptureFixture) -> None:
    _fail_as_the_sdk_logs(KeyError("rates"))
    assert "Completing activity as failed" in logged.text and "Traceback" in logged.text


# --- The same three cases through a real worker: the SDK's own record, the real install path.


@dataclass(frozen=True)
class ProbeInput:
    activity: str
    task_queue: str
    arg: Any = None


@temporalio.workflow.defn(name="test__activity_log_probe")
class ActivityLogProbe:
    """Calls one activity once, on the queue named, and says how it failed."""

    @temporalio.workflow.run
    async def run(self, inp: ProbeInput) -> str:
        try:
            await temporalio.workflow.execute_activity(
                inp.activity,
                *([] if inp.arg is None else [inp.arg]),
                task_queue=inp.task_queue,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError as err:
            return str(getattr(err.cause, "type", None))
        return "completed"


@temporalio.activity.defn(name="test__missing_input")
def _missing_input() -> None:
    raise ForgeError("no input 'rates'", code=ErrorCode.MISSING_INPUT)


@temporalio.activity.defn(name="test__bug")
def _bug() -> None:
    {}["rates"]  # noqa: B018 - the bug under test: a KeyError nobody meant


@pytest.fixture
async def probe(temporal_env, task_queue, tmp_path) -> AsyncIterator[Callable[..., Any]]:
    """Run one activity in a real worker; build_worker (the Forge worker) installs the filter.

    The Forge worker serves `task_queue` with Forge's own activities; a plain worker next to it
    serves the probe workflow and two test activities on a queue of their own.
    """
    probes = f"{task_queue}-probes"
    # A plain client: Forge's plugin admits only the activities of its operations table.
    plain = await Client.connect(
        temporal_env.client.service_client.config.target_host,
        namespace=temporal_env.client.namespace,
    )
    async with engine(temporal_env, tmp_path / "home", task_queue):
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            async with Worker(
                plain,
                task_queue=probes,
                workflows=[ActivityLogProbe],
                activities=[_missing_input, _bug],
                activity_executor=pool,
                workflow_runner=UnsandboxedWorkflowRunner(),
            ):

                async def run(activity: str, arg: Any = None, *, queue: str = probes) -> str:
                    return await plain.execute_workflow(
                        ActivityLogProbe.run,
                        ProbeInput(activity=activity, task_queue=queue, arg=arg),
                        id=f"probe-{uuid4()}",
                        task_queue=probes,
                    )

                run.forge_queue = task_queue  # type: ignore[attr-defined]
                yield run


def _failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Each `temporalio.activity` record as a handler prints it, traceback included."""
    formatter = logging.Formatter("%(levelname)s %(message)s")
    return [formatter.format(r) for r in caplog.records if r.name == LOGGER]


async def test_a_real_worker_logs_expected_failures_in_one_line_and_bugs_in_full(
    probe, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    # A ForgeError raised as it is (the plain worker's default converter names its class).
    assert await probe("test__missing_input") == "ForgeError"
    # A real Forge activity, which converts its ForgeError at its own boundary.
    spec = CapsuleRunSpec(name="nosuch", version=1, capsule_hash="sha256:" + "0" * 64)
    absent = CapsuleInstantiateInput(
        run_id="run-x", scope=Scope.default(), capsule=spec, cause_event_id="e"
    )
    assert await probe(
        names.CAPSULE_INSTANTIATE, absent.model_dump(mode="json"), queue=probe.forge_queue
    ) == ("CAPSULE_NOT_FOUND")
    assert await probe("test__bug") == "KeyError"
    missing, not_found, bug = _failures(caplog)
    for line, code in ((missing, "MISSING_INPUT"), (not_found, "CAPSULE_NOT_FOUND")):
        assert line.startswith(f"WARNING activity failed: {code}: "), line
        assert "\n" not in line and "Traceback" not in line, line
    assert "no input 'rates'" in missing and "'activity_type': 'test__missing_input'" in missing
    assert "tenant 'default' has no capsule 'nosuch'" in not_found, not_found
    assert bug.startswith("WARNING Completing activity as failed"), bug
    assert "Traceback" in bug and "KeyError: 'rates'" in bug, bug


async def test_a_real_worker_keeps_the_traceback_of_an_expected_failure_at_debug(
    probe, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    assert await probe("test__missing_input") == "ForgeError"
    [missing] = [line for line in _failures(caplog) if "activity failed" in line]
    assert missing.startswith("WARNING activity failed: MISSING_INPUT: no input 'rates'")
    assert "Traceback" in missing and "_missing_input" in missing, missing
