"""Schedules on Temporal Schedules (shared by the CLI and later the API): check, create, observe.

A Forge schedule is one Temporal Schedule whose action starts ScheduledCapsuleWorkflow with the
capsule, its input templates and parameters. Its Temporal id carries the tenant, so a tenant
sees and touches only its own schedules. Everything a schedule names is checked before it is
created (the capsule, every parameter, every input template, the cron expression, the zone, the
interval and the windows): a refusal creates nothing.
"""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleBackfill,
    ScheduleHandle,
    ScheduleIntervalSpec,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
    WorkflowFailureError,
)
from temporalio.service import RPCError

from activities.capsules.prepare_run import capsule_ref
from activities.schedules.input_templates import check_template
from activities.schedules.options import (
    check_cron,
    check_zone,
    invalid,
    overlap_policy,
    parse_duration,
)
from activities.store.capsules import CapsuleStore
from activities.store.schedule_claims import ScheduleClaims
from compiler.plan.params import bind_params
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.plan import ParameterDecl
from schemas.schedules import (
    SCHEDULE_NAME_PATTERN,
    RecentRun,
    ScheduledRunInput,
    ScheduledRunResult,
    ScheduleView,
)
from schemas.scope import Scope, tenant_tag
from schemas.spelling import Named, Spelled, literal
from workers.services.run_reads import failure_text
from workflows.policies import tenant_attributes, tenant_priority
from workflows.scheduled_capsule import ScheduledCapsuleWorkflow

__all__ = [
    "Listed",
    "ScheduleRequest",
    "create",
    "handle_of",
    "listed",
    "schedule_id",
]

_NAME = re.compile(SCHEDULE_NAME_PATTERN)


@dataclass(frozen=True)
class ScheduleRequest:
    """`forge schedule create`, as given."""

    name: str
    capsule: str
    cron: str | None = None
    every: str | None = None
    tz: str = "UTC"
    overlap: str = "skip"
    catchup_window: str | None = None
    pause_on_failure: bool = False
    note: str | None = None
    inputs: dict[str, str] | None = None
    params: dict[str, str] | None = None


def schedule_id(scope: Scope, name: str) -> str:
    """The Temporal Schedule id of a tenant's schedule.

    `:` is in neither a tenant id nor a schedule name, so no two (tenant, name) pairs share an
    id (with `-`, tenant `a` schedule `b-c` and tenant `a-b` schedule `c` would).
    """
    return f"forge-{scope.tenant}:{name}"


def handle_of(client: Client, scope: Scope, name: str) -> ScheduleHandle:
    return client.get_schedule_handle(schedule_id(scope, name))


@contextmanager
def existing(scope: Scope, name: str) -> Iterator[None]:
    """Temporal's answer for a schedule it does not hold, as SCHEDULE_NOT_FOUND."""
    try:
        yield
    except RPCError:
        raise ForgeError(
            f"tenant {scope.tenant!r} has no schedule {name!r}: see `forge schedule list`",
            code=ErrorCode.SCHEDULE_NOT_FOUND,
        ) from None


@dataclass(frozen=True)
class Listed:
    """A schedule in the tenant's list."""

    name: str
    capsule: str
    paused: bool


async def listed(client: Client, scope: Scope) -> list[Listed]:
    """The tenant's schedules by name: Temporal's list, read through the tenant's id prefix."""
    prefix = schedule_id(scope, "")
    found = []
    async for entry in await client.list_schedules():
        if not entry.id.startswith(prefix):
            continue
        memo = await entry.memo()
        if memo.get("tenant") != scope.tenant:
            continue
        paused = bool(entry.schedule and entry.schedule.state.paused)
        found.append(Listed(entry.id.removeprefix(prefix), str(memo.get("capsule", "")), paused))
    return sorted(found, key=lambda s: s.name)


async def update(
    client: Client, task_queue: str, capsules: CapsuleStore, scope: Scope, req: ScheduleRequest
) -> None:
    """Replace a schedule's capsule, calendar, policies and inputs, checked as at create."""
    new = check(capsules, scope, req, task_queue)

    def replace(current: ScheduleUpdateInput) -> ScheduleUpdate:
        new.state.paused = current.description.schedule.state.paused
        return ScheduleUpdate(schedule=new)

    with existing(scope, req.name):
        await handle_of(client, scope, req.name).update(replace)


