"""`forge dev` commands: start, stop and inspect the embedded Temporal dev server."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from workers.cli.common import VerbGroup, err, fail_error, masked, out, run_async
from workers.cli.common import settings as forge_settings

if TYPE_CHECKING:
    from workers.process.devserver import DevServerError, DevServerStatus
    from workers.settings import Settings

__all__ = ["dev_app"]

dev_app = typer.Typer(
    cls=VerbGroup,
    help="Run the embedded Temporal dev server (state and logs live in FORGE_HOME).",
    no_args_is_help=True,
)

_T = TypeVar("_T")

EXIT_NOT_RUNNING = 1


@dev_app.command()
def up(
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=0,
            metavar="N",
            help="Also start N `forge worker` processes: the topology of a deployment.",
        ),
    ] = None,
    postgres: Annotated[
        bool, typer.Option("--postgres", help="With --workers: a PostgreSQL cluster in FORGE_HOME.")
    ] = False,
    s3: Annotated[
        bool, typer.Option("--s3", help="With --workers: a local S3 server (moto) and a bucket.")
    ] = False,
    api: Annotated[
        bool, typer.Option("--api", help="With --workers: the API (`forge api`).")
    ] = False,
) -> None:
    """Start the dev server, or confirm the recorded one answers; with --workers, the topology."""
    from workers.process.devserver import DevServer

    settings = forge_settings()
    if workers is not None or postgres or s3 or api:
        from workers.cli.dev_topology import topology_up

        topology_up(settings, workers, postgres=postgres, s3=s3, api=api)
        return
    if settings.temporal_address is not None:
        out.print(
            f"FORGE_TEMPORAL_ADDRESS is set: using [bold]{escape(settings.temporal_address)}"
            "[/], nothing to start."
        )
        return
    with out.status("Starting the Temporal dev server…", spinner="dots"):
        info = guard(lambda: run_async(DevServer().up(settings)))
    verb = "already running" if info.already_running else "ready"
    out.print(
        f"[green]✓[/] Temporal dev server {verb} at [bold]{info.address}[/] "
        f"(pid {info.pid}, namespace {escape(info.namespace)})"
    )


@dev_app.command()
def down() -> None:
    """Stop the recorded dev server and every process `forge dev up` started with it."""
    from workers.cli.dev_topology import topology_down
    from workers.process.devserver import DevServer

    settings = forge_settings()
    if topology_down(settings):
        return
    with out.status("Stopping the Temporal dev server…", spinner="dots"):
        stopped = guard(lambda: run_async(DevServer().down(settings)))
    if stopped:
        out.print("[green]✓[/] Temporal dev server stopped.")
    else:
        out.print("No Temporal dev server was running.")


@dev_app.command()
def status(
    as_json: Annotated[
        bool, typer.Option("--json", help="Every process as JSON, for scripts.")
    ] = False,
) -> None:
    """Show the dev server's state (and every topology process); exits 1 unless all are up."""
    from workers.cli.dev_topology import topology_status_cmd
    from workers.process.devserver import DevServer

    settings = forge_settings()
    if topology_status_cmd(settings, as_json=as_json):
        return
    state = guard(lambda: run_async(DevServer().status(settings)))
    out.print(_status_table(state, settings))
    if not state.running:
        raise typer.Exit(EXIT_NOT_RUNNING)


@dev_app.command()
def env() -> None:
    """Print `export NAME=VALUE` lines for the topology's variables (passwords included).

    `eval "$(forge dev env)"` points this shell's `forge` at the running topology.
    """
    from workers.cli.dev_topology import topology_env

    topology_env(forge_settings())


def _status_table(state: DevServerStatus, settings: Settings) -> Table:
    table = Table(title="Temporal dev server", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("state", _state_text(state))
    table.add_row("address", state.address or "-")
    table.add_row("pid", str(state.pid) if state.pid is not None else "-")
    table.add_row("namespace", escape(state.namespace or settings.namespace))
    table.add_row(
        "started", state.started_at.isoformat(timespec="seconds") if state.started_at else "-"
    )
    table.add_row("database", escape(str(state.db_path)))
    table.add_row("log", escape(str(state.log_path)))
    if settings.temporal_address is not None:
        table.add_row(
            "in use instead", escape(f"{settings.temporal_address} (FORGE_TEMPORAL_ADDRESS)")
        )
    return table


def _state_text(state: DevServerStatus) -> str:
    if state.running:
        return "[green]running[/]"
    if state.alive:
        return "[yellow]process alive, not answering[/]"
    if state.recorded:
        return "[red]stopped[/] (stale record; `forge dev up` replaces it)"
    return "[red]not running[/]"


def guard(action: Callable[[], _T]) -> _T:
    # An expected failure is the one error line (its log tail dim above it) and exit 2;
    # anything else is a bug and keeps its traceback.
    from workers.process.devserver import DevServerError

    try:
        return action()
    except DevServerError as exc:
        _fail(exc)


def _fail(exc: DevServerError) -> NoReturn:
    if exc.detail:
        err.print(f"[dim]{masked(exc.detail)}[/]", soft_wrap=True)
    fail_error(exc)
