"""Shared pytest fixtures."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from uuid import uuid4

import pytest
from hypothesis import settings
from temporalio.testing import WorkflowEnvironment

from activities import masked_output
from activities.sandbox import bwrap
from tests.temporal_env import temporal_test_env

# pytest-xdist gives its workers COLUMNS=80 and LINES=24; rich's consoles, built when the CLI
# is imported, would freeze that width, and the `cli` fixture's COLUMNS would not apply.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

# RLIMIT_NPROC counts every process of the sandbox uid, so a fork-bomb test in one pytest-xdist
# worker would starve the sandboxes another worker runs at the same moment: each worker's steps
# run as a sandbox user of its own (created on first use, like forge-sandbox itself).
if os.environ.get("PYTEST_XDIST_WORKER"):
    bwrap.SANDBOX_USER = f"forge-sandbox-{os.environ['PYTEST_XDIST_WORKER']}"

# Property tests draw the same examples on every run, so `make test` is deterministic; explore
# new ones with `pytest --hypothesis-profile=explore` (and commit a test for what it finds).
# No deadline: tests assert behaviour, never wall-clock time (a loaded machine is not a failure).
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _own_masked_output():
    """Each test starts with no masking noted and no acting scope (both are per process)."""
    masked_output.take()
    masked_output.act_for(None)


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """One dev server for the whole session; tests isolate themselves by task queue."""
    async with temporal_test_env() as env:
        yield env


@pytest.fixture
def cli(temporal_env, task_queue, tmp_path, monkeypatch):
    """`forge` as a user runs it, against the session dev server, with its own FORGE_HOME."""
    from typer.testing import CliRunner

    from workers.cli import app

    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(
        "FORGE_TEMPORAL_ADDRESS", temporal_env.client.service_client.config.target_host
    )
    monkeypatch.setenv("FORGE_TASK_QUEUE", task_queue)
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def task_queue() -> str:
    """A task queue no other test uses, so workers never steal each other's tasks."""
    return f"test-{uuid4()}"
