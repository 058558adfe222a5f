"""What `forge doctor` reports: one result per check of a deployment, for people and scripts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, computed_field

__all__ = ["DoctorCheck", "DoctorReport"]


class DoctorCheck(BaseModel):
    """One check: what was checked, whether it holds, what was found and how to fix it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Stable id of the check, e.g. `temporal.reachable`")
    ok: bool
    detail: str = Field(description="What was found, in one line")
    fix: str | None = Field(default=None, description="What to do, when the check failed")


class DoctorReport(BaseModel):
    """Every check, in the order they ran; `ok` only when each one holds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checks: list[DoctorCheck]

    @computed_field  # type: ignore[prop-decorator]  # in --json output too
    @property
    def ok(self) -> bool:
        """Whether every check holds."""
        return all(check.ok for check in self.checks)
