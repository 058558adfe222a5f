"""`forge doctor`: is this deployment sound? One line per check, ✓ or ✗ with what to do."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from workers.cli.common import masked, out, run_async, settings

__all__ = ["doctor_cmd"]

# Exit 1 when any check fails; 2 stays for usage and settings errors (one line, as every verb).
EXIT_UNSOUND = 1


def doctor_cmd(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the checks as JSON (name, ok, detail, fix).")
    ] = False,
) -> None:
    """Check Temporal, the stores, the sandbox, the step runtime, the models; exit 1 on any ✗.

    With FORGE_TEMPORAL_ADDRESS unset, the embedded dev server is checked, and started first
    if it is not running (as every verb would).
    """
    from compiler.ladder.secrets.mask import mask_text
    from workers.services.doctor import run_checks

    report = run_async(run_checks(settings()))
    if as_json:
        # Check texts never hold a credential; masked all the same, as every printed line is.
        document = report.model_dump(mode="json")
        for check in document["checks"]:
            for field in ("detail", "fix"):
                if check[field] is not None:
                    check[field] = mask_text(check[field])[0]
        typer.echo(json.dumps(document, ensure_ascii=False))
    else:
        for check in report.checks:
            if check.ok:
                out.print(
                    f"[green]✓[/] [bold]{check.name}[/]: {masked(check.detail)}", soft_wrap=True
                )
            else:
                fix = f" [dim]—[/] [yellow]{masked(check.fix)}[/]" if check.fix else ""
                out.print(
                    f"[red]✗[/] [bold]{check.name}[/]: {masked(check.detail)}{fix}", soft_wrap=True
                )
        failed = sum(not check.ok for check in report.checks)
        out.print(
            "[green]all checks passed[/]"
            if not failed
            else f"[red]{failed} of {len(report.checks)} checks failed[/]"
        )
    if not report.ok:
        raise typer.Exit(EXIT_UNSOUND)
