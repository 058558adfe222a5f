"""Temporal names are written once (schemas/names.py); one operations table registers and calls.

The workflow answers to the table's names, workflow code calls activities only through the
operations table (workflows/operations.py), activity decorators read the names' constants, and
ForgePlugin registers a worker's activities from the table, refusing any difference.
"""

import ast
from pathlib import Path

import pytest
from temporalio import workflow

from schemas import names
from schemas.budget import Usage
from schemas.run import StepUsageInput
from workers.plugin import ForgePlugin, activity_definition_name
from workers.process import worker
from workers.settings import Settings
from workflows import operations as ops
from workflows.run import CompiledRunWorkflow

ROOT = Path(__file__).resolve().parents[2]


def test_the_workflow_answers_to_the_tables_names():
    definition = workflow._Definition.must_from_class(CompiledRunWorkflow)
    assert definition.name == names.WORKFLOW
    assert set(definition.signals) == names.SIGNALS
    assert set(definition.updates) == names.UPDATES
    assert set(definition.queries) == names.QUERIES


def test_the_operations_table_holds_every_activity_once():
    table = [op.name for op in ops.OPERATIONS]
    assert len(table) == len(set(table)) == len(names.ACTIVITIES)
    assert set(table) == names.ACTIVITIES


def _calls(package: str, attrs: set[str]) -> list[tuple[Path, ast.Call]]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in attrs
            ):
                found.append((path.relative_to(ROOT), node))
    return found


def test_workflow_code_calls_activities_only_through_the_operations_table():
    calls = _calls("workflows", {"execute_activity", "start_activity"})
    assert calls, "the scan found no activity call: it is out of date"
    assert {str(path) for path, _ in calls} == {"workflows/operations.py"}


def test_no_persisted_name_is_a_literal_at_its_decorator():
    """Activity, workflow, signal, update and query decorators name a schemas/names constant."""
    decorators = {"defn", "signal", "update", "query"}
    for package in ("activities", "workflows"):
        for path, call in _calls(package, decorators):
            for keyword in call.keywords:
                if keyword.arg == "name":
                    assert not isinstance(keyword.value, ast.Constant), (
                        f"{path}:{call.lineno} names {keyword.value.value!r} as a literal: "
                        "use its constant in schemas/names.py"
                    )


def test_a_worker_registers_the_tables_activities_in_its_order(tmp_path):
    settings = Settings(home=tmp_path / "home")
    services = worker.Services.from_settings(settings)
    implementations = worker.activity_functions(settings, services)
    registered = ForgePlugin().configure_worker({"activities": implementations})["activities"]
    assert [activity_definition_name(fn) for fn in registered] == [op.name for op in ops.OPERATIONS]
    # A workflow-only worker (no activities) is not a Forge activity worker: it passes.
    assert ForgePlugin().configure_worker({"activities": []})["activities"] == []


def test_the_plugin_refuses_a_missing_an_unknown_a_doubled_or_a_mistyped_activity(
    monkeypatch, tmp_path
):
    settings = Settings(home=tmp_path / "home")
    services = worker.Services.from_settings(settings)
    implementations = list(worker.activity_functions(settings, services))
    usage = next(fn for fn in implementations if activity_definition_name(fn) == names.STEP_USAGE)
    without = [fn for fn in implementations if fn is not usage]
    with pytest.raises(RuntimeError, match=r"missing: step__usage; not in the table: none"):
        ForgePlugin().configure_worker({"activities": without})
    with pytest.raises(RuntimeError, match="two implementations of activity step__usage"):
        ForgePlugin().configure_worker({"activities": [*implementations, usage]})
    table = ops.OPERATIONS
    monkeypatch.setattr(ops, "OPERATIONS", tuple(op for op in table if op.name != names.STEP_USAGE))
    monkeypatch.setattr("workers.plugin.OPERATIONS", ops.OPERATIONS)
    with pytest.raises(RuntimeError, match=r"missing: none; not in the table: step__usage"):
        ForgePlugin().configure_worker({"activities": implementations})
    mistyped = ops.Operation(names.STEP_USAGE, StepUsageInput, StepUsageInput, None, None)
    assert ops.STEP_USAGE.result is Usage
    monkeypatch.setattr("workers.plugin.OPERATIONS", (*ops.OPERATIONS, mistyped))
    with pytest.raises(RuntimeError, match=r"activity step__usage is implemented by .*usage"):
        ForgePlugin().configure_worker({"activities": implementations})
