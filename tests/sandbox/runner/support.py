"""Shared helpers of the runner tests: limits, the step environment, running a script."""

import os
import textwrap
from pathlib import Path

from activities.sandbox.runner import (
    SandboxResult,
    run_sandboxed,
)
from activities.sandbox.step_runtime import RUNTIME_DIR
from tests.support.sandbox import sandbox_limits

ROOT = Path(__file__).resolve().parents[3]
LIMITS = sandbox_limits()
STEP_ENV = {
    "PATH": f"{RUNTIME_DIR}/bin:/usr/bin:/bin",
    "HOME": "/workspace/work",
    "LANG": "C.UTF-8",
    "PYTHONPATH": "",
    "PYTHONNOUSERSITE": "1",
}


def run(ws: Path, code: str, **kwargs) -> SandboxResult:
    """Write code to meta/step.py and run it the way steps run."""
    limits = kwargs.pop("limits", LIMITS)
    (ws / "meta").mkdir(parents=True, exist_ok=True)
    (ws / "meta" / "step.py").write_text(textwrap.dedent(code))
    return run_sandboxed(
        ["python", "/workspace/meta/step.py"], workspace=ws, limits=limits, **kwargs
    )


def no_process_with(marker: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return False
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return True
