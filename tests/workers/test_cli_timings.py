"""`forge events timings RUN` and `forge events list --step` over a real SQLite event log."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from activities.store.events import open_event_store
from schemas.events import EventDraft
from workers.cli import app
from workers.telemetry.tracing import format_trace_id, run_trace_id

RUN = "run-20261129-061336-f762a0"
T0 = datetime(2026, 11, 29, 6, 13, 36, tzinfo=UTC)


@pytest.fixture
def forge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.delenv("FORGE_DATABASE_URL", raising=False)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def _seed(home: Path) -> None:
    """A run whose `crunch` failed once and then took 10 s, and whose `report` still runs."""
    n = 0

    def ev(type_: str, at_s: float, step: str, **payload: object) -> EventDraft:
        nonlocal n
        n += 1
        return EventDraft(
            event_id=f"e{n}",
            type=type_,
            tenant_id="default",
            run_id=RUN,
            caused_by="e0",
            timestamp=T0 + timedelta(seconds=at_s),
            payload={"step_key": step, **payload},
        )

    steps = {
        "load": [
            ev("step.started.v1", 0, "load", attempt=1),
            ev("step.completed.v1", 1, "load", attempt=1),
        ],
        "crunch": [
            ev("step.started.v1", 1, "crunch", attempt=1),
            ev("step.failed.v1", 6, "crunch", attempt=1, failure_class="CODE_ERROR"),
            ev("step.started.v1", 7, "crunch", attempt=2),
            ev("step.completed.v1", 17, "crunch", attempt=2),
        ],
        "report": [ev("step.started.v1", 18, "report", attempt=1)],
    }
    with open_event_store(f"sqlite:///{home / 'forge.db'}") as store:
        store.append(
            [
                EventDraft(
                    event_id="e0",
                    type="run.started.v1",
                    tenant_id="default",
                    run_id=RUN,
                    timestamp=T0,
                    payload={},
                )
            ],
            stream_id=RUN,
        )
        for step, drafts in steps.items():
            store.append(drafts, stream_id=f"{RUN}:step:{step}")


def test_timings_lists_each_attempt_slowest_first_with_the_trace_id(forge, tmp_path):
    _seed(tmp_path / "home")
    shown = forge("events", "timings", RUN)
    assert shown.exit_code == 0, shown.output
    rows = [line.split() for line in shown.output.splitlines() if line.strip()[:1].isalpha()]
    assert [r[:3] for r in rows[1:-1]] == [
        ["crunch", "2", "completed"],
        ["crunch", "1", "failed"],
        ["load", "1", "completed"],
        ["report", "1", "running"],
    ], shown.output
    assert "failed (CODE_ERROR)" in shown.output and "10.0s" in shown.output
    assert f"trace {format_trace_id(run_trace_id(RUN))}" in shown.output

    data = json.loads(forge("events", "timings", RUN, "--json").output)
    assert data["run_id"] == RUN and data["trace_id"] == format_trace_id(run_trace_id(RUN))
    got = [(a["step"], a["attempt"], a["duration_s"]) for a in data["attempts"]]
    assert got == [("crunch", 2, 10.0), ("crunch", 1, 5.0), ("load", 1, 1.0), ("report", 1, None)]
    assert data["attempts"][1]["failure_class"] == "CODE_ERROR"


def test_timings_of_a_run_without_step_events_exits_2_with_one_line(forge, tmp_path):
    _seed(tmp_path / "home")
    missing = forge("events", "timings", "run-nope")
    assert missing.exit_code == 2
    assert missing.output.strip().splitlines() == [
        "error: NOT_FOUND: run 'run-nope' has no step attempts in the event log — check the run "
        "id with `forge runs` (a run that has not started a step has none)"
    ]


def test_list_step_keeps_the_steps_events_and_needs_a_run(forge, tmp_path):
    _seed(tmp_path / "home")
    listed = json.loads(forge("events", "list", "--run", RUN, "--step", "crunch", "--json").output)
    assert [e["event_id"] for e in listed["events"]] == ["e3", "e4", "e5", "e6"]
    first = forge("events", "list", "--run", RUN, "--step", "crunch", "--limit", "1", "--json")
    assert [e["event_id"] for e in json.loads(first.output)["events"]] == ["e3"]
    alone = forge("events", "list", "--step", "crunch")
    assert alone.exit_code == 2 and "USAGE_INVALID" in alone.output and "--run" in alone.output