async def act(client: Client, claims: ScheduleClaims, scope: Scope, name: str, what: str) -> None:
    """pause, unpause, trigger or delete (which forgets the schedule's claims too)."""
    handle = handle_of(client, scope, name)
    with existing(scope, name):
        if what in ("pause", "unpause"):
            # Temporal keeps one note per schedule: the schedule's own stays, or who did it.
            state = (await handle.describe()).schedule.state
            note = state.note or f"{what}d by {scope.actor.id}"
            await (handle.pause if what == "pause" else handle.unpause)(note=note)
        elif what == "trigger":
            await handle.trigger()
        elif what == "delete":
            await handle.delete()
            claims.forget(scope, name)


def check(capsules: CapsuleStore, scope: Scope, req: ScheduleRequest, task_queue: str) -> Schedule:
    """Everything the request names, checked; the Temporal Schedule to create.

    Raises:
        ForgeError (SCHEDULE_INVALID), CapsuleNotFound, ParameterInvalid: the one thing that is
            wrong.
    """
    if not _NAME.fullmatch(req.name):
        raise ForgeError(
            f"schedule name {req.name!r}: use 1 to 48 lower-case letters, digits, '_' or '-', "
            "starting with a letter or digit (e.g. billing-weekly)",
            code=ErrorCode.SCHEDULE_INVALID,
        )
    if (req.cron is None) == (req.every is None):
        raise ForgeError("", code=ErrorCode.SCHEDULE_INVALID).spell(
            Spelled(
                "give exactly one of {0} and {1}",
                (Named("option", "cron", "EXPR"), Named("option", "every", "DURATION")),
            )
        )
    zone = check_zone(req.tz)
    spec = (
        ScheduleSpec(cron_expressions=[check_cron(req.cron)], time_zone_name=zone)
        if req.cron is not None
        else ScheduleSpec(
            intervals=[ScheduleIntervalSpec(every=parse_duration("every", req.every or ""))],
            time_zone_name=zone,
        )
    )
    window: timedelta | None = None
    if req.catchup_window is not None:
        window = parse_duration("catchup_window", req.catchup_window)
    policy = overlap_policy(req.overlap)
    name, number = capsule_ref(req.capsule)
    version = capsules.get(scope, name, number)
    content = version.content
    decls = [ParameterDecl(name=s.name, type=s.type, default=s.default) for s in content.scalars]
    bind_params(decls, req.params or {})  # every value typed now: a bad one creates nothing
    declared = {i.name: i for i in content.inputs}
    inputs = req.inputs or {}
    unknown = sorted(set(inputs) - set(declared))
    if unknown:
        known = literal(", ".join(declared) or "none")
        raise ForgeError("", code=ErrorCode.SCHEDULE_INVALID).spell(
            Spelled(
                "{0}: "
                + literal(f"capsule {version.ref} has no input {unknown[0]!r}; its inputs: ")
                + known,
                (Named("input", unknown[0], ""),),
            )
        )
    missing = [i.name for i in content.inputs if i.required and i.name not in inputs]
    if missing:
        example = literal(f"data/{{scheduled:%Y-%m-%d}}/{missing[0]}.csv")
        raise ForgeError("", code=ErrorCode.SCHEDULE_INVALID).spell(
            Spelled(
                "missing input template(s) for "
                + ", ".join(f"{{{i}}}" for i in range(len(missing)))
                + ": give each a path template, e.g. "
                + example,
                tuple(Named("input", name, "") for name in missing),
            )
        )
    for input_name, template in sorted(inputs.items()):
        check_template(input_name, template)
    action = ScheduledRunInput(
        schedule=req.name,
        scope=scope,
        capsule=req.capsule,
        inputs=inputs,
        params=req.params or {},
        tz=zone,
        when=f"cron {req.cron}" if req.cron is not None else f"every {req.every}",
    )
    return Schedule(
        action=ScheduleActionStartWorkflow(
            ScheduledCapsuleWorkflow.run,
            action,
            id=f"scheduled-{req.name}{tenant_tag(scope.tenant)}",
            task_queue=task_queue,
            typed_search_attributes=tenant_attributes(scope.tenant),
            priority=tenant_priority(scope.tenant),
        ),
        spec=spec,
        policy=SchedulePolicy(
            overlap=policy,
            catchup_window=window,
            pause_on_failure=req.pause_on_failure,
        ),
        state=ScheduleState(note=req.note),
    )


