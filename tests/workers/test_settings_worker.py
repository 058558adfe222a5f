"""FORGE_WORKER_*: a worker's concurrency read from the environment, and what it builds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from temporalio.worker import (
    FixedSizeSlotSupplier,
    PollerBehaviorSimpleMaximum,
    ResourceBasedSlotSupplier,
)

from workers.process.concurrency import TARGET_MEMORY, worker_options
from workers.settings import ENV_VARS, Settings, SettingsError
from workers.settings_worker import ACTIVITY_SLOTS_PER_CPU, host_cpus


def test_defaults_follow_the_hosts_cores(tmp_path: Path) -> None:
    settings = Settings.from_env({"FORGE_HOME": str(tmp_path)})
    assert host_cpus() == len(os.sched_getaffinity(0))
    assert settings.worker_activity_slots == ACTIVITY_SLOTS_PER_CPU * host_cpus()
    assert settings.worker_workflow_slots == 100
    assert settings.worker_pollers == 5
    assert settings.worker_target_cpu is None


def test_each_variable_is_read(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "FORGE_HOME": str(tmp_path),
            "FORGE_WORKER_ACTIVITY_SLOTS": " 3 ",
            "FORGE_WORKER_WORKFLOW_SLOTS": "40",
            "FORGE_WORKER_POLLERS": "2",
            "FORGE_WORKER_TARGET_CPU": "0.85",
        }
    )
    assert settings.worker_activity_slots == 3
    assert settings.worker_workflow_slots == 40
    assert settings.worker_pollers == 2
    assert settings.worker_target_cpu == 0.85
    assert {ENV_VARS[f] for f in ("worker_activity_slots", "worker_target_cpu")} == {
        "FORGE_WORKER_ACTIVITY_SLOTS",
        "FORGE_WORKER_TARGET_CPU",
    }


@pytest.mark.parametrize(
    ("variable", "raw", "expected"),
    [
        ("FORGE_WORKER_ACTIVITY_SLOTS", "0", "activities at once per task queue from 1 to 1000"),
        ("FORGE_WORKER_ACTIVITY_SLOTS", "eight", "e.g. 8 (unset: 4 per CPU core)"),
        ("FORGE_WORKER_ACTIVITY_SLOTS", "1001", "from 1 to 1000"),
        ("FORGE_WORKER_WORKFLOW_SLOTS", "1", "workflow tasks at once from 2 to 1000"),
        ("FORGE_WORKER_POLLERS", "1", "concurrent polls per task type from 2 to 1000"),
        ("FORGE_WORKER_POLLERS", "2.5", "e.g. 5 (unset: 5)"),
        ("FORGE_WORKER_TARGET_CPU", "0", "above 0 and at most 1, e.g. 0.9"),
        ("FORGE_WORKER_TARGET_CPU", "90%", "above 0 and at most 1"),
        ("FORGE_WORKER_TARGET_CPU", "1.5", "(unset: fixed slots)"),
    ],
)
def test_a_bad_value_names_the_variable_and_what_to_set(
    tmp_path: Path, variable: str, raw: str, expected: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"FORGE_HOME": str(tmp_path), variable: raw})
    message = str(caught.value)
    assert message.startswith(f"{variable}={raw!r} is invalid: expected ")
    assert expected in message
    assert "\n" not in message
    assert caught.value.variable == variable


def test_fixed_slots_and_pollers_reach_the_worker_options(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path, worker_activity_slots=3, worker_workflow_slots=7, worker_pollers=4
    )
    options = worker_options(settings)
    tuner = options["tuner"]
    activities = tuner._get_activity_task_slot_supplier()
    workflows = tuner._get_workflow_task_slot_supplier()
    assert isinstance(activities, FixedSizeSlotSupplier) and activities.num_slots == 3
    assert isinstance(workflows, FixedSizeSlotSupplier) and workflows.num_slots == 7
    assert options["activity_task_poller_behavior"] == PollerBehaviorSimpleMaximum(maximum=4)
    assert options["workflow_task_poller_behavior"] == PollerBehaviorSimpleMaximum(maximum=4)


def test_a_target_cpu_holds_activity_slots_back_up_to_the_slots(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, worker_activity_slots=6, worker_target_cpu=0.9)
    tuner = worker_options(settings)["tuner"]
    activities = tuner._get_activity_task_slot_supplier()
    assert isinstance(activities, ResourceBasedSlotSupplier)
    assert (activities.slot_config.minimum_slots, activities.slot_config.maximum_slots) == (1, 6)
    assert activities.tuner_config.target_cpu_usage == 0.9
    assert activities.tuner_config.target_memory_usage == TARGET_MEMORY
    # Workflow tasks stay fixed: a held-back workflow slot would stall every run's progress.
    assert isinstance(tuner._get_workflow_task_slot_supplier(), FixedSizeSlotSupplier)


def test_the_configuration_page_has_a_row_for_every_worker_variable() -> None:
    from workers.settings_worker import WORKER_ENV_VARS

    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    section = page.split("## Worker concurrency", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    for variable in WORKER_ENV_VARS.values():
        assert any(r.startswith(f"| `{variable}` |") for r in rows), variable
