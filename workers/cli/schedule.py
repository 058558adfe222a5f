"""`forge schedule ...`: capsules that run by themselves, on Temporal Schedules."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.scope_ids import DEFAULT_TENANT
from workers.cli.common import (
    TenantOption,
    VerbGroup,
    one_line_errors,
    out,
    run_async,
    scope_of,
    settings,
)
from workers.cli.common import temporal_client as client_for

if TYPE_CHECKING:
    from schemas.schedules import ScheduleView
    from workers.services import schedules

__all__ = ["schedule_app"]

schedule_app = typer.Typer(
    cls=VerbGroup,
    help="Schedules: a capsule that runs by itself on a calendar, on new data each time.",
    no_args_is_help=True,
)

Inputs = Annotated[
    list[str] | None,
    typer.Option(
        "--input", "-i", metavar="NAME=TEMPLATE", help="e.g. data/{scheduled:%Y-%m-%d}/x.csv"
    ),
]
Params = Annotated[list[str] | None, typer.Option("--param", metavar="NAME=VALUE")]
Cron = Annotated[str | None, typer.Option("--cron", metavar="EXPR", help="e.g. '0 9 * * FRI'")]
Every = Annotated[str | None, typer.Option("--every", metavar="DURATION", help="e.g. 1h, 15m")]
Zone = Annotated[str, typer.Option("--tz", metavar="ZONE", help="e.g. Europe/Berlin")]
Overlap = Annotated[
    str,
    typer.Option(
        "--overlap",
        help="skip, buffer-one, buffer-all, cancel-other, terminate-other or allow-all",
    ),
]
Window = Annotated[str | None, typer.Option("--catchup-window", metavar="DURATION")]
PauseOnFailure = Annotated[bool, typer.Option("--pause-on-failure")]
Note = Annotated[str | None, typer.Option("--note", metavar="TEXT")]
Capsule = Annotated[str, typer.Option("--capsule", metavar="CAP[@V]")]


def _pairs(pairs: list[str] | None, option: str) -> dict[str, str]:
    from schemas.error_codes import ErrorCode
    from schemas.errors import ForgeError

    given: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value:
            raise ForgeError(
                f"{option} {pair!r}: expected NAME=VALUE", code=ErrorCode.SCHEDULE_INVALID
            )
        given[name.strip()] = value
    return given


def _request(
    name: str,
    capsule: str,
    cron: str | None,
    every: str | None,
    tz: str,
    overlap: str,
    window: str | None,
    pause_on_failure: bool,
    note: str | None,
    inputs: list[str] | None,
    params: list[str] | None,
) -> schedules.ScheduleRequest:
    from workers.services import schedules

    return schedules.ScheduleRequest(
        name=name,
        capsule=capsule,
        cron=cron,
        every=every,
        tz=tz,
        overlap=overlap,
        catchup_window=window,
        pause_on_failure=pause_on_failure,
        note=note,
        inputs=_pairs(inputs, "--input"),
        params=_pairs(params, "--param"),
    )


@schedule_app.command("create")
@one_line_errors
def create_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    capsule: Capsule,
    cron: Cron = None,
    every: Every = None,
    tz: Zone = "UTC",
    overlap: Overlap = "skip",
    catchup_window: Window = None,
    pause_on_failure: PauseOnFailure = False,
    note: Note = None,
    inputs: Inputs = None,
    params: Params = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Create schedule NAME: run CAP on a calendar (--cron) or an interval (--every)."""
    from workers.process.worker import Services
    from workers.services import schedules

    scope = scope_of(tenant)
    req = _request(
        name, capsule, cron, every, tz, overlap, catchup_window, pause_on_failure, note,
        inputs, params,
    )  # fmt: skip
    s = settings()
    services = Services.from_settings(s)

    async def go() -> None:
        client = await client_for(s)
        await schedules.create(client, s.task_queue, services.capsules, scope, req)
        view = await schedules.describe(client, services.capsules, services.claims, scope, req.name)
        out.print(f"[green]✓[/] schedule [bold]{escape(name)}[/] runs {escape(view.capsule)}")
        _when(view)

    run_async(go())


def _when(view: ScheduleView) -> None:
    out.print(f"  {escape(view.when)}; overlap {view.overlap}; next run uses {view.next_version}")
    if view.next_times:
        out.print("  next: " + ", ".join(f"{t:%Y-%m-%d %H:%M} UTC" for t in view.next_times[:3]))


