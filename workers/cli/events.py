"""`forge events` (list, the type catalogue, verify the hash chain) and `forge db upgrade`."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from schemas.scope_ids import DEFAULT_TENANT
from workers.cli.common import VerbGroup, fail, fail_error, out, settings

if TYPE_CHECKING:
    from activities.store.events import EventStore
    from activities.store.records import ChainVerification
    from schemas.events import Event

__all__ = ["db_app", "events_app"]

events_app = typer.Typer(
    cls=VerbGroup,
    help="Inspect the event log (FORGE_DATABASE_URL) and verify its hash chains.",
    no_args_is_help=True,
)
db_app = typer.Typer(
    cls=VerbGroup, help="Manage the event store's database schema.", no_args_is_help=True
)

EXIT_BROKEN = 1
_T = TypeVar("_T")


def _guard(action: Callable[[], _T], what: str) -> _T:
    """Run a store action; store and database errors exit 2 with what went wrong."""
    from sqlalchemy.exc import SQLAlchemyError

    from activities.store.errors import StoreError
    from activities.store.roles import AppRoleUnsafe

    try:
        return action()
    except (StoreError, AppRoleUnsafe) as exc:
        fail_error(exc)
    except ValueError as exc:
        fail(  # a database URL that does not parse or names no supported database
            str(exc),
            "check FORGE_DATABASE_URL (and FORGE_DATABASE_OWNER_URL for `forge db upgrade`)",
            code=ErrorCode.SETTINGS_INVALID,
        )
    except SQLAlchemyError as exc:
        # The driver's first line says what failed (refused, auth, unknown database).
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        fail(
            f"{what}: {detail}",
            "check FORGE_DATABASE_URL and that the database is reachable",
            code=ErrorCode.STORE_ERROR,
        )


def _known_tenants(store: EventStore) -> set[str]:
    """Tenants with events, tenants created (`forge tenants create`) and the default one."""
    from activities.store.access import open_access_store

    url = settings().database_url
    with _guard(lambda: open_access_store(url), "cannot open the tenants") as access:
        created = {t.tenant_id for t in _guard(access.tenants, "cannot read tenants")}
    return {DEFAULT_TENANT, *created, *_guard(store.tenants, "cannot read tenants")}


def _open() -> EventStore:
    from activities.store.events import open_event_store

    url = settings().database_url
    return _guard(lambda: open_event_store(url), "cannot open the event store")


@events_app.command("list")
def list_cmd(
    run: Annotated[str | None, typer.Option("--run", help="Only events of this run.")] = None,
    type_: Annotated[
        str | None, typer.Option("--type", help="Only events of this type, e.g. run.started.v1.")
    ] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant.")] = None,
    step: Annotated[
        str | None,
        typer.Option("--step", help="Only events about this step of the run (needs --run)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many.")] = 100,
    as_json: Annotated[
        bool, typer.Option("--json", help='Print {"events": [...]}: each event whole, as stored.')
    ] = False,
    wide: Annotated[
        bool, typer.Option("--wide", help="Also show event ids, causes and tenants.")
    ] = False,
) -> None:
    """List events in tenant chain order (a table that fits 80 columns; --wide, --json)."""
    from activities.store.records import stored_envelope

    if step is not None and run is None:
        fail(
            f"--step {step} names a step of no run",
            "give the run too: forge events list --run RUN --step STEP",
            code=ErrorCode.USAGE_INVALID,
        )
    with _open() as store:
        found = _guard(
            # A step's events are a part of its run's, cut to --limit once they are picked.
            lambda: store.list_events(
                run_id=run, type=type_, tenant_id=tenant, limit=limit if step is None else 10**6
            ),
            "cannot read events",
        )
    if step is not None:
        found = [e for e in found if _about_step(e, step)][:limit]
    if as_json:
        typer.echo(json.dumps({"events": [stored_envelope(e) for e in found]}, indent=2))
        return
    if not found:
        out.print("No events match.")
        return
    out.print(_wide_table(found) if wide else _events_table(found))


def read_events(run_id: str, types: tuple[str, ...]) -> list[Event]:
    """The run's events of these types, in chain order (store errors exit 2)."""
    with _open() as store:
        return _guard(
            lambda: store.list_events(run_id=run_id, types=types, limit=1_000_000),
            "cannot read events",
        )


