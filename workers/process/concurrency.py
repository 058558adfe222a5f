"""A Temporal Worker's slots, tuner and pollers, from the worker settings (docs/scaling.md)."""

from datetime import timedelta
from typing import Any

from temporalio.worker import (
    FixedSizeSlotSupplier,
    PollerBehaviorSimpleMaximum,
    ResourceBasedSlotConfig,
    ResourceBasedSlotSupplier,
    ResourceBasedTunerConfig,
    WorkerTuner,
)

from workers.settings import Settings

# The resource-based tuner also holds back slots above this share of the host's memory (the
# SDK's advice: no higher than 0.8, since what a task will use cannot be known in advance).
TARGET_MEMORY = 0.8
# A sandboxed step's CPU shows a few hundred milliseconds after it starts: wait that long
# between two slots beyond the first, so the tuner sees what the last one costs.
RAMP = timedelta(milliseconds=200)


def tuner(settings: Settings) -> WorkerTuner:
    """Fixed workflow slots; activity slots fixed, or held back above the target CPU."""
    workflows = FixedSizeSlotSupplier(settings.worker_workflow_slots)
    activities: FixedSizeSlotSupplier | ResourceBasedSlotSupplier
    if settings.worker_target_cpu is None:
        activities = FixedSizeSlotSupplier(settings.worker_activity_slots)
    else:
        activities = ResourceBasedSlotSupplier(
            ResourceBasedSlotConfig(
                minimum_slots=1, maximum_slots=settings.worker_activity_slots, ramp_throttle=RAMP
            ),
            ResourceBasedTunerConfig(
                target_memory_usage=TARGET_MEMORY, target_cpu_usage=settings.worker_target_cpu
            ),
        )
    return WorkerTuner.create_composite(
        workflow_supplier=workflows,
        activity_supplier=activities,
        # Forge runs no local activities nor Nexus operations; the SDK's default size.
        local_activity_supplier=FixedSizeSlotSupplier(100),
        nexus_supplier=FixedSizeSlotSupplier(100),
    )


def worker_options(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of temporalio.worker.Worker that set its concurrency."""
    pollers = PollerBehaviorSimpleMaximum(maximum=settings.worker_pollers)
    return {
        "tuner": tuner(settings),
        "workflow_task_poller_behavior": pollers,
        "activity_task_poller_behavior": pollers,
    }
