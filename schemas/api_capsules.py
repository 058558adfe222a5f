"""The HTTP API's capsule and schedule requests and answers (issue 19, seed 000 §8.5).

Every `forge capsule` and `forge schedule` verb has an endpoint; these are their bodies. A
capsule run's inputs name content as a plain run's do (schemas/api.py `InputRef`); a schedule's
inputs are `s3://` templates only, since the API reads no paths on the server.
"""

from typing import Literal

from pydantic import AwareDatetime, Field

from schemas.api import InputRef, ParamValue, RequestTime
from schemas.base import FrozenModel
from schemas.capsule import CAPSULE_NAME_PATTERN
from schemas.plan import ScalarType
from schemas.schedules import SCHEDULE_NAME_PATTERN

__all__ = [
    "BackfillRequest",
    "CapsuleExtract",
    "CapsuleList",
    "CapsuleRunRequest",
    "CapsuleSummary",
    "Overlap",
    "ScheduleBody",
    "ScheduleCreate",
    "ScheduleList",
    "ScheduleSummary",
]

Overlap = Literal[
    "skip", "buffer-one", "buffer-all", "cancel-other", "terminate-other", "allow-all"
]


class CapsuleExtract(FrozenModel):
    """Extract a completed run of the tenant into a version of capsule `name`."""

    run_id: str = Field(min_length=1)
    name: str = Field(pattern=CAPSULE_NAME_PATTERN)
    structural: list[str] = Field(
        default_factory=list, description="model-coded steps that get fresh code on every run"
    )
    params: dict[str, ScalarType] = Field(
        default_factory=dict, description="values step code reads (forge_bridge.param) -> type"
    )


class CapsuleSummary(FrozenModel):
    """A capsule version in a list (GET …/versions/{version} has the whole of it)."""

    name: str
    version: int
    capsule_hash: str
    created_at: AwareDatetime
    created_by: str
    source_run_id: str
    steps: int
    inputs: list[str]
    params: dict[str, str] = Field(description="scalar parameter -> type")
    created: bool = Field(default=False, description="this request added the version")


class CapsuleList(FrozenModel):
    capsules: list[CapsuleSummary]


class CapsuleRunRequest(FrozenModel):
    """A headless capsule run: new inputs and parameter values; no planning."""

    inputs: dict[str, InputRef] = Field(default_factory=dict)
    params: dict[str, ParamValue] = Field(default_factory=dict)
    fresh: list[str] = Field(
        default_factory=list, description="model-coded steps to write new code for this run"
    )


class ScheduleBody(FrozenModel):
    """A schedule: run `capsule` on a calendar (`cron`) or an interval (`every`)."""

    capsule: str = Field(description="NAME (the newest version at each run) or NAME@V")
    cron: str | None = Field(default=None, description="e.g. `0 3 * * *` or `@daily`")
    every: str | None = Field(default=None, description="e.g. 1h, 15m")
    tz: str = Field(default="UTC", description="an IANA time zone the calendar is read in")
    overlap: Overlap = "skip"
    catchup_window: str | None = Field(default=None, description="e.g. 10m; a missed time older "
                                       "than this is not started late")  # fmt: skip
    pause_on_failure: bool = False
    note: str | None = Field(default=None, max_length=2000)
    inputs: dict[str, str] = Field(
        default_factory=dict,
        description="input -> s3:// template, e.g. s3://bucket/{scheduled:%Y-%m-%d}.csv",
    )
    params: dict[str, ParamValue] = Field(default_factory=dict)


class ScheduleCreate(ScheduleBody):
    """A new schedule of the caller's tenant, named `name`."""

    name: str = Field(pattern=SCHEDULE_NAME_PATTERN)


class ScheduleSummary(FrozenModel):
    name: str
    capsule: str
    paused: bool


class ScheduleList(FrozenModel):
    schedules: list[ScheduleSummary]


class BackfillRequest(FrozenModel):
    """Start every scheduled time in [start, end]."""

    start: RequestTime
    end: RequestTime
    overlap: Overlap = "buffer-all"
    force: bool = Field(default=False, description="run again, once, the times that already ran")