@events_app.command("types")
def types_cmd(
    as_json: Annotated[
        bool, typer.Option("--json", help='Print {"types": [...]}, each with its JSON Schema.')
    ] = False,
) -> None:
    """The event types Forge writes: version, payload model and what each records."""
    from schemas.event_catalogue import CATALOGUE

    if as_json:
        types = [
            {
                "type": t.name,
                "version": t.version,
                "payload": t.payload.__name__,
                "description": t.description,
                "schema": t.payload.model_json_schema(),
            }
            for t in CATALOGUE.values()
        ]
        typer.echo(json.dumps({"types": types}, indent=2))
        return
    table = Table(title=f"{len(CATALOGUE)} event types", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("type", "payload", "what it records"):
        table.add_column(column, overflow="fold")
    for t in CATALOGUE.values():
        table.add_row(escape(t.name), t.payload.__name__, escape(t.description))
    out.print(table)


def _events_table(found: list[Event]) -> Table:
    """What happened, when, to what: ids and causes are left to --wide and --json."""
    from schemas.scope_ids import DEFAULT_TENANT

    runs = {e.run_id for e in found}
    tenants = {e.scope.tenant for e in found}
    days = {e.timestamp.date() for e in found}
    title = f"{len(found)} event(s)"
    if len(runs) == 1 and None not in runs:
        title += f" of {next(iter(runs))}"
    if len(tenants) == 1 and tenants != {DEFAULT_TENANT}:
        title += f" · tenant {next(iter(tenants))}"
    if len(days) == 1:
        title += f" · {next(iter(days)):%Y-%m-%d} UTC"
    table = Table(title=escape(title), title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("time", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("stream", overflow="fold")
    table.add_column("#", justify="right")
    table.add_column("about", overflow="fold")
    if len(runs) > 1:
        table.add_column("run", overflow="fold")
    clock = "%H:%M:%S" if len(days) == 1 else "%m-%d %H:%M:%S"
    for e in found:
        stream = _short_stream(e)
        cells = [
            e.timestamp.strftime(clock),
            escape(e.type),
            escape(stream),
            str(e.seq),
            escape(_about(e, stream)),
        ]
        if len(runs) > 1:
            cells.append(escape(e.run_id or "-"))
        table.add_row(*cells)
    return table


def _about_step(e: Event, step: str) -> bool:
    """Whether `e` is about step `step` of its run: on the step's stream, or naming it."""
    return _short_stream(e) == f"step:{step}" or e.payload.get("step_key") == step


def _short_stream(e: Event) -> str:
    """The stream within its run: `run` for the run's own, else `step:KEY`, `gate:ID` and so on."""
    if e.run_id is None:
        return e.stream_id
    if e.stream_id == e.run_id:
        return "run"
    prefix = f"{e.run_id}:"
    return e.stream_id[len(prefix) :] if e.stream_id.startswith(prefix) else e.stream_id


def _about(e: Event, stream: str) -> str:
    """What the payload says the event is about, beyond what its stream already names."""
    p = e.payload
    parts = [
        str(p[k])
        for k in ("step_key", "gate_id", "decision", "failure_class", "status")
        if isinstance(p.get(k), str | int) and stream not in (f"step:{p[k]}", f"gate:{p[k]}")
    ]
    artifact = p.get("artifact")
    if isinstance(artifact, dict) and isinstance(artifact.get("path"), str):
        parts.append(artifact["path"])
    return " ".join(parts)


def _wide_table(found: list[Event]) -> Table:
    table = Table(title=f"{len(found)} event(s)", title_justify="left")
    for column in ("time (UTC)", "type", "tenant", "run", "stream:seq", "event", "caused by"):
        table.add_column(column, overflow="fold")
    for e in found:
        table.add_row(
            e.timestamp.strftime("%Y-%m-%d %H:%M:%S"),
            escape(e.type),
            escape(e.scope.tenant),
            escape(e.run_id or "-"),
            escape(f"{e.stream_id}:{e.seq}"),
            escape(e.event_id),
            escape(e.caused_by or "-"),
        )
    return table


@events_app.command()
def verify(
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="Verify one tenant; all tenants by default.")
    ] = None,
) -> None:
    """Re-hash every event and check each chain link; exit 1 at the first broken link."""
    with _open() as store:
        tenants = [tenant] if tenant else _guard(store.tenants, "cannot read tenants")
        if tenant is not None and tenant not in _known_tenants(store):
            fail(
                f"no tenant {tenant!r}: it has no events and was never created",
                "see `forge tenants list`; leave --tenant out to verify every tenant",
                code=ErrorCode.TENANT_INVALID,
            )
        results = [
            _guard(partial(store.verify_chain, t), f"cannot verify tenant {t!r}") for t in tenants
        ]
    if not results:
        out.print("The event log is empty: nothing to verify.")
        return
    out.print(_verification_table(results))
    broken = [r for r in results if r.first_broken is not None]
    for r in broken:
        assert r.first_broken is not None
        b = r.first_broken
        event = f" (event {b.event_id})" if b.event_id else ""
        out.print(
            f"[red]✗[/] tenant {escape(r.tenant_id)}: chain broken at tenant_seq "
            f"{b.tenant_seq}{escape(event)}: {escape(b.reason)}"
        )
    if broken:
        raise typer.Exit(EXIT_BROKEN)
    out.print(f"[green]✓[/] {sum(r.checked for r in results)} event(s) verified, chains intact.")


def _verification_table(results: list[ChainVerification]) -> Table:
    table = Table(title="hash chains", title_justify="left")
    table.add_column("tenant", overflow="fold")
    table.add_column("events checked", justify="right")
    table.add_column("chain")
    for r in results:
        status = "[green]intact[/]" if r.ok else "[red]broken[/]"
        table.add_row(escape(r.tenant_id), str(r.checked), status)
    return table


@db_app.command("upgrade")
def upgrade_cmd() -> None:
    """Create or migrate the schema at FORGE_DATABASE_URL (safe to repeat).

    With FORGE_DATABASE_OWNER_URL set (PostgreSQL), migrate as that owner and grant the role
    of FORGE_DATABASE_URL what the application needs (docs/isolation.md).
    """
    from activities.store.migrate import upgrade
    from activities.store.roles import AppRoleUnsafe, app_role_of

    s = settings()
    owner = s.database_owner_url
    try:
        role = None if owner is None else app_role_of(s.database_url, owner)
    except AppRoleUnsafe as exc:
        fail_error(exc)
    url = owner or s.database_url
    revision = _guard(lambda: upgrade(url, grant_to=role), "cannot migrate the database")
    out.print(f"[green]✓[/] database schema at revision {revision} (newest).")
    if role is not None:
        out.print(f"[green]✓[/] role {escape(role)} granted every table, held by row security.")
