"""A run's state from its log alone (compiler/run/logged.py): what the API answers without
a worker."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from compiler.run.logged import logged_state
from schemas.event_catalogue import (
    BUDGET_EXHAUSTED,
    BUDGET_EXTENDED,
    GATE_DECIDED,
    GATE_REQUESTED,
    RUN_COMPILED,
    RUN_FAILED,
    RUN_STARTED,
    STEP_COMPLETED,
    STEP_FAILED,
    STEP_SKIPPED,
    STEP_STARTED,
)
from schemas.events import Event

NOW = datetime(2026, 11, 28, tzinfo=UTC)


def _log(*entries: tuple[str, dict[str, Any]]) -> list[Event]:
    return [
        Event(
            event_id=f"e{i}",
            type=type_,
            run_id="r",
            timestamp=NOW,
            payload=payload,
            stream_id="r:run",
            seq=i + 1,
            content_hash="sha256:" + "0" * 64,
            prev_hash=None,
        )
        for i, (type_, payload) in enumerate(entries)
    ]


def test_a_run_no_worker_picked_up_is_compiling_with_no_steps():
    assert logged_state(_log((RUN_STARTED, {}))) == ("compiling", {})


def test_steps_take_their_last_logged_state_and_gates_hold_theirs():
    log = _log(
        (RUN_STARTED, {}),
        (RUN_COMPILED, {}),
        (STEP_STARTED, {"step_key": "a"}),
        (STEP_COMPLETED, {"step_key": "a"}),
        (GATE_REQUESTED, {"gate_id": "g", "gate": {"gated_step_keys": ["b"]}}),
    )
    assert logged_state(log) == ("running", {"a": "done", "b": "awaiting_approval"})
    decided = log + _log((GATE_DECIDED, {"gate_id": "g", "gated_steps": ["b"]}))
    assert logged_state(decided) == ("running", {"a": "done", "b": "pending"})


def test_a_budget_stop_and_an_end_are_the_runs_status():
    log = _log((RUN_COMPILED, {}), (BUDGET_EXHAUSTED, {}))
    assert logged_state(log)[0] == "budget_exhausted"
    assert logged_state(log + _log((BUDGET_EXTENDED, {})))[0] == "running"
    ended = _log(
        (RUN_COMPILED, {}),
        (STEP_FAILED, {"step_key": "a"}),
        (STEP_SKIPPED, {"step_key": "b"}),
        (RUN_FAILED, {}),
        (BUDGET_EXTENDED, {}),
    )
    assert logged_state(ended) == ("failed", {"a": "error", "b": "skipped"})
