"""A pending gate waits indefinitely: it survives worker and dev-server restarts, then completes."""

import asyncio
import socket
from contextlib import asynccontextmanager

from temporalio.client import WorkflowHandle

from tests.workflows.engine import engine
from tests.workflows.test_fault_tolerance import engine_on
from tests.workflows.test_gates import decision, gated_plan, pending_gate
from workers.process.devserver import DevServer
from workers.settings import Settings
from workflows.run import CompiledRunWorkflow


@asynccontextmanager
async def phase(name: str, seconds: float = 90):
    """A phase that cannot hang the suite: past `seconds` the test fails naming the phase."""
    try:
        async with asyncio.timeout(seconds):
            yield
    except TimeoutError:
        raise AssertionError(f"{name}: not done in {seconds:.0f} s") from None


async def idle(handle: WorkflowHandle) -> None:
    """Wait until the run waits on its gate alone: no activity or workflow task outstanding
    (the gate's event is written by an activity after the gate shows as pending)."""
    while True:
        raw = (await handle.describe()).raw_description
        if not raw.pending_activities and not raw.HasField("pending_workflow_task"):
            return
        await asyncio.sleep(0.05)


async def test_pending_gate_survives_a_worker_restart(temporal_env, task_queue, tmp_path):
    home = tmp_path / "home"
    async with phase("first worker"), engine(temporal_env, home, task_queue) as eng:
        handle = await eng.start(gated_plan())
        gate = await pending_gate(handle)
        await idle(handle)
    # No worker at all now: the run just waits (a timer-free wait holds nothing).
    async with phase("second worker"), engine(temporal_env, home, task_queue) as eng:
        handle = eng.client.get_workflow_handle_for(CompiledRunWorkflow.run, handle.id)
        assert (await pending_gate(handle)).status == "pending"
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        result = await handle.result()
    assert result.status == "completed"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_pending_gate_survives_a_dev_server_restart(tmp_path, task_queue):
    settings = Settings(home=tmp_path / "home", task_queue=task_queue, dev_server_port=_free_port())
    server = DevServer()
    await server.up(settings)
    try:
        async with phase("first worker"), engine_on(settings) as eng:
            handle = await eng.start(gated_plan())
            gate = await pending_gate(handle)
            await idle(handle)
        assert await server.down(settings)
        await server.up(settings)
        async with phase("second worker"), engine_on(settings) as eng:
            handle = eng.client.get_workflow_handle_for(CompiledRunWorkflow.run, handle.id)
            assert (await pending_gate(handle)).spec.contract_hash == gate.spec.contract_hash
            await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
            result = await handle.result()
        assert result.status == "completed"
    finally:
        await server.down(settings)
