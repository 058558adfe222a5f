"""What README.md and docs/ show a command printing is what the command prints today."""

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.running import assert_prints_shown, printed_by, without_assignments
from tests.docs.shown import ROOT, Shown, shown_commands

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
SHOWN = [s for page in PAGES for s in shown_commands(page)]

# Commands whose shown output needs a live run, a server or the reader's own files: each is
# listed with why it is not run here, so a newly shown command is either checked or explained.
NOT_RUN = {
    "make demo": "the whole demo (the runs it makes are tested in tests/workflows and examples)",
    "forge dev": "starts and stops the embedded dev server the test session uses",
    "forge packs check my-packs/": "the reader's own pack directory (a copy with a typo)",
    "forge worker": "runs until interrupted",
    "FORGE_METRICS_PORT=": "a worker or topology serving /metrics: tests/telemetry/ starts them",
    "forge api": "serves until interrupted (tests/workers/test_cli_access.py starts it)",
    "curl": "docs/api.md's session: tests/docs/test_api_transcript.py runs it live, in order",
    "FORGE_WEBHOOK_SECRET=": "docs/api.md's receiver: tests/docs/test_api_transcript.py runs it",
    "tail -n 1 deliveries.jsonl": "what docs/api.md's receiver got: test_api_transcript.py",
    "forge tenants list": "the reader's tenants, with when each was created",
    "forge keys": "random key ids and tokens: tests/workers/test_cli_access.py runs each verb",
    "forge webhooks": "random ids and secrets: tests/workers/test_cli_webhooks.py runs each verb",
    "forge run": "a live run (ids and timings differ; tests/workers/test_cli_run.py runs it)",
    "forge resume": "a live run",
    "FORGE_TELEMETRY=otlp OTEL_EXPORTER_OTLP_ENDPOINT=": "a live run exporting its spans to a "
    "receiver (tests/telemetry/test_cli_trace.py runs one and checks the trace line)",
    "forge deploy": "builds polling a live server: tests/workers/test_rolling_upgrade.py runs it",
    "FORGE_BUILD_ID=": "starts a worker: tests/workers/test_rolling_upgrade.py starts two builds",
    "temporal workflow describe": "a run id from the reader's own run, on a live server",
    "forge capsule": "a live run and its capsule: tests/docs/test_capsule_transcript.py runs them",
    "forge schedule": "a schedule and its runs: tests/docs/test_schedule_transcript.py runs them",
    "forge status run-": "a run id from the reader's own run",
    "forge watch run-": "a run id from the reader's own run",
    "forge runs": "the reader's runs, from Temporal's visibility",
    "forge cancel": "a run id from the reader's own run",
    "forge artifacts": "a run id from the reader's own run",
    "forge receipts": "a run id from the reader's own run",
    "forge gates": "the reader's runs waiting at gates",
    "forge approve": "a run id from the reader's own run",
    "forge reject": "a run id from the reader's own run",
    "forge budget show": "a run id from the reader's own run",
    "forge budget extend run-20261123-075717-2a1000 --tokens 2000": "a run blocked by its budget",
    "forge events list --run": "a run id from the reader's own run",
    "forge events list --type": "events of the reader's own runs",
    "forge events verify --tenant": "the event log of the reader's own runs",
    "forge events timings": "a run's attempts and their timings: test_slow_step_walk.py runs it",
    "forge sandbox exec": "timings and limits of the reader's machine",
    "forge doctor": "the dev server's port and the reader's paths: test_cli_doctor.py runs it",
    "FORGE_TEMPORAL_ADDRESS=127.0.0.1:7233 forge doctor": "as forge doctor (test_cli_doctor.py)",
    "python -m tests.support.messages_server": "starts a server",
    "export ": "sets the reader's shell environment",
    "docker compose": "no Docker here: tests/docs/test_deployment_doctor.py runs that doctor",
    "kubectl": "no cluster here: tests/docs/test_deployment_doctor.py runs the doctor Job's doctor",
}


def _not_run(shown: Shown) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if shown.command.startswith(prefix)), None)


CHECKED = [s for s in SHOWN if _not_run(s) is None]
# The commands of one fenced block run in order on one FORGE_HOME (`skills register`, then
# `skills show`), so a block is one test; xdist never splits it across workers.
BLOCKS: dict[str, list[Shown]] = {}
for _shown in CHECKED:
    BLOCKS.setdefault(_shown.block, []).append(_shown)


def test_every_shown_command_is_run_or_says_why_not():
    assert SHOWN, "README.md and docs/ show no commands"
    for shown in CHECKED:
        command = without_assignments(shown.command)
        assert command.startswith("forge "), f"{shown.source}: {shown.command!r} is not run"


@pytest.fixture
def forge_home() -> Iterator[str]:
    """A fresh FORGE_HOME whose path is as long as `$FORGE_HOME`, so output that wraps a path
    in it wraps at the same places as the page shows (`$FORGE_HOME/…` there)."""
    while True:
        path = Path("/tmp") / f"fh{secrets.token_hex(2)}"  # 11 characters, like "$FORGE_HOME"
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        break
    assert len(str(path)) == len("$FORGE_HOME")
    yield str(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("block", list(BLOCKS), ids=list(BLOCKS))
def test_shown_output_is_what_the_command_prints(block: str, monkeypatch, forge_home: str):
    monkeypatch.chdir(ROOT)
    home = forge_home
    monkeypatch.setenv("FORGE_HOME", home)
    for shown in BLOCKS[block]:
        printed = printed_by(shown, shown.command.replace("$FORGE_HOME", home))
        assert_prints_shown(shown, printed, home)
