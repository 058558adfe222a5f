"""`forge dev` commands: start, stop and inspect the embedded Temporal dev server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from workers.settings import Settings, SettingsError

if TYPE_CHECKING:
    from workers.process.devserver import DevServerError, DevServerStatus

__all__ = ["dev_app"]

dev_app = typer.Typer(
    help="Run the embedded Temporal dev server (state and logs live in FORGE_HOME).",
    no_args_is_help=True,
)

_out = Console()
_err = Console(stderr=True)
_T = TypeVar("_T")

EXIT_NOT_RUNNING = 1
EXIT_ERROR = 2


@dev_app.command()
def up() -> None:
    """Start the dev server, or confirm the recorded one answers."""
    from workers.process.devserver import DevServer

    settings = _guard(Settings.from_env)
    if settings.temporal_address is not None:
        _out.print(
            f"FORGE_TEMPORAL_ADDRESS is set: using [bold]{escape(settings.temporal_address)}"
            "[/], nothing to start."
        )
        return
    with _out.status("Starting the Temporal dev server…", spinner="dots"):
        info = _guard(lambda: asyncio.run(DevServer().up(settings)))
    verb = "already running" if info.already_running else "ready"
    _out.print(
        f"[green]✓[/] Temporal dev server {verb} at [bold]{info.address}[/] "
        f"(pid {info.pid}, namespace {escape(info.namespace)})"
    )


@dev_app.command()
def down() -> None:
    """Stop the recorded dev server; a no-op when none is running."""
    from workers.process.devserver import DevServer

    settings = _guard(Settings.from_env)
    with _out.status("Stopping the Temporal dev server…", spinner="dots"):
        stopped = _guard(lambda: asyncio.run(DevServer().down(settings)))
    if stopped:
        _out.print("[green]✓[/] Temporal dev server stopped.")
    else:
        _out.print("No Temporal dev server was running.")


@dev_app.command()
def status() -> None:
    """Show the dev server's state; exits 1 when it is not running."""
    from workers.process.devserver import DevServer

    settings = _guard(Settings.from_env)
    state = _guard(lambda: asyncio.run(DevServer().status(settings)))
    _out.print(_status_table(state, settings))
    if not state.running:
        raise typer.Exit(EXIT_NOT_RUNNING)


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


def _guard(action: Callable[[], _T]) -> _T:
    # Expected failures become one red line and exit 2; anything else is a bug and
    # keeps its traceback.
    from workers.process.devserver import DevServerError

    try:
        return action()
    except (SettingsError, DevServerError) as err:
        _fail(err)


def _fail(err: SettingsError | DevServerError) -> NoReturn:
    from workers.process.devserver import DevServerError

    if isinstance(err, DevServerError):
        _err.print(f"[red]error:[/] {escape(err.message)}", soft_wrap=True)
        if err.detail:
            _err.print(escape(err.detail), style="dim", soft_wrap=True)
    else:
        _err.print(f"[red]error:[/] {escape(str(err))}", soft_wrap=True)
    raise typer.Exit(EXIT_ERROR)
