"""Admitting a run under its tenant's quotas, as it starts (issue 20 §3).

`admitted` is called by workers/runs.start_run (every `forge run`, capsule run and API run)
before the workflow starts; scheduled runs are admitted by schedule__prepare on the worker.
Before counting, the tenant's live admissions are reconciled with Temporal: a run whose
workflow is closed (terminated, or ended without its terminal event) or unknown is marked
ended, so a slot never stays taken by a run that no longer runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from activities.store.admissions import AdmissionStore, QuotaExceeded, open_admissions
from schemas.run import RunInput

__all__ = ["START_GRACE", "QuotaExceeded", "admitted", "precheck", "reconcile"]

START_GRACE = timedelta(minutes=2)


async def reconcile(client: Client, store: AdmissionStore, tenant: str) -> list[str]:
    """End the tenant's admissions whose workflows no longer run; returns the ones ended.

    A run Temporal does not know is ended only once its admission is older than START_GRACE:
    until then its start may still be on its way (admitted, start_workflow not yet answered).
    """
    ended = []
    now = datetime.now(UTC)
    for run_id, admitted_at in await asyncio.to_thread(store.live_since, tenant):
        try:
            described = await client.get_workflow_handle(run_id).describe()
            running = described.status == WorkflowExecutionStatus.RUNNING
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            running = now - admitted_at < START_GRACE  # its start never reached Temporal
        if not running:
            await asyncio.to_thread(store.end, tenant, run_id, now)
            ended.append(run_id)
    return ended


async def precheck(client: Client, store: AdmissionStore, tenant: str) -> None:
    """Refuse, writing nothing, a start the tenant's quotas would refuse now.

    For work done before admission that should not be done for a refused request (the API
    copies S3 inputs into the tenant's store); `admitted` still decides, atomically, and
    reconciles first. So this asks Temporal only when the stored count refuses: a run that
    closed without its terminal event may be what holds the slot or the tokens.

    Raises:
        QuotaExceeded: the tenant is at a quota.
    """
    try:
        await asyncio.to_thread(store.check, tenant, datetime.now(UTC))
    except QuotaExceeded:
        await reconcile(client, store, tenant)
        try:
            await asyncio.to_thread(store.check, tenant, datetime.now(UTC))
        except QuotaExceeded as refused:
            raise refused.counted(tenant) from None


@asynccontextmanager
async def admitted(
    client: Client, database_url: str, run: RunInput, store: AdmissionStore | None = None
) -> AsyncIterator[RunInput]:
    """`run` admitted under its tenant's quotas, its token budget capped at what is left today.

    `store` is the caller's long-lived one (the API's, a worker's); without it one is opened
    for this admission and closed after. The admission is withdrawn if the body raises (the
    workflow did not start).

    Raises:
        QuotaExceeded: the tenant is at a quota; nothing was admitted.
    """
    if store is None:
        with open_admissions(database_url) as opened:
            async with admitted(client, database_url, run, opened) as admitted_run:
                yield admitted_run
        return
    tenant = run.scope.tenant
    limits = await asyncio.to_thread(store.limits, tenant)
    if not limits.any:
        yield run
        return
    await reconcile(client, store, tenant)
    capped = await asyncio.to_thread(store.admit_run, run, datetime.now(UTC))
    try:
        yield capped
    except BaseException:
        await asyncio.to_thread(store.release, tenant, run.run_id)
        raise
