"""`forge sandbox exec`: run one script under exactly the sandbox that steps run in."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.common import VerbGroup, err, fail, fail_error, out, settings

if TYPE_CHECKING:
    from activities.sandbox.runner import SandboxResult
    from schemas.profile import SandboxPolicy

__all__ = ["sandbox_app"]

sandbox_app = typer.Typer(
    cls=VerbGroup,
    help="Run code in the step sandbox (bubblewrap, the sealed step runtime, rlimits, no network).",
    no_args_is_help=True,
)

EXIT_FAILED = 1
_TAIL_LINES = 20


def _default_policy() -> SandboxPolicy:
    from activities.compile.typelib import load_profiles
    from compiler.errors import PackError

    try:
        layers, _ = load_profiles()
    except PackError as exc:
        fail("the built-in execution profiles do not load", str(exc), code=ErrorCode.PACK_INVALID)
    return layers.builtin["default"].sandbox


def _temporary_workspace() -> Path:
    """A fresh workspace under the workspace root (FORGE_WORKSPACE_ROOT), as a step's would be."""
    from activities.sandbox.runner import WorkspaceViolation
    from activities.sandbox.workspace import prepare_workspace_root

    root = settings().workspace_root
    try:
        return Path(tempfile.mkdtemp(dir=prepare_workspace_root(root), prefix="sandbox-exec-"))
    except WorkspaceViolation as exc:
        fail(f"workspace root {exc}", "set FORGE_WORKSPACE_ROOT as it says", code=exc.code)
    except OSError as exc:
        fail(
            f"cannot create a workspace under {root}: {exc}",
            "set FORGE_WORKSPACE_ROOT",
            code=ErrorCode.FILE_UNUSABLE,
        )


def _remove(ws: Path) -> None:
    try:
        shutil.rmtree(ws)
    except OSError as exc:
        err.print(f"[yellow]warning:[/] could not remove the temporary workspace {ws}: {exc}")


def _tail(text: str) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-_TAIL_LINES:])


def _exit_line(result: SandboxResult) -> str:
    """The exit code as a shell reports it (128+N for signal N) and, if a limit killed it, which."""
    import signal  # here, not at the top: the CLI's import block is kept for heavy imports

    killed, code = result.killed_by, result.exit_code
    if killed is None:
        return f"[green]{code}[/]" if code == 0 else f"[red]{code}[/]"
    # The supervisor SIGKILLs at the wall clock; RLIMIT_CPU and RLIMIT_FSIZE raise SIGXCPU, SIGXFSZ.
    by_limit = {"wall_clock": signal.SIGKILL, "cpu": signal.SIGXCPU, "file_size": signal.SIGXFSZ}
    number = killed.removeprefix("signal:")
    what = f"signal {number}" if number != killed else f"{killed} limit"
    if code is None:
        sig = int(number) if number != killed else by_limit.get(killed)
        code = 128 + sig if sig is not None else EXIT_FAILED
    return f"[red]{code}[/] (killed: {escape(what)})"


def _summary(result: SandboxResult, workspace: Path | None) -> None:
    table = Table(show_header=False, title_justify="left", title="sandbox run")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("exit code", _exit_line(result))
    table.add_row("killed by", escape(result.killed_by or "-"))
    table.add_row("duration", f"{result.duration_ms} ms")
    table.add_row("isolation", result.isolation)
    if workspace is not None:
        table.add_row("workspace", escape(str(workspace)))
    for problem in result.violations:
        table.add_row("[red]violation[/]", escape(problem))
    out.print(table)
    for name, text, cut in (
        ("stdout", result.stdout, result.stdout_truncated),
        ("stderr", result.stderr, result.stderr_truncated),
    ):
        if text:
            note = " (truncated at the output cap)" if cut else ""
            out.print(f"[bold]{name}[/] (last {_TAIL_LINES} lines){note}:")
            out.print(escape(_tail(text)), highlight=False)


@sandbox_app.command("exec")
def exec_cmd(
    script: Annotated[Path, typer.Argument(help="Python script to run as a step would.")],
    workspace: Annotated[
        Path | None,
        typer.Option(help="Workspace directory to use and keep (default: a temporary one)."),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option(help="Wall-clock limit in seconds.", min=0.1)
    ] = None,
    memory: Annotated[int | None, typer.Option(help="Address-space limit in MB.", min=1)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Run SCRIPT in the sandbox with the `default` profile's limits; exit 0 only if it did."""
    from activities.sandbox.runner import (
        SandboxLimits,
        SandboxUnavailable,
        WorkspaceViolation,
        run_sandboxed,
    )

    if not script.is_file():
        fail(
            f"{script}: no such file",
            "pass the path of a Python script to run",
            code=ErrorCode.FILE_UNUSABLE,
        )
    policy = _default_policy()
    # As for a step: the timeout sets the wall clock and the CPU limits, the rest is the policy.
    limits = SandboxLimits.for_step(policy, timeout or policy.wall_clock_s)
    if memory is not None:
        limits = limits.model_copy(update={"memory_mb": memory})
    ws = workspace.absolute() if workspace else _temporary_workspace()
    try:
        (ws / "meta").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(script, ws / "meta" / script.name)
        result = run_sandboxed(
            ["python", f"/workspace/meta/{script.name}"],
            workspace=ws,
            limits=limits,
            isolation=policy.isolation,
            runtime_root=settings().step_runtime,
        )
    except (SandboxUnavailable, WorkspaceViolation) as exc:
        fail_error(exc)
    except OSError as exc:
        fail(f"cannot prepare the workspace {ws}: {exc}", code=ErrorCode.FILE_UNUSABLE)
    finally:
        if workspace is None:
            _remove(ws)
    if as_json:
        keys = ("exit_code", "timed_out", "killed_by", "stdout", "stderr", "duration_ms")
        payload = {k: getattr(result, k) for k in keys} | {"violations": result.violations}
        typer.echo(json.dumps(payload))
    else:
        _summary(result, workspace.absolute() if workspace else None)
    if result.exit_code != 0 or result.killed_by is not None:
        raise typer.Exit(EXIT_FAILED)
