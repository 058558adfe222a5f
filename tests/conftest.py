"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import uuid4

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.temporal_env import temporal_test_env


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """One dev server for the whole session; tests isolate themselves by task queue."""
    async with temporal_test_env() as env:
        yield env


@pytest.fixture
def task_queue() -> str:
    """A task queue no other test uses, so workers never steal each other's tasks."""
    return f"test-{uuid4()}"
