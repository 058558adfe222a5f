"""Fail-closed start: a worker that cannot create a sandbox on its step runtime does not start.

The checks are the doctor's (workers/services/doctor.py host_checks): the sealed step runtime
at FORGE_STEP_RUNTIME is built and current, and bubblewrap runs the runtime's python in a real
sandbox as this worker's user. Any failure is one ForgeError naming what is missing and what to
do; the worker never falls back to running step code without the sandbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from activities.sandbox.workspace import prepare_workspace_root
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from workers.services.doctor import host_checks

if TYPE_CHECKING:
    from workers.settings import Settings

__all__ = ["DOCS", "require_sandbox"]

DOCS = "docs/security.md#sandboxes-in-containers"


def require_sandbox(settings: Settings) -> None:
    """Return when this host can run a step in a sandbox, as `forge doctor` checks it.

    Raises:
        WorkspaceViolation: The workspace root cannot be used (checked first, with its own
            code, as the worker would find it).
        ForgeError: SANDBOX_UNAVAILABLE, naming the failed check (step runtime or sandbox),
            what it found and what to do.
    """
    prepare_workspace_root(settings.workspace_root)
    for check in host_checks(settings):
        if not check.ok:
            raise ForgeError(
                f"the worker refuses to start: it runs step code only in a sandbox, and the "
                f"{check.name} check failed: {check.detail}",
                code=ErrorCode.SANDBOX_UNAVAILABLE,
                hint=f"{check.fix} (see {DOCS}); `forge doctor` runs the same checks",
            )
