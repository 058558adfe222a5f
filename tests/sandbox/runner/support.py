"""Shared helpers of the runner tests: limits, the step environment, running a script."""

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from activities.sandbox.runner import (
    SandboxLimits,
    SandboxResult,
    run_sandboxed,
)
from activities.sandbox.step_runtime import RUNTIME_DIR

ROOT = Path(__file__).resolve().parents[3]
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (make system-deps)"
)
LIMITS = SandboxLimits(
    cpu_seconds=30,
    memory_mb=1024,
    file_size_mb=16,
    max_processes=32,
    max_open_files=128,
    wall_clock_s=60,
    output_cap_bytes=65536,
)
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
