"""Schedules (issue 17): the store's answer to "may this scheduled time run?" and its records.

A Temporal Schedule starts one small workflow per scheduled time; that workflow claims
(tenant, schedule, scheduled time) in the store before it starts a run. The store is the
guard: one scheduled time has at most one Forge run, however often Temporal starts it
(a repeated backfill, a catch-up after an outage), unless a backfill is forced.
"""

from pydantic import AwareDatetime, Field

from schemas.base import FrozenModel

__all__ = ["Claim", "ClaimCounts", "ClaimRecord"]


class Claim(FrozenModel):
    """The answer to one claim of a scheduled time."""

    claimed: bool = Field(description="the caller's run may go ahead")
    run_id: str = Field(
        description="the run holding the time: the caller's when claimed, the earlier one if not"
    )
    attempt: int = Field(ge=1, description="1 for the time's first run, 2.. for forced re-runs")
    refused: int = Field(ge=0, description="starts of this time refused so far")


class ClaimRecord(FrozenModel):
    """One scheduled time of a schedule as the store holds it: who runs it, how often refused."""

    scheduled_at: AwareDatetime = Field(description="the scheduled time, in UTC")
    run_id: str
    attempt: int = Field(ge=1)
    refused: int = Field(ge=0)
    claimed_at: AwareDatetime = Field(description="when the current attempt claimed the time")


class ClaimCounts(FrozenModel):
    """A schedule's claims in totals."""

    times: int = Field(ge=0, description="distinct scheduled times that ran")
    forced: int = Field(ge=0, description="extra attempts forced on times that had run")
    already_ran: int = Field(ge=0, description="starts refused because their time had run")