@schedule_app.command("describe")
@one_line_errors
def describe_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Next fire times, recent runs and their outcomes, skipped and refused counts."""
    from workers.process.worker import Services
    from workers.services import schedules

    scope = scope_of(tenant)
    s = settings()
    services = Services.from_settings(s)

    async def go() -> ScheduleView:
        client = await client_for(s)
        return await schedules.describe(client, services.capsules, services.claims, scope, name)

    view = run_async(go())
    state = "paused" if view.paused else "active"
    out.print(f"[bold]{escape(view.name)}[/] ({state}) runs {escape(view.capsule)}")
    if view.note:
        out.print(f"  note: {escape(view.note)}")
    _when(view)
    out.print(
        f"  started {view.actions}; skipped for overlap {view.skipped_overlap}; missed the "
        f"catch-up window {view.missed_catchup}; already ran (refused) {view.already_ran}; "
        f"forced re-runs {view.forced}"
    )
    if view.recent:
        table = Table(title="recent runs", title_justify="left")
        for col in ("scheduled", "run", "outcome"):
            table.add_column(col)
        for r in view.recent:
            table.add_row(f"{r.scheduled_at:%Y-%m-%d %H:%M:%S}", r.run_id, r.outcome)
        out.print(table)


@schedule_app.command("list")
@one_line_errors
def list_cmd(tenant: TenantOption = DEFAULT_TENANT) -> None:
    """The tenant's schedules."""
    from workers.services import schedules

    scope = scope_of(tenant)
    s = settings()

    async def go() -> list[schedules.Listed]:
        return await schedules.listed(await client_for(s), scope)

    found = run_async(go())
    if not found:
        out.print(f"no schedules for tenant {tenant}: create one with `forge schedule create`")
        return
    table = Table(title=f"schedules of tenant {tenant}", title_justify="left")
    for col in ("schedule", "capsule", "state"):
        table.add_column(col)
    for item in found:
        state = "paused" if item.paused else "active"
        table.add_row(escape(item.name), escape(item.capsule), state)
    out.print(table)


def _act(name: str, tenant: str, what: str) -> None:
    from workers.process.worker import Services
    from workers.services import schedules

    scope = scope_of(tenant)
    s = settings()
    services = Services.from_settings(s)

    async def go() -> None:
        await schedules.act(await client_for(s), services.claims, scope, name, what)

    run_async(go())


Name = Annotated[str, typer.Argument(metavar="NAME")]


@schedule_app.command("pause")
@one_line_errors
def pause_cmd(name: Name, tenant: TenantOption = DEFAULT_TENANT) -> None:
    """Pause schedule NAME: nothing fires until it is unpaused."""
    _act(name, tenant, "pause")
    out.print(f"[green]✓[/] schedule {escape(name)} paused")


@schedule_app.command("unpause")
@one_line_errors
def unpause_cmd(name: Name, tenant: TenantOption = DEFAULT_TENANT) -> None:
    """Unpause schedule NAME."""
    _act(name, tenant, "unpause")
    out.print(f"[green]✓[/] schedule {escape(name)} unpaused")


@schedule_app.command("trigger")
@one_line_errors
def trigger_cmd(name: Name, tenant: TenantOption = DEFAULT_TENANT) -> None:
    """Run schedule NAME once now (the time now is its scheduled time)."""
    _act(name, tenant, "trigger")
    out.print(f"[green]✓[/] schedule {escape(name)} triggered")


@schedule_app.command("delete")
@one_line_errors
def delete_cmd(name: Name, tenant: TenantOption = DEFAULT_TENANT) -> None:
    """Delete schedule NAME (the runs it made stay)."""
    _act(name, tenant, "delete")
    out.print(f"[green]✓[/] schedule {escape(name)} deleted")


@schedule_app.command("backfill")
@one_line_errors
def backfill_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    start: Annotated[datetime, typer.Option("--start", metavar="T", help="e.g. 2026-11-02T00:00Z")],
    end: Annotated[datetime, typer.Option("--end", metavar="T")],
    overlap: Overlap = "buffer-all",
    force: Annotated[
        bool,
        typer.Option("--force", help="run again the times in the range that already ran, once"),
    ] = False,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Start every scheduled time in [--start, --end]; a time that already ran runs no more."""
    from workers.process.worker import Services
    from workers.services import schedules

    scope = scope_of(tenant)
    s = settings()
    services = Services.from_settings(s)

    async def go() -> None:
        client = await client_for(s)
        await schedules.backfill(
            client, services.claims, scope, name, start, end, overlap, force=force
        )

    run_async(go())
    span = f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M}"
    if force:
        out.print(
            f"[yellow]![/] forced backfill of {escape(name)} from {span} started: times in it "
            "that already ran run once more (`describe` counts them as forced re-runs)"
        )
    else:
        out.print(f"[green]✓[/] backfill of {escape(name)} from {span} started")


@schedule_app.command("update")
@one_line_errors
def update_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    capsule: Capsule,
    cron: Cron = None,
    every: Every = None,
    tz: Zone = "UTC",
    overlap: Overlap = "skip",
    catchup_window: Window = None,
    pause_on_failure: PauseOnFailure = False,
    note: Note = None,
    inputs: Inputs = None,
    params: Params = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Replace schedule NAME's capsule, calendar, policies and inputs (checked like create)."""
    from workers.process.worker import Services
    from workers.services import schedules

    scope = scope_of(tenant)
    req = _request(
        name, capsule, cron, every, tz, overlap, catchup_window, pause_on_failure, note,
        inputs, params,
    )  # fmt: skip
    s = settings()
    services = Services.from_settings(s)

    async def go() -> None:
        await schedules.update(await client_for(s), s.task_queue, services.capsules, scope, req)

    run_async(go())
    out.print(f"[green]✓[/] schedule {escape(name)} updated")
