"""One scheduled time of a schedule: what Temporal's schedule starts, and what it became.

A Temporal Schedule starts `ScheduledCapsuleWorkflow` with a ScheduledRunInput (the same
arguments every time); the workflow reads its scheduled time from Temporal
(`TemporalScheduledStartTime`), never the wall clock, and asks `schedule__prepare` to claim that
time and resolve the input templates. A time already claimed ends there: no capsule run.
"""

import hashlib
from datetime import datetime

from pydantic import Field

from schemas.base import FrozenModel
from schemas.run import RunInput
from schemas.scope import Scope, Scoped, tenant_tag

SCHEDULE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,47}$"


def scheduled_run_id(tenant: str, schedule: str, at: datetime, execution: str) -> str:
    """The capsule run one start of a scheduled time would make.

    `sched-<schedule>-<YYYYMMDD-HHMMSS UTC>-<8 hex of the starting workflow's run id>`: the
    same for a retry within that start (so a retried claim is the same claim), different for
    any other start of the same time (so the store refuses it: the time already has its run).
    """
    start = hashlib.sha256(execution.encode()).hexdigest()[:8]
    return f"sched-{schedule}-{at:%Y%m%d-%H%M%S}-{start}{tenant_tag(tenant)}"


class ScheduledRunInput(Scoped):
    """The schedule's action: the capsule to run and its input templates and parameters."""

    schedule: str = Field(pattern=SCHEDULE_NAME_PATTERN)
    scope: Scope
    capsule: str = Field(description="NAME (the newest version at each run) or NAME@V (pinned)")
    inputs: dict[str, str] = Field(
        default_factory=dict, description="input name -> a template, e.g. .../{scheduled:%Y-%m-%d}"
    )
    params: dict[str, str] = Field(default_factory=dict)
    tz: str = Field(default="UTC", description="the zone templates are rendered in")
    when: str = Field(default="", description="the calendar as given: `cron EXPR` or `every D`")


class SchedulePrepareInput(Scoped):
    """schedule__prepare: claim one scheduled time; resolve the inputs; the capsule run."""

    run: ScheduledRunInput
    scope: Scope
    scheduled_at: datetime
    run_id: str


class SchedulePrepareResult(FrozenModel):
    """A capsule run to start, or the run that already holds the scheduled time."""

    run: RunInput | None = None
    already_ran: str | None = Field(default=None, description="the run holding this time")
    attempt: int = Field(default=1, ge=1)


class ScheduledRunResult(FrozenModel):
    """What one scheduled time became."""

    schedule: str
    scheduled_at: datetime
    run_id: str
    status: str = Field(description="the capsule run's status, or already_ran")
    already_ran: bool = False
    attempt: int = Field(
        default=1, ge=1, description="1, or 2.. for a forced re-run (`backfill --force`)"
    )


class RecentRun(FrozenModel):
    """One of a schedule's recent starts: its time, its run and what became of it."""

    scheduled_at: datetime
    run_id: str
    outcome: str


class ScheduleView(FrozenModel):
    """A schedule as `forge schedule describe` and `GET /v1/schedules/{name}` show it."""

    name: str
    capsule: str
    next_version: str = Field(description="the capsule version the next run would use")
    when: str = Field(description="the calendar or interval, and its time zone")
    overlap: str
    paused: bool
    note: str
    next_times: list[datetime]
    recent: list[RecentRun]
    actions: int = Field(description="times Temporal started the schedule's action")
    skipped_overlap: int
    missed_catchup: int
    already_ran: int = Field(description="starts refused: their time already had its run")
    forced: int = Field(description="re-runs allowed by `backfill --force`")
