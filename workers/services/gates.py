"""Gates for every front end: the inbox from the log, and a decision sent to the run.

The CLI (`forge gates|approve|reject`) and the HTTP API (`/v1/gates`) share this code: the
inbox is read from the tenant's event log; a decision names the contract hash the person saw
and is checked twice, here (the run is the tenant's, the principal may decide in the gate's
role) and by the run itself (the gate is open, the hash is the gated step's), so a stale or
late decision changes nothing.
"""

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import (
    Client,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from schemas import names
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.event_catalogue import (
    GATE_DECIDED,
    GATE_ESCALATED,
    GATE_REMINDER,
    GATE_REQUESTED,
    RUN_CANCELLED,
    RUN_COMPLETED,
    RUN_FAILED,
)
from schemas.events import Event
from schemas.run import DecideGateInput, Decision, GateDecision
from schemas.spelling import Named, Spelled
from workers.services.access import Principal, authorize
from workflows.run import CompiledRunWorkflow

__all__ = [
    "DECISION_WAIT",
    "PendingGate",
    "WorkerUnavailable",
    "decide",
    "gate_role",
    "pending_gates",
]

_CLOSING = (RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED)
# How long a decision waits for a worker to take it. The run refuses it after that (its
# `not_after`), so "no worker took it" is final: nothing is decided behind the sender's back.
DECISION_WAIT = timedelta(seconds=5)
# Beyond DECISION_WAIT, so that a run which takes the decision just in time is heard taking it.
_HEARING = timedelta(seconds=2)


class WorkerUnavailable(ForgeError, RuntimeError):
    """No worker took the request in time; nothing changed. `retry_after_s`: when to resend."""

    code = ErrorCode.WORKER_UNAVAILABLE

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass
class PendingGate:
    run_id: str
    gate_id: str
    role: str
    contract_hash: str
    requested_at: datetime
    spec: dict[str, Any]
    reminders: int


def pending_gates(events: list[Event]) -> list[PendingGate]:
    """Gates requested and not yet decided, in runs that have not ended (from the log)."""
    closed = {e.run_id for e in events if e.type in _CLOSING}
    found: dict[tuple[str, str], PendingGate] = {}
    for e in events:
        if e.run_id is None or e.run_id in closed:
            continue
        key = (e.run_id, str(e.payload.get("gate_id")))
        if e.type == GATE_REQUESTED:
            spec = e.payload["gate"]
            found[key] = PendingGate(
                e.run_id, key[1], spec["approver_role"], spec["contract_hash"], e.timestamp, spec, 0
            )
        elif e.type == GATE_DECIDED:
            found.pop(key, None)
        elif e.type == GATE_ESCALATED and key in found:
            found[key].role = str(e.payload["to_role"])
        elif e.type == GATE_REMINDER and key in found:
            found[key].reminders += 1
    return sorted(found.values(), key=lambda g: g.requested_at)


def gate_role(events: list[Event], gate_id: str) -> str | None:
    """The role the gate waits for (or waited for) in a run's log, None if never requested."""
    role = None
    for e in events:
        if e.payload.get("gate_id") != gate_id:
            continue
        if e.type == GATE_REQUESTED:
            role = str(e.payload["gate"]["approver_role"])
        elif e.type == GATE_ESCALATED:
            role = str(e.payload["to_role"])
    return role


async def decide(
    client: Client,
    principal: Principal,
    run_events: list[Event],
    run_id: str,
    gate_id: str,
    decision: Decision,
    reason: str,
    contract_hash: str,
    *,
    role: str | None = None,
    wait: timedelta = DECISION_WAIT,
) -> GateDecision:
    """Send a decision to the run; the run records it, or refuses it and nothing changes.

    `run_events` is the run's log as the principal's tenant holds it (empty: not its run).
    `role` is the gate role the actor decides in (the CLI's --role); by default, the one the
    gate waits for, if the principal may decide in it.

    Raises:
        ForgeError: FORBIDDEN, the principal may not decide gates, or not in the gate's role;
            NOT_FOUND, not the tenant's run, or no such gate in it; DECISION_REFUSED, the gate
            is closed, the run ended, or the hash is not the gate's.
        WorkerUnavailable: no worker took the decision within `wait`; it was not recorded and
            never will be (the run refuses it once `wait` has passed), so it can be sent again.
    """
    authorize(principal, "gates.decide")
    waiting_for = gate_role(run_events, gate_id)
    if waiting_for is None:
        raise ForgeError(
            f"run {run_id!r} has no gate {gate_id!r}",
            code=ErrorCode.NOT_FOUND,
            hint="see the open gates with `forge gates` (GET /v1/gates)",
        )
    acting_as = role or waiting_for
    if not principal.may_decide_as(acting_as):
        why = (
            f"this key may not decide gates for role {acting_as!r} (its gate roles: "
            f"{', '.join(sorted(principal.gate_roles or ())) or 'none'})"
        )
        raise ForgeError(why, code=ErrorCode.FORBIDDEN).spell(
            Spelled(why.replace("{", "{{").replace("}", "}}")),
            Spelled("use a key created with {0}", (Named("gate_role", acting_as),)),
        )
    inp = DecideGateInput(
        gate_id=gate_id,
        decision=decision,
        reason=reason,
        contract_hash=contract_hash,
        actor=principal.actor.model_copy(update={"role": acting_as}),
        not_after=datetime.now(UTC) + wait,
    )
    handle = client.get_workflow_handle_for(CompiledRunWorkflow.run, run_id)
    unavailable = WorkerUnavailable(
        f"no worker took the decision on gate {gate_id} of run {run_id} within "
        f"{wait.total_seconds():g} s; nothing was decided",
        retry_after_s=max(1, int(wait.total_seconds())),
    )
    try:
        async with asyncio.timeout((wait + _HEARING).total_seconds()):
            update = await handle.start_update(
                names.DECIDE_GATE,
                inp,
                wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                result_type=GateDecision,
            )
        # Accepted: recorded, whatever comes next. A refusal is known now and raised here.
        decided: GateDecision = await update.result()
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        # The SDK answers the timeout's cancellation with its own error, not CancelledError.
        raise unavailable from None
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError) and cause.type == ErrorCode.WORKER_UNAVAILABLE:
            raise unavailable from None  # it reached the run after `wait`: refused there
        why = cause.message if isinstance(cause, ApplicationError) else str(cause)
        raise ForgeError(
            f"decision refused: {why}; nothing changed", code=ErrorCode.DECISION_REFUSED
        ) from None
    except RPCError as exc:
        ended = next((e.type for e in run_events if e.type in _CLOSING), None)
        state = f"the run has ended ({ended.split('.')[1]})" if ended else exc.message
        raise ForgeError(
            f"decision refused: {state}; gate {gate_id} can no longer be decided; nothing changed",
            code=ErrorCode.DECISION_REFUSED,
        ) from None
    return decided
