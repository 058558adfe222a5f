"""`forge capsule run` when no worker serves the model its capsule needs (issue 34 §5).

The capsule comes from a real model-coded run (`forge run OBJECTIVE` with the Anthropic SDK
pointed at the local Messages server); then the key is unset, so the in-process worker serves
no model, and the capsule runs with a step that needs one. The run must say so before it waits,
and its closing line must not credit sealed code with steps that never ran.
"""

import re
from pathlib import Path

import pytest

from activities.models.script import Script
from tests.support.messages_server import MessagesServer
from tests.workflows.model_env import text
from tests.workflows.test_capsules import SCRIPT
from tests.workflows.test_model_runs import OBJECTIVE
from workers.services import queues

RUN = re.compile(r"run-\d{8}-\d{6}-[0-9a-f]{6}")


def _sales(path: Path) -> Path:
    path.write_text("region,amount\nnorth,10.50\nsouth,4.00\nnorth,2.25\neast,7.00\n")
    return path


@pytest.fixture
def revenue(cli, tmp_path, monkeypatch) -> Path:
    """Capsule `revenue` (steps totals, summary: both model-coded), and new sales to run it on."""
    fallbacks = [
        {"when": {"consumer": c}, "times": 0, "response": text('{"steps": []}')}
        for c in ("resolver", "skill_resolver")
    ]
    sales = _sales(tmp_path / "sales.csv")
    with MessagesServer(Script.from_data({"responses": [*SCRIPT, *fallbacks]})) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-cli")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        ran = cli("run", OBJECTIVE, "--input", f"sales={sales}")
    assert ran.exit_code == 0, ran.output
    source = RUN.search(ran.output).group(0)
    made = cli("capsule", "extract", source, "--name", "revenue")
    assert made.exit_code == 0 and "✓ capsule revenue@1" in made.output, made.output
    # From here on no process serves the anthropic model queue, this one included.
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.setenv("FORGE_INPUT_ROOTS", str(tmp_path))
    monkeypatch.setattr(queues, "UNSERVED_WAIT_S", 2)  # the wait `forge run` shortens to
    return _sales(tmp_path / "new.csv")


def _before_the_run(output: str) -> str:
    """What is printed between the capsule's header line and the live view, unwrapped."""
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("capsule revenue@1"))
    view = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    return " ".join(line.strip() for line in lines[header + 1 : view])


def test_a_capsule_step_needing_an_unserved_model_is_warned_of_up_front(cli, revenue, task_queue):
    ran = cli("capsule", "run", "revenue", "--input", f"sales={revenue}", "--fresh", "totals")
    assert ran.exit_code == 1, ran.output
    note = _before_the_run(ran.output)
    assert note == (
        f"note: no worker serves anthropic models on task queue {task_queue}; model work "
        "fails after 2 s unless one starts (`forge worker` with ANTHROPIC_API_KEY, or "
        "FORGE_MODEL_SCRIPT, set)"
    ), ran.output
    # The run waited as long as the note said, not the 600 s a detached run would.
    assert "took step totals within 2 s" in " ".join(ran.output.split()), ran.output
    # The fresh step never ran and the one after it was skipped: no step ran at all.
    assert "sealed code" not in ran.output, ran.output
    assert ran.output.rstrip().splitlines()[-1] == "tokens: 0 (no step ran: the run failed)"


def test_a_capsule_run_that_stops_at_an_unserved_step_credits_only_the_sealed_ones(
    cli, revenue, task_queue
):
    ran = cli("capsule", "run", "revenue", "--input", f"sales={revenue}", "--fresh", "summary")
    assert ran.exit_code == 1, ran.output
    note = _before_the_run(ran.output)
    assert note.startswith("note: no worker serves anthropic models"), ran.output
    assert "every step ran sealed code" not in ran.output, ran.output
    assert ran.output.rstrip().splitlines()[-1] == "tokens: 0 (1 of 2 steps ran, all sealed code)"


def test_a_sealed_capsule_needs_no_model_and_is_not_warned(cli, revenue, task_queue):
    ran = cli("capsule", "run", "revenue", "--input", f"sales={revenue}")
    assert ran.exit_code == 0, ran.output
    assert "capsule revenue@1 (sealed)" in ran.output
    assert _before_the_run(ran.output) == "", ran.output
    assert ran.output.rstrip().splitlines()[-1] == (
        "tokens: 0 (no planning, no code generation: every step ran sealed code)"
    )


def test_forge_run_of_an_objective_with_no_model_worker_is_warned_of_up_front(
    cli, tmp_path, monkeypatch, task_queue
):
    """`forge run OBJECTIVE` needs the planner's model: said before the run waits for one."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "FORGE_MODEL_SCRIPT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(queues, "UNSERVED_WAIT_S", 2)
    sales = _sales(tmp_path / "sales.csv")
    ran = cli("run", OBJECTIVE, "--input", f"sales={sales}")
    assert ran.exit_code != 0, ran.output
    flat = " ".join(ran.output.split())
    note = (
        f"note: no worker serves anthropic models on task queue {task_queue}; model work "
        "fails after 2 s unless one starts"
    )
    assert note in flat, ran.output
    # Up front: before anything the run itself reports.
    assert flat.index(note) < flat.index("within 2 s"), ran.output
