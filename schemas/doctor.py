"""What `forge doctor` reports: one result per check of a deployment, for people and scripts."""

from __future__ import annotations

from pydantic import Field, model_validator

from schemas.base import FrozenModel

__all__ = ["DoctorCheck", "DoctorReport"]


class DoctorCheck(FrozenModel):
    """One check: what was checked, whether it holds, what was found and how to fix it."""

    name: str = Field(description="Stable id of the check, e.g. `temporal.reachable`")
    ok: bool
    detail: str = Field(description="What was found, in one line")
    fix: str | None = Field(default=None, description="What to do, when the check failed")


class DoctorReport(FrozenModel):
    """Every check, in the order they ran; `ok` only when each one holds."""

    checks: list[DoctorCheck]
    ok: bool = Field(description="Whether every check holds (exit 0); false: exit 1")

    @model_validator(mode="after")
    def _ok_is_every_check(self) -> DoctorReport:
        if self.ok != all(check.ok for check in self.checks):
            raise ValueError("ok must be true exactly when every check is ok")
        return self

    @classmethod
    def of(cls, checks: list[DoctorCheck]) -> DoctorReport:
        """The report of `checks`."""
        return cls(checks=checks, ok=all(check.ok for check in checks))
