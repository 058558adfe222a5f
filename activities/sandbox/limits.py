"""The resource limits of one sandboxed run: from the profile's policy and the step's timeout."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.profile import SandboxPolicy

__all__ = ["CPU_HARD_MIN_MARGIN_S", "CPU_SOFT_MARGIN_S", "MIB", "SandboxLimits", "rlimits"]

# util-linux's prlimit(1), under /usr (bound read-only into every sandbox).
PRLIMIT = "/usr/bin/prlimit"
MIB = 1024 * 1024
# RLIMIT_CPU from a step's timeout: soft = timeout + this margin, hard = max(4 x timeout,
# timeout + CPU_HARD_MIN_MARGIN_S).
CPU_SOFT_MARGIN_S = 5
CPU_HARD_MIN_MARGIN_S = 60


class SandboxLimits(BaseModel):
    """Resource limits applied to every process of one sandboxed run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_seconds: int = Field(gt=0, description="RLIMIT_CPU soft limit: SIGXCPU")
    cpu_hard_seconds: int | None = Field(
        default=None,
        gt=0,
        description="RLIMIT_CPU hard limit (SIGKILL); derived from wall_clock_s when unset",
    )
    memory_mb: int = Field(gt=0, description="address space (RLIMIT_AS) per process")
    file_size_mb: int = Field(gt=0)
    max_processes: int = Field(gt=0)
    max_open_files: int = Field(gt=0)
    wall_clock_s: float = Field(gt=0)
    output_cap_bytes: int = Field(gt=0, description="kept per stream; the rest is discarded")

    @model_validator(mode="after")
    def _derive_cpu_hard(self) -> SandboxLimits:
        if self.cpu_hard_seconds is None:
            wall = math.ceil(self.wall_clock_s)
            hard = max(4 * wall, wall + CPU_HARD_MIN_MARGIN_S, self.cpu_seconds + 1)
            object.__setattr__(self, "cpu_hard_seconds", hard)
        elif self.cpu_hard_seconds < self.cpu_seconds:
            raise ValueError(
                f"cpu_hard_seconds ({self.cpu_hard_seconds}) is below cpu_seconds "
                f"({self.cpu_seconds}): the hard CPU limit must be at least the soft one"
            )
        return self

    @classmethod
    def from_policy(cls, policy: SandboxPolicy) -> SandboxLimits:
        """The limits of a profile's sandbox section, for a step as long as its wall clock."""
        return cls.for_step(policy, policy.wall_clock_s)

    @classmethod
    def for_step(cls, policy: SandboxPolicy, timeout_s: float) -> SandboxLimits:
        """The limits for one step: time from the step's own timeout, the rest from the policy.

        The wall clock is the step's timeout; the CPU soft limit is the timeout plus a margin
        (never above the profile's cpu_seconds), the hard limit max(4 x timeout, timeout +
        60 s), so a step that catches SIGXCPU still dies long before a fixed ceiling would.
        """
        wall = math.ceil(timeout_s)
        return cls(
            **policy.model_dump(exclude={"isolation", "cpu_seconds", "wall_clock_s"}),
            cpu_seconds=min(policy.cpu_seconds, wall + CPU_SOFT_MARGIN_S),
            wall_clock_s=timeout_s,
        )


def rlimits(limits: SandboxLimits, *, nproc: bool = True) -> list[list[Any]]:
    """(name, soft, hard) of every rlimit the launcher sets, all explicit, none inherited.

    Without `nproc`, RLIMIT_NPROC is left to the sandbox (bwrap mode: see nproc_argv).
    """
    found = [
        # SIGXCPU at the soft limit (classified "cpu"), SIGKILL at the hard one if ignored.
        ["RLIMIT_CPU", limits.cpu_seconds, limits.cpu_hard_seconds],
        ["RLIMIT_AS", limits.memory_mb * MIB, limits.memory_mb * MIB],
        ["RLIMIT_FSIZE", limits.file_size_mb * MIB, limits.file_size_mb * MIB],
        # Set by the launcher (isolation "none"), it counts every process of the worker's uid.
        ["RLIMIT_NPROC", limits.max_processes, limits.max_processes],
        ["RLIMIT_NOFILE", limits.max_open_files, limits.max_open_files],
        ["RLIMIT_CORE", 0, 0],
    ]
    return found if nproc else [r for r in found if r[0] != "RLIMIT_NPROC"]


def nproc_argv(limits: SandboxLimits) -> list[str]:
    """The prefix that sets RLIMIT_NPROC inside the sandbox's own user namespace.

    Since Linux 5.14 the kernel counts processes per user namespace and uid, and checks a fork
    against the forking task's RLIMIT_NPROC for the count in its own namespace, then against
    the limit the namespace's creator had for the count in the parent namespace. Set here,
    after bwrap created the namespace (the launcher leaves the worker's own limit in place for
    that), the limit counts only this sandbox's processes (bwrap's pid 1 and the step's): not
    the worker's threads, nor concurrent steps of the same uid (docs/security.md).
    """
    n = str(limits.max_processes)
    return [PRLIMIT, f"--nproc={n}:{n}", "--"]