async def create(
    client: Client, task_queue: str, capsules: CapsuleStore, scope: Scope, req: ScheduleRequest
) -> ScheduleHandle:
    """Check the request, then create the Temporal Schedule; a refusal creates nothing."""
    schedule = check(capsules, scope, req, task_queue)
    try:
        return await client.create_schedule(
            schedule_id(scope, req.name),
            schedule,
            memo={"tenant": scope.tenant, "capsule": req.capsule},
        )
    except ScheduleAlreadyRunningError:
        raise ForgeError(
            f"schedule {req.name!r} exists: change it with `forge schedule update`, or delete "
            "it first",
            code=ErrorCode.SCHEDULE_INVALID,
        ) from None
    except RPCError as exc:
        raise ForgeError(
            f"Temporal refused schedule {req.name!r}: {exc.message}",
            code=ErrorCode.SCHEDULE_INVALID,
        ) from None


async def backfill(
    client: Client,
    claims: ScheduleClaims,
    scope: Scope,
    name: str,
    start: datetime,
    end: datetime,
    overlap: str = "buffer-all",
    *,
    force: bool = False,
) -> None:
    """Every scheduled time in [start, end] is started now, one after the other by default.

    Each is claimed before it runs, so a time that already ran makes no second run, unless
    `force`: then a force over [start, end] is recorded first, and each time in it runs once
    more (a repeat of the same plain backfill afterwards still runs none).
    """
    if start.tzinfo is None or end.tzinfo is None or end <= start:
        raise invalid(
            "{0} and {1}: two times with a zone (e.g. 2026-11-02T00:00Z), the start first",
            "start",
            "end",
        )
    handle = handle_of(client, scope, name)
    with existing(scope, name):
        await handle.describe()  # an unknown schedule records no force
    force_id = claims.allow_rerun(scope, name, start, end) if force else None
    try:
        with existing(scope, name):
            await handle.backfill(
                ScheduleBackfill(start_at=start, end_at=end, overlap=overlap_policy(overlap))
            )
    except BaseException:
        if force_id is not None:  # the backfill never began: nothing may run under its force
            claims.revoke(scope, name, force_id)
        raise


async def describe(
    client: Client, capsules: CapsuleStore, claims: ScheduleClaims, scope: Scope, name: str
) -> ScheduleView:
    """The schedule, its next fire times, its recent runs and what it skipped or refused."""
    handle = handle_of(client, scope, name)
    with existing(scope, name):
        desc = await handle.describe()
    action = desc.schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow)
    [raw] = action.args
    if isinstance(raw, ScheduledRunInput):
        spec_input = raw
    else:  # described schedules carry their action's arguments as payloads
        [spec_input] = await client.data_converter.decode([raw], [ScheduledRunInput])
    capsule_name, number = capsule_ref(spec_input.capsule)
    newest = capsules.get(scope, capsule_name, number)
    pin = "pinned" if number is not None else "the newest"
    when = f"{spec_input.when} ({spec_input.tz})"
    recent = [await _outcome(client, a.scheduled_at, a.action) for a in desc.info.recent_actions]
    counts = claims.counts(scope, name)
    return ScheduleView(
        name=name,
        capsule=spec_input.capsule,
        next_version=f"{newest.ref} ({pin})",
        when=when,
        overlap=desc.schedule.policy.overlap.name.lower().replace("_", "-"),
        paused=desc.schedule.state.paused,
        note=desc.schedule.state.note or "",
        next_times=list(desc.info.next_action_times[:5]),
        recent=recent[-10:],
        actions=desc.info.num_actions,
        skipped_overlap=desc.info.num_actions_skipped_overlap,
        missed_catchup=desc.info.num_actions_missed_catchup_window,
        already_ran=counts.already_ran,
        forced=counts.forced,
    )


async def _outcome(client: Client, at: datetime, action: object) -> RecentRun:
    workflow_id = getattr(action, "workflow_id", "")
    # Each start of a time has the same workflow id: its first run id names this one.
    run = getattr(action, "first_execution_run_id", None) or None
    handle = client.get_workflow_handle(workflow_id, run_id=run, result_type=ScheduledRunResult)
    try:
        desc = await handle.describe()
    except RPCError:
        return RecentRun(scheduled_at=at, run_id=workflow_id, outcome="unknown")
    status = desc.status.name.lower() if desc.status else "unknown"
    if status == "failed":  # e.g. its input was missing: no capsule run started, say why
        try:
            await handle.result()
        except WorkflowFailureError as exc:
            status = f"failed: {failure_text(exc)}"
    if not status.startswith("completed"):
        return RecentRun(scheduled_at=at, run_id=workflow_id, outcome=status)
    result = await handle.result()
    forced = f" (re-run {result.attempt})" if result.attempt > 1 and not result.already_ran else ""
    return RecentRun(scheduled_at=at, run_id=result.run_id, outcome=result.status + forced)
