"""`forge gates`, `forge approve`, `forge reject`: the approval inbox and its decisions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from schemas.scope_ids import DEFAULT_TENANT
from workers.cli.common import (
    EXIT_UNAVAILABLE,
    TenantOption,
    fail,
    fail_error,
    out,
    print_error,
    run_async,
    scope_of,
    settings,
)

if TYPE_CHECKING:
    from schemas.run import Decision


def _age(since: datetime) -> str:
    seconds = int((datetime.now(UTC) - since).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def gates_cmd(
    run: Annotated[str | None, typer.Option("--run", help="Only this run's gates.")] = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """The approval inbox: pending gates across runs, oldest first, with their evidence."""
    from activities.store.events import open_event_store
    from workers.services.gates import pending_gates

    s = settings()
    scope = scope_of(tenant)
    with open_event_store(s.database_url) as store:
        events = store.list_events(run_id=run, tenant_id=scope.tenant, limit=100_000)
    pending = pending_gates(events)
    if not pending:
        out.print("no pending gates" + (f" in {run}" if run else ""))
        return
    table = Table(title=f"{len(pending)} pending gate(s)", title_justify="left", show_lines=True)
    for col in ("run", "gate", "role", "age", "steps", "prompt", "evidence", "contract"):
        table.add_column(col, overflow="fold")
    for g in pending:
        table.add_row(
            g.run_id,
            g.gate_id,
            g.role,
            _age(g.requested_at) + (f" ({g.reminders} reminders)" if g.reminders else ""),
            ", ".join(g.spec["gated_step_keys"]),
            escape(g.spec["prompt"]),
            "\n".join(g.spec["evidence"]) or "-",
            g.contract_hash[:19] + "…",
        )
    out.print(table)
    out.print(
        "decide with: forge approve RUN GATE --as ID --role ROLE --reason TEXT (or forge reject …)"
    )


def _decide(
    run_id: str,
    gate_id: str,
    decision: Decision,
    actor_id: str,
    name: str | None,
    role: str,
    reason: str,
    contract_hash: str | None,
    tenant: str,
) -> None:
    """The decision, sent as the API sends it (services.gates.decide), by the local admin."""
    from activities.store.events import open_event_store
    from schemas.errors import ForgeError
    from schemas.events import Actor
    from workers.services.access import local
    from workers.services.gates import WorkerUnavailable, decide, pending_gates
    from workers.services.runs import connect

    s = settings()
    scope = scope_of(tenant)
    if not reason.strip():
        fail(
            "--reason must say why (it is recorded with the decision)", code=ErrorCode.USAGE_INVALID
        )
    with open_event_store(s.database_url) as store:
        events = store.list_events(run_id=run_id, tenant_id=scope.tenant, limit=100_000)
    if contract_hash is None:
        match = [g for g in pending_gates(events) if g.gate_id == gate_id]
        if not match:
            fail(
                f"no pending gate {gate_id!r} in run {run_id!r} of tenant {scope.tenant!r}; "
                "nothing changed",
                f"see the inbox with `forge gates --run {run_id}`",
                code=ErrorCode.DECISION_REFUSED,
            )
        contract_hash = match[0].contract_hash
    actor = Actor(id=actor_id, name=name or actor_id, role=role, kind="human")

    async def go() -> None:
        client = await connect(s)
        try:
            recorded = await decide(
                client, local(scope.tenant, actor), events, run_id, gate_id, decision, reason,
                contract_hash, role=role,
            )  # fmt: skip
        except WorkerUnavailable as exc:
            print_error(exc)  # one line; its own exit code: the same command may succeed later
            raise typer.Exit(EXIT_UNAVAILABLE) from None
        except ForgeError as exc:
            fail_error(exc)  # its code (DECISION_REFUSED, FORBIDDEN, NOT_FOUND …), one line
        out.print(
            f"[green]✓[/] {gate_id}: {recorded.decision} by {recorded.actor.id} "
            f"({recorded.actor.role}) at {recorded.decided_at:%Y-%m-%d %H:%M:%S}"
        )

    run_async(go())


_As = Annotated[str, typer.Option("--as", help="Your id (recorded as the actor).")]
_Role = Annotated[str, typer.Option("--role", help="The role you decide in.")]
_Reason = Annotated[str, typer.Option("--reason", help="Why; recorded with the decision.")]
_Name = Annotated[str | None, typer.Option("--name", help="Your display name.")]
_Hash = Annotated[
    str | None,
    typer.Option(
        "--contract-hash",
        help="The contract hash you reviewed (default: the gate's, from the log).",
    ),
]


def approve_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    gate_id: Annotated[str, typer.Argument(metavar="GATE")],
    actor_id: _As,
    role: _Role,
    reason: _Reason,
    name: _Name = None,
    contract_hash: _Hash = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Approve a pending gate: its steps run."""
    _decide(run_id, gate_id, "approve", actor_id, name, role, reason, contract_hash, tenant)


def reject_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    gate_id: Annotated[str, typer.Argument(metavar="GATE")],
    actor_id: _As,
    role: _Role,
    reason: _Reason,
    name: _Name = None,
    contract_hash: _Hash = None,
    request_changes: Annotated[
        bool, typer.Option("--request-changes", help="Reject asking for changes.")
    ] = False,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Reject a pending gate: its steps fail and their dependents are skipped."""
    verdict: Decision = "request_changes" if request_changes else "reject"
    _decide(run_id, gate_id, verdict, actor_id, name, role, reason, contract_hash, tenant)
