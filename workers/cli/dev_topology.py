"""`forge dev up --workers N [--postgres] [--s3] [--api]`, and the topology in `status`/`down`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.common import fail, out, run_async
from workers.cli.dev import EXIT_NOT_RUNNING, guard

if TYPE_CHECKING:
    from workers.process.topology_health import TopologyStatus
    from workers.process.topology_record import TopologyRecord
    from workers.settings import Settings

__all__ = ["topology_down", "topology_env", "topology_status_cmd", "topology_up"]


def topology_up(
    settings: Settings, workers: int | None, *, postgres: bool, s3: bool, api: bool
) -> None:
    """Start the topology and print what runs where, and the variables each process got."""
    from workers.process.topology import Topology
    from workers.process.topology_record import Shape, shown

    if workers is None:
        given = " ".join(
            f for f, on in (("--postgres", postgres), ("--s3", s3), ("--api", api)) if on
        )
        fail(
            f"`forge dev up {given}` needs --workers N",
            "add --workers 1 (or more) to start the topology, or leave out "
            f"{given} to start the dev server alone",
            code=ErrorCode.USAGE_INVALID,
        )
    shape = Shape(workers=workers, postgres=postgres, s3=s3, api=api)
    with out.status(f"Starting {shape.describe()}…", spinner="dots"):
        record, already = guard(lambda: run_async(Topology(settings).up(shape)))
    verb = "already running" if already else "ready"
    out.print(
        f"[green]✓[/] topology {verb}: {escape(shape.describe())} (FORGE_HOME {settings.home})"
    )
    out.print(_processes_table(record))
    out.print('Every process was given these variables (`eval "$(forge dev env)"` exports them):')
    for name, value in sorted(shown(record.environment).items()):
        out.print(f"  {name}={escape(value)}", soft_wrap=True, highlight=False)


def topology_env(settings: Settings) -> None:
    """Print `export NAME=VALUE` for every variable the topology's processes were given."""
    import shlex

    from workers.process.topology_record import read_record

    record = guard(lambda: read_record(settings.home)) if settings.home.is_dir() else None
    if record is None:
        fail(
            f"no topology is recorded in FORGE_HOME {settings.home}",
            "start one with `forge dev up --workers N`, or set FORGE_HOME to the one you started",
            code=ErrorCode.DEV_SERVER,
        )
    # Plain text, no markup or wrapping: a shell evaluates it.
    for name, value in sorted(record.environment.items()):
        typer.echo(f"export {name}={shlex.quote(value)}")


def topology_down(settings: Settings) -> bool:
    """Stop a recorded topology; False when there is none (`down` then means what it did)."""
    from workers.process.topology import Topology
    from workers.process.topology_record import read_record

    if not settings.home.is_dir() or guard(lambda: read_record(settings.home)) is None:
        return False
    with out.status("Stopping the topology…", spinner="dots"):
        stopped = guard(lambda: run_async(Topology(settings).down()))
    for name in stopped:
        out.print(f"[green]✓[/] {name} stopped")
    if not stopped:
        out.print("Nothing was running (a stale topology record was removed).")
    return True


def topology_status_cmd(settings: Settings, *, as_json: bool) -> bool:
    """Print a topology's status (or any status as JSON); False when `status` keeps its table."""
    from workers.process.topology_health import topology_status
    from workers.process.topology_record import read_record

    record = guard(lambda: read_record(settings.home)) if settings.home.is_dir() else None
    if record is None and not as_json:
        return False
    state = run_async(topology_status(settings, record))
    if as_json:
        out.print_json(state.model_dump_json())
    else:
        out.print(_status_table(state))
    if not state.running:
        raise typer.Exit(EXIT_NOT_RUNNING)
    return True


def _processes_table(record: TopologyRecord) -> Table:
    table = Table(title=None, title_justify="left")
    for column in ("process", "pid", "port", "log"):
        table.add_column(column)
    port = record.temporal_address.rpartition(":")[2]
    table.add_row("temporal", str(record.temporal_pid), port, escape(str(record.temporal_log)))
    for p in record.processes:
        shown = str(p.port) if p.port is not None else "-"
        table.add_row(p.name, str(p.pid), shown, escape(str(p.log)))
    return table


def _status_table(state: TopologyStatus) -> Table:
    table = Table(title="Forge dev topology", title_justify="left")
    # The metrics column only when a process serves /metrics (FORGE_METRICS_PORT set).
    metrics = any(p.metrics_port is not None for p in state.processes)
    columns = ("process", "pid", "port", "metrics", "health", "probe")
    for column in columns if metrics else tuple(c for c in columns if c != "metrics"):
        table.add_column(column)
    for p in state.processes:
        health = "[green]healthy[/]" if p.healthy else "[red]down[/]"
        if p.alive and not p.healthy:
            health = "[yellow]not answering[/]"
        served = [str(p.metrics_port) if p.metrics_port is not None else "-"] if metrics else []
        table.add_row(
            p.name,
            str(p.pid) if p.pid is not None else "-",
            str(p.port) if p.port is not None else "-",
            *served,
            health,
            escape(p.probe),
        )
    return table
