"""What tests that start real sandboxes share: the bubblewrap marker and test limits."""

import shutil
from typing import Any

import pytest

from activities.sandbox.runner import SandboxLimits

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (make system-deps)"
)


def sandbox_limits(**overrides: Any) -> SandboxLimits:
    """Generous limits for a test's sandbox; each test overrides what it is about."""
    base: dict[str, Any] = dict(
        cpu_seconds=30,
        memory_mb=1024,
        file_size_mb=16,
        max_processes=32,
        max_open_files=128,
        wall_clock_s=60,
        output_cap_bytes=65536,
    )
    return SandboxLimits(**(base | overrides))
