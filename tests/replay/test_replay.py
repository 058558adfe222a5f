"""Every committed history replays against today's workflow code (determinism and versioning)."""

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from tests.replay.record import SCENARIOS
from workers.plugin import ForgePlugin

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_there_are_recorded_histories():
    assert {p.stem for p in HISTORIES} >= {
        "billing_demo",
        "billing_demo_gated",
        "gated_approved",
        "failed_with_skips",
        "cancelled_in_flight",
        "cancelled_before_patch",
        "budget_exhausted_extended",
    }
    # The reshaped engine (issue 14) recorded every scenario again, and once more when the
    # passes became one activity (compile__passes); the older ones stay.
    for tag in ("engine2", "engine3"):
        assert {f"{name}.{tag}" for name in SCENARIOS} <= {p.stem for p in HISTORIES}


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=[], plugins=[ForgePlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
