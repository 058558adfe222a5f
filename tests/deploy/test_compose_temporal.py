"""The temporal-setup one-shot's script on a real Temporal dev server, with its CLI.

The server starts without the ForgeTenant attribute; the script (as the admin-tools container
runs it, TEMPORAL_ADDRESS and FORGE_NAMESPACE from the environment) creates the namespace and
the Keyword attribute that workflows/policies.py TENANT_ATTRIBUTE names, and is safe to repeat.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from tests.deploy import compose
from tests.temporal_env import STARTUP_TIMEOUT
from workers.process.devserver import find_binary
from workflows.policies import TENANT_ATTRIBUTE

_SCRIPT = compose.ROOT / "deploy" / "temporal" / "setup-namespace.sh"
_NAMESPACE = "forge-compose"


def _run_script(address: str) -> subprocess.CompletedProcess[str]:
    cli = find_binary()
    env = {
        "PATH": f"{cli.parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", "/nonexistent"),
        "TEMPORAL_ADDRESS": address,
        "FORGE_NAMESPACE": _NAMESPACE,
    }
    return subprocess.run(
        ["sh", str(_SCRIPT)], env=env, capture_output=True, text=True, timeout=300, check=False
    )


async def test_setup_registers_the_tenant_attribute_and_repeats(tmp_path: Path) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(find_binary()),
        dev_server_startup_timeout=STARTUP_TIMEOUT,
        ui=False,
    )
    async with env:
        address = env.client.service_client.config.target_host
        before = await _attributes(env)
        assert TENANT_ATTRIBUTE.name not in before
        for _ in range(2):  # a restarted stack runs the one-shot again
            done = await asyncio.to_thread(_run_script, address)
            assert done.returncode == 0, done.stdout + done.stderr
        after = await _attributes(env)
        assert after[TENANT_ATTRIBUTE.name] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD


async def _attributes(env: WorkflowEnvironment) -> dict[str, int]:
    try:
        answer = await env.client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=_NAMESPACE)
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:  # the namespace does not exist yet
            return {}
        raise
    return dict(answer.custom_attributes)
