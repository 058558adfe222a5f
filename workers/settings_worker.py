"""A worker's concurrency: the FORGE_WORKER_* variables and their defaults from the host's cores.

workers/settings.py merges these into Settings; workers/process/concurrency.py turns them into
the Temporal Worker's slots, tuner and pollers. Sizing from measured figures: docs/scaling.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from workers.settings_env import SettingsError

__all__ = [
    "ACTIVITY_SLOTS_PER_CPU",
    "MAX_SLOTS",
    "WORKER_ENV_VARS",
    "WORKER_PARSERS",
    "default_activity_slots",
    "host_cpus",
]

# Settings field -> FORGE_* variable (merged into workers.settings.ENV_VARS).
WORKER_ENV_VARS: Mapping[str, str] = {
    "worker_activity_slots": "FORGE_WORKER_ACTIVITY_SLOTS",
    "worker_workflow_slots": "FORGE_WORKER_WORKFLOW_SLOTS",
    "worker_pollers": "FORGE_WORKER_POLLERS",
    "worker_target_cpu": "FORGE_WORKER_TARGET_CPU",
}

# A step is mostly a sandboxed subprocess plus waits on the stores: 4 per core kept both cores
# of the measured 2-core host busy (docs/scaling.md).
ACTIVITY_SLOTS_PER_CPU = 4
MAX_SLOTS = 1000


def host_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, which a container's cpuset limits)."""
    return len(os.sched_getaffinity(0)) or 1


def default_activity_slots() -> int:
    """Activity slots per task queue when FORGE_WORKER_ACTIVITY_SLOTS is unset."""
    return ACTIVITY_SLOTS_PER_CPU * host_cpus()


def _whole(variable: str, raw: str, low: int, expected: str) -> int:
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        value = low - 1
    if not low <= value <= MAX_SLOTS:
        raise SettingsError(variable, raw, expected)
    return value


def _parse_activity_slots(variable: str, raw: str) -> int:
    return _whole(
        variable,
        raw,
        1,
        f"a whole number of activities at once per task queue from 1 to {MAX_SLOTS}, e.g. 8 "
        f"(unset: {ACTIVITY_SLOTS_PER_CPU} per CPU core)",
    )


def _parse_workflow_slots(variable: str, raw: str) -> int:
    # Temporal needs two when workflows are cached: one for a sticky task, one for a new one.
    return _whole(
        variable,
        raw,
        2,
        f"a whole number of workflow tasks at once from 2 to {MAX_SLOTS}, e.g. 100 (unset: 100)",
    )


def _parse_pollers(variable: str, raw: str) -> int:
    return _whole(
        variable,
        raw,
        2,
        f"a whole number of concurrent polls per task type from 2 to {MAX_SLOTS}, e.g. 5 "
        "(unset: 5)",
    )


def _parse_target_cpu(variable: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        value = 0.0
    if not 0 < value <= 1:
        raise SettingsError(
            variable,
            raw,
            "the host CPU use above which no new activity slot is issued, above 0 and at most 1, "
            "e.g. 0.9 (unset: fixed slots)",
        )
    return value


WORKER_PARSERS: Mapping[str, Callable[[str, str], Any]] = {
    "worker_activity_slots": _parse_activity_slots,
    "worker_workflow_slots": _parse_workflow_slots,
    "worker_pollers": _parse_pollers,
    "worker_target_cpu": _parse_target_cpu,
}
