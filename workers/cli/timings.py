"""`forge events timings RUN`: a run's step attempts from its events, slowest first.

The way from a slow run to its slow step (docs/observability.md): each attempt's duration is the
time from its `step.started.v1` to its `step.completed.v1` or `step.failed.v1`, and the run's
trace id says where the same attempt is a `RunActivity:step__execute` span in a tracing backend.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.common import fail, out

if TYPE_CHECKING:
    from schemas.events import Event

__all__ = ["Attempt", "attempts", "timings_cmd"]

# The verb's modules (pydantic's event catalogue, the store) load when it runs: `forge --help`
# and every other verb import this module (tests/workers/test_cli_imports.py).


@dataclass(frozen=True)
class Attempt:
    """One attempt of one step: when it started, how it ended and how long it took."""

    step: str
    attempt: int
    outcome: str  # completed, failed, or running (no end event yet)
    failure_class: str | None
    started_at: datetime
    duration_s: float | None  # None while running


def attempts(found: list[Event]) -> list[Attempt]:
    """Every step attempt in `found` (a run's step events), slowest first, running ones last."""
    from schemas.event_catalogue import STEP_COMPLETED, STEP_FAILED, STEP_STARTED

    ends: dict[tuple[str, int], Event] = {}
    for e in found:
        if e.type in (STEP_COMPLETED, STEP_FAILED):
            ends[e.payload["step_key"], e.payload["attempt"]] = e
    rows: list[Attempt] = []
    for e in found:
        if e.type != STEP_STARTED:
            continue
        key = (e.payload["step_key"], e.payload["attempt"])
        end = ends.get(key)
        rows.append(
            Attempt(
                step=key[0],
                attempt=key[1],
                outcome="running" if end is None else end.type.split(".")[1],
                failure_class=None if end is None else end.payload.get("failure_class"),
                started_at=e.timestamp,
                duration_s=None
                if end is None
                else round((end.timestamp - e.timestamp).total_seconds(), 3),
            )
        )
    return sorted(rows, key=lambda a: (a.duration_s is None, -(a.duration_s or 0), a.started_at))


def timings_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    as_json: Annotated[
        bool,
        typer.Option("--json", help='Print {"run_id", "trace_id", "attempts": [...]}.'),
    ] = False,
) -> None:
    """A run's step attempts with their durations, slowest first, and the run's trace id."""
    from schemas.event_catalogue import STEP_COMPLETED, STEP_FAILED, STEP_STARTED
    from workers.cli.events import read_events
    from workers.telemetry.tracing import format_trace_id, run_trace_id

    found = read_events(run_id, (STEP_STARTED, STEP_COMPLETED, STEP_FAILED))
    rows = attempts(found)
    if not rows:
        fail(
            f"run {run_id!r} has no step attempts in the event log",
            "check the run id with `forge runs` (a run that has not started a step has none)",
            code=ErrorCode.NOT_FOUND,
        )
    trace_id = format_trace_id(run_trace_id(run_id))
    if as_json:
        shown = [{**asdict(a), "started_at": a.started_at.isoformat()} for a in rows]
        typer.echo(
            json.dumps({"run_id": run_id, "trace_id": trace_id, "attempts": shown}, indent=2)
        )
        return
    out.print(f"{len(rows)} step attempt(s) of {escape(run_id)}, slowest first")
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("step", overflow="fold")
    table.add_column("attempt", justify="right")
    table.add_column("outcome", overflow="fold")
    table.add_column("started")
    table.add_column("duration", justify="right")
    for a in rows:
        outcome = a.outcome + (f" ({a.failure_class})" if a.failure_class else "")
        duration = "" if a.duration_s is None else f"{a.duration_s:.1f}s"
        table.add_row(
            escape(a.step), str(a.attempt), escape(outcome), f"{a.started_at:%H:%M:%S}", duration
        )
    out.print(table)
    out.print(f"trace {trace_id}")
