"""schedule__prepare: one scheduled time of a schedule, claimed once, its inputs resolved.

The claim comes first (activities/store/schedule_claims.py): a time the schedule already ran, or
tried to run, answers with the run that holds it and nothing else happens (no upload, no run).
A claimed time then has its input templates rendered for that time in the schedule's zone and
checked exactly as `forge capsule run` checks inputs; an input missing at that time fails this
scheduled run with the parameter named (fail-closed), and the time stays claimed: re-running it
is a deliberate act, never an accident.

Before admitting, the tenant's live admissions are reconciled with Temporal (as every CLI and
API start does): a run terminated by hand wrote no terminal event, and would otherwise hold
its slot until the next start from the CLI or the API.
"""

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from temporalio import activity
from temporalio.client import Client

from activities.capsules.prepare_run import InputPolicy, prepare_capsule_run
from activities.errors import to_application_error
from activities.schedules.input_templates import render
from activities.store.admissions import AdmissionStore
from activities.store.artifacts import ArtifactStore
from activities.store.capsules import CapsuleStore
from activities.store.schedule_claims import ScheduleClaims
from schemas import names
from schemas.errors import ForgeError
from schemas.schedules import SchedulePrepareInput, SchedulePrepareResult


class ScheduleActivities:
    """The stores a scheduled time needs, and where each tenant's inputs may be read."""

    def __init__(
        self,
        artifacts: ArtifactStore,
        capsules: CapsuleStore,
        claims: ScheduleClaims,
        policies: Callable[[str], InputPolicy],
        admissions: AdmissionStore,
        reconcile: Callable[[Client, AdmissionStore, str], Awaitable[object]] | None = None,
    ) -> None:
        self._artifacts = artifacts
        self._capsules = capsules
        self._claims = claims
        self._policies = policies  # a tenant's input locations, read when a time comes
        self._admissions = admissions
        self._reconcile = reconcile  # workers/quotas.reconcile: the worker's client is at hand

    @activity.defn(name=names.SCHEDULE_PREPARE)
    async def prepare(self, inp: SchedulePrepareInput) -> SchedulePrepareResult:
        """The capsule run of the scheduled time, or the run that already holds it."""
        try:
            if self._reconcile is not None:
                await self._reconcile(activity.client(), self._admissions, inp.scope.tenant)
            return await asyncio.to_thread(self._prepare, inp)
        except ForgeError as exc:
            raise to_application_error(exc) from None

    def _prepare(self, inp: SchedulePrepareInput) -> SchedulePrepareResult:
        spec = inp.run
        claim = self._claims.claim(inp.scope, spec.schedule, inp.scheduled_at, inp.run_id)
        if not claim.claimed:
            return SchedulePrepareResult(already_ran=claim.run_id, attempt=claim.attempt)
        inputs = {
            name: render(name, template, inp.scheduled_at, spec.tz)
            for name, template in sorted(spec.inputs.items())
        }
        policy = self._policies(inp.scope.tenant)  # the run's tenant's, never the worker's
        prepared = prepare_capsule_run(
            self._capsules,
            self._artifacts,
            policy,
            inp.scope,
            spec.capsule,
            run_id=claim.run_id,
            inputs=inputs,
            params=spec.params,
        )
        # Under its tenant's quotas: QuotaExceeded fails this time, which stays claimed (as a
        # missing input does); admitted, its tokens are held to what the day has left.
        run = self._admissions.admit_run(prepared.run, datetime.now(UTC))
        return SchedulePrepareResult(run=run, attempt=claim.attempt)
